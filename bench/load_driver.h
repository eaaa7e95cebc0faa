// The closed-loop engine of the load generator: one Worker per connection
// (each on its own thread) keeps `queue_depth` ops in flight; an op is a chain
// of NFSv3 calls (one READ, or LOOKUP+GETATTR+READ, ...) with at most one call
// outstanding at a time, so queue depth = outstanding requests per connection.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "latency_histogram.h"
#include "libnfs_raw.h"
#include "rpc_connection.h"

namespace geofs::bench {

using SteadyClock = std::chrono::steady_clock;

inline constexpr int kNfs3ProcCount = 22;

// "READ" for NFS3_READ, ...
const char* Nfs3ProcName(int proc);

// What a run (or one connection of it) measured.
struct RunStats {
  uint64_t ops = 0;     // ops completed inside the measurement window
  uint64_t bytes = 0;   // file bytes those ops read
  uint64_t items = 0;   // workload units those ops handled (files, entries, ...)
  uint64_t errors = 0;  // ops that failed, anywhere in the run
  std::string first_error;
  LatencyHistogram op_latency;
  // Latency of each call completed inside the window, by NFSv3 procedure.
  std::array<LatencyHistogram, kNfs3ProcCount> call_latency;

  void Merge(const RunStats& other);
};

// When ops count and when to stop; shared by all workers. Thread-safe.
class RunControl {
 public:
  // Ops completing in [measure_start, deadline) are measured; none start at or
  // after `deadline`. With `op_limit`, at most that many ops start in total.
  RunControl(SteadyClock::time_point measure_start, SteadyClock::time_point deadline,
             std::optional<uint64_t> op_limit);

  // Claims the right to start one more op; false once the budget is spent.
  bool TakeOp();
  bool Measured(SteadyClock::time_point t) const { return t >= measure_start_ && t < deadline_; }
  SteadyClock::time_point deadline() const { return deadline_; }

 private:
  const SteadyClock::time_point measure_start_;
  const SteadyClock::time_point deadline_;
  const bool limited_;
  std::atomic<int64_t> ops_left_;
};

class Worker;
class ConnectionLoad;

// One op in flight: a chain of calls. Ops are reused; the fields below are
// scratch space that a ConnectionLoad resets in Start().
class Op {
 public:
  // Each issues one call; its reply arrives in ConnectionLoad::OnReply (or
  // the op fails). REQUIRES: no other call of this op is outstanding.
  void Lookup(const FileHandle& dir, const std::string& name);
  void GetAttr(const FileHandle& fh);
  void Read(const FileHandle& fh, uint64_t offset, uint32_t count);
  // UNCHECKED create with the given mode.
  void Create(const FileHandle& dir, const std::string& name, uint32_t mode);
  // Sets mode and a client-given mtime, unguarded.
  void SetAttr(const FileHandle& fh, uint32_t mode, uint32_t mtime_seconds);
  void Remove(const FileHandle& dir, const std::string& name);
  void ReaddirPlus(const FileHandle& dir, uint64_t cookie, const cookieverf3 verifier,
                   uint32_t dircount, uint32_t maxcount);

  // Ends the op successfully, crediting `bytes` and `items` to it.
  void Finish(uint64_t bytes, uint64_t items);
  // Ends the op as failed.
  void Fail(const std::string& message);

  FileHandle fh;
  std::string name;
  uint64_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t bytes = 0;
  uint64_t items = 0;
  uint64_t cookie = 0;
  cookieverf3 verifier{};
  int step = 0;
  // The status the next reply must carry to reach OnReply; any other fails
  // the op (NFS3_OK unless a workload expects an error, as `probe` NOENT).
  nfsstat3 expect = NFS3_OK;

 private:
  friend class Worker;

  static void OnReplyThunk(rpc_context* rpc, int status, void* data, void* private_data);
  void BeginCall(int proc);
  void Queued(int rc);
  void HandleReply(int status, void* data);

  Worker* worker_ = nullptr;
  bool busy_ = false;
  int proc_ = 0;
  SteadyClock::time_point op_start_;
  SteadyClock::time_point call_start_;
};

// A workload's per-connection half: decides what each op does. Called only
// from its Worker's thread.
class ConnectionLoad {
 public:
  virtual ~ConnectionLoad() = default;
  // Resets `op`'s scratch fields and issues its first call.
  virtual void Start(Op& op) = 0;
  // Handles the successful (NFS3_OK) reply `reply` to op's outstanding call:
  // issues the next call, or Finish()es or Fail()s the op.
  virtual void OnReply(Op& op, void* reply) = 0;
};

// Drives one connection. Run() is the thread body; stats() may be read after
// Run() returns.
class Worker {
 public:
  Worker(std::unique_ptr<RpcConnection> conn, std::unique_ptr<ConnectionLoad> load, int queue_depth,
         RunControl* control);
  ~Worker();

  void Run();
  const RunStats& stats() const { return stats_; }
  // The time the last op of this worker completed (set by Run()).
  SteadyClock::time_point last_completion() const { return last_completion_; }

 private:
  friend class Op;

  void StartOp(Op& op);
  void CompleteOp(Op& op, bool ok, uint64_t bytes, uint64_t items, const std::string& error);
  void RecordCall(int proc, SteadyClock::time_point start, SteadyClock::time_point end);

  std::unique_ptr<ConnectionLoad> load_;
  RunControl* control_;
  RunStats stats_;
  std::vector<Op> ops_;
  int busy_ = 0;
  bool closing_ = false;
  SteadyClock::time_point last_completion_{};
  // Last: destroying the connection cancels its outstanding calls, whose
  // callbacks still refer to the ops above.
  std::unique_ptr<RpcConnection> conn_;
};

}  // namespace geofs::bench
