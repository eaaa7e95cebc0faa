#include "load_driver.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace geofs::bench {
namespace {

constexpr int kMaxPollMs = 100;

uint64_t Nanos(SteadyClock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

const char* Nfs3ProcName(int proc) {
  static constexpr std::array<const char*, kNfs3ProcCount> kNames = {
      "NULL",    "GETATTR",     "SETATTR", "LOOKUP", "ACCESS",   "READLINK", "READ",   "WRITE",
      "CREATE",  "MKDIR",       "SYMLINK", "MKNOD",  "REMOVE",   "RMDIR",    "RENAME", "LINK",
      "READDIR", "READDIRPLUS", "FSSTAT",  "FSINFO", "PATHCONF", "COMMIT"};
  return proc >= 0 && proc < kNfs3ProcCount ? kNames[proc] : "?";
}

void RunStats::Merge(const RunStats& other) {
  ops += other.ops;
  bytes += other.bytes;
  items += other.items;
  errors += other.errors;
  if (first_error.empty()) first_error = other.first_error;
  op_latency.Merge(other.op_latency);
  for (int p = 0; p < kNfs3ProcCount; ++p) call_latency[p].Merge(other.call_latency[p]);
}

RunControl::RunControl(SteadyClock::time_point measure_start, SteadyClock::time_point deadline,
                       std::optional<uint64_t> op_limit)
    : measure_start_(measure_start),
      deadline_(deadline),
      limited_(op_limit.has_value()),
      ops_left_(op_limit ? static_cast<int64_t>(*op_limit) : 0) {}

bool RunControl::TakeOp() {
  if (!limited_) return true;
  return ops_left_.fetch_sub(1, std::memory_order_relaxed) > 0;
}

// ---- Op: issuing calls -------------------------------------------------------

void Op::BeginCall(int proc) {
  proc_ = proc;
  call_start_ = SteadyClock::now();
}

void Op::Queued(int rc) {
  if (rc != 0) Fail(std::string(Nfs3ProcName(proc_)) + " not sent: " + worker_->conn_->LastError());
}

void Op::Lookup(const FileHandle& dir, const std::string& lookup_name) {
  LOOKUP3args args{};
  args.what.dir = ToNfsFh3(dir);
  args.what.name = const_cast<char*>(lookup_name.c_str());
  BeginCall(NFS3_LOOKUP);
  Queued(rpc_nfs3_lookup_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::GetAttr(const FileHandle& object) {
  GETATTR3args args{};
  args.object = ToNfsFh3(object);
  BeginCall(NFS3_GETATTR);
  Queued(rpc_nfs3_getattr_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::Read(const FileHandle& file, uint64_t read_offset, uint32_t count) {
  READ3args args{};
  args.file = ToNfsFh3(file);
  args.offset = read_offset;
  args.count = count;
  BeginCall(NFS3_READ);
  Queued(rpc_nfs3_read_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::Create(const FileHandle& dir, const std::string& create_name, uint32_t mode) {
  CREATE3args args{};
  args.where.dir = ToNfsFh3(dir);
  args.where.name = const_cast<char*>(create_name.c_str());
  args.how.mode = UNCHECKED;
  sattr3& attrs = args.how.createhow3_u.obj_attributes;
  attrs.mode.set_it = 1;
  attrs.mode.set_mode3_u.mode = mode;
  BeginCall(NFS3_CREATE);
  Queued(rpc_nfs3_create_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::SetAttr(const FileHandle& object, uint32_t mode, uint32_t mtime_seconds) {
  SETATTR3args args{};
  args.object = ToNfsFh3(object);
  args.new_attributes.mode.set_it = 1;
  args.new_attributes.mode.set_mode3_u.mode = mode;
  args.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
  args.new_attributes.mtime.set_mtime_u.mtime.seconds = mtime_seconds;
  BeginCall(NFS3_SETATTR);
  Queued(rpc_nfs3_setattr_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::Remove(const FileHandle& dir, const std::string& remove_name) {
  REMOVE3args args{};
  args.object.dir = ToNfsFh3(dir);
  args.object.name = const_cast<char*>(remove_name.c_str());
  BeginCall(NFS3_REMOVE);
  Queued(rpc_nfs3_remove_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::ReaddirPlus(const FileHandle& dir, uint64_t from_cookie, const cookieverf3 from_verifier,
                     uint32_t dircount, uint32_t maxcount) {
  READDIRPLUS3args args{};
  args.dir = ToNfsFh3(dir);
  args.cookie = from_cookie;
  std::memcpy(args.cookieverf, from_verifier, NFS3_COOKIEVERFSIZE);
  args.dircount = dircount;
  args.maxcount = maxcount;
  BeginCall(NFS3_READDIRPLUS);
  Queued(rpc_nfs3_readdirplus_async(worker_->conn_->rpc(), OnReplyThunk, &args, this));
}

void Op::Finish(uint64_t finished_bytes, uint64_t finished_items) {
  worker_->CompleteOp(*this, true, finished_bytes, finished_items, {});
}

void Op::Fail(const std::string& message) { worker_->CompleteOp(*this, false, 0, 0, message); }

// ---- Op: replies ---------------------------------------------------------------

void Op::OnReplyThunk(rpc_context*, int status, void* data, void* private_data) {
  static_cast<Op*>(private_data)->HandleReply(status, data);
}

void Op::HandleReply(int status, void* data) {
  if (worker_->closing_) return;
  worker_->RecordCall(proc_, call_start_, SteadyClock::now());
  const std::string proc = Nfs3ProcName(proc_);
  if (status != RPC_STATUS_SUCCESS) {
    const char* why = status == RPC_STATUS_ERROR && data != nullptr
                          ? static_cast<const char*>(data)
                          : (status == RPC_STATUS_TIMEOUT ? "timed out" : "cancelled");
    Fail(proc + ": " + why);
    return;
  }
  // Every NFSv3 result union starts with its nfsstat3.
  const nfsstat3 nfs_status = *static_cast<const nfsstat3*>(data);
  if (nfs_status != expect) {
    Fail(proc + ": " + nfsstat3_to_str(nfs_status) +
         (expect != NFS3_OK ? " (expected " + std::string(nfsstat3_to_str(expect)) + ")" : ""));
    return;
  }
  worker_->load_->OnReply(*this, data);
}

// ---- Worker --------------------------------------------------------------------

Worker::Worker(std::unique_ptr<RpcConnection> conn, std::unique_ptr<ConnectionLoad> load,
               int queue_depth, RunControl* control)
    : load_(std::move(load)), control_(control), ops_(queue_depth), conn_(std::move(conn)) {
  for (Op& op : ops_) op.worker_ = this;
}

Worker::~Worker() {
  closing_ = true;
  conn_.reset();
}

void Worker::Run() {
  for (;;) {
    const auto now = SteadyClock::now();
    bool stopping = now >= control_->deadline();
    for (Op& op : ops_) {
      if (stopping) break;
      if (op.busy_) continue;
      if (!control_->TakeOp()) {
        stopping = true;
        break;
      }
      StartOp(op);
    }
    if (stopping && busy_ == 0) return;

    int timeout_ms = kMaxPollMs;
    if (!stopping) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(control_->deadline() - now);
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, kMaxPollMs));
    }
    const Status status = conn_->Service(timeout_ms);
    if (!status.ok()) {
      // The connection is gone: its calls will never complete.
      for (Op& op : ops_) {
        if (op.busy_) CompleteOp(op, false, 0, 0, status.ToString());
      }
      return;
    }
  }
}

void Worker::StartOp(Op& op) {
  op.busy_ = true;
  ++busy_;
  op.op_start_ = SteadyClock::now();
  load_->Start(op);
}

void Worker::CompleteOp(Op& op, bool ok, uint64_t bytes, uint64_t items, const std::string& error) {
  if (!op.busy_) return;
  op.busy_ = false;
  --busy_;
  const auto now = SteadyClock::now();
  last_completion_ = now;
  if (!ok) {
    ++stats_.errors;
    if (stats_.first_error.empty()) stats_.first_error = error;
    return;
  }
  if (!control_->Measured(now)) return;
  ++stats_.ops;
  stats_.bytes += bytes;
  stats_.items += items;
  stats_.op_latency.Record(Nanos(now - op.op_start_));
}

void Worker::RecordCall(int proc, SteadyClock::time_point start, SteadyClock::time_point end) {
  if (proc < 0 || proc >= kNfs3ProcCount || !control_->Measured(end)) return;
  stats_.call_latency[proc].Record(Nanos(end - start));
}

}  // namespace geofs::bench
