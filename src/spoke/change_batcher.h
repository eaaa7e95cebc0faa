// ChangeBatcher: sends the spoke's namespace changes (SetAttr, Create,
// Remove, Rename, Link) to the hub as ApplyChanges batches.
//
// A metadata-heavy job keeps many changes in flight at once (every NFS
// client connection its own queue of CREATEs and REMOVEs). Sent one call
// each, the per-call cost of gRPC on both ends and one commit per call
// dominate. So at most `max_calls` ApplyChanges calls are open at a time;
// changes submitted meanwhile queue, and the next call carries all of them
// (up to `max_batch`). A lone change still leaves at once, so batching adds
// no latency to an idle spoke.
//
// The hub answers each change as its own call would have, except that a
// change which would have to wait on another spoke comes back `deferred`
// (not applied): it is then sent alone with its own method, so that it
// holds up nothing else. A hub without ApplyChanges (UNIMPLEMENTED) gets
// every change as its own call, until `batch_retry` later a batch is tried
// again (the hub may have been upgraded meanwhile).
//
// Changes in one batch were in flight together, so no client can depend on
// their order. Thread-safe; `done` runs once, on a gRPC thread, and must not
// block. REQUIRES: every `done` has run before the batcher is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "geofs/clock.h"
#include "geofs/status.h"
#include "hub.grpc.pb.h"

namespace geofs::spoke {

class HubLink;

struct ChangeBatcherOptions {
  int max_calls = 2;    // ApplyChanges calls open at once
  int max_batch = 256;  // changes per call (the hub takes up to 1024)
  // How long changes go alone after the hub answered UNIMPLEMENTED.
  std::chrono::milliseconds batch_retry{60'000};
  Clock* clock = Clock::Real();  // REQUIRES: outlives the batcher
};

struct ChangeBatcherStats {
  uint64_t changes = 0;   // submitted
  uint64_t batches = 0;   // ApplyChanges calls sent
  uint64_t deferred = 0;  // sent again alone after the hub deferred them
  uint64_t alone = 0;     // sent as their own call (deferred, or an old hub)
};

class ChangeBatcher {
 public:
  // A change's answer: the result with its reply set (`code` empty).
  using Done = std::function<void(Result<v1::ChangeResult>)>;

  // REQUIRES: `link` outlives the batcher.
  explicit ChangeBatcher(HubLink* link, ChangeBatcherOptions options = {});
  ChangeBatcher(const ChangeBatcher&) = delete;
  ChangeBatcher& operator=(const ChangeBatcher&) = delete;

  // REQUIRES: `change` names an operation.
  void Submit(v1::Change change, Done done);

  ChangeBatcherStats stats() const;

 private:
  struct Pending {
    v1::Change change;
    Done done;
  };

  // Sends the queue's head as one call. REQUIRES: `lock` holds mu_;
  // releases it.
  void SendBatch(std::unique_lock<std::mutex>& lock);
  void OnBatchDone(std::deque<Pending> batch, Result<v1::ApplyChangesResponse> answer);
  void SendAlone(Pending pending);

  HubLink* const link_;
  const ChangeBatcherOptions options_;

  mutable std::mutex mu_;
  std::deque<Pending> queue_;  // guarded by mu_
  int open_calls_ = 0;         // guarded by mu_
  // Guarded by mu_: while now < this, the hub is taken to lack ApplyChanges.
  std::chrono::steady_clock::time_point alone_until_{};
  ChangeBatcherStats stats_;  // guarded by mu_
};

}  // namespace geofs::spoke
