// ParallelFor: runs fn(0..n-1) on up to `threads` threads and returns the
// first error; after an error no new item starts.
//
// The threads are the caller's and helpers from one process-wide pool of
// persistent threads (SharedWorkerPool()), so a call creates no thread:
// it cannot fail when the system is out of threads, and a burst of calls
// (one per PutChunks batch, per file...) does not pay for thread start-up.
// The caller always works too, so the call makes progress even when every
// pool thread is busy with other calls (it then runs with fewer helpers).
// Calls may nest: a caller only waits for items already running.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/worker_pool.h"
#include "geofs/status.h"

namespace geofs {

// The pool ParallelFor draws helpers from: created at first use and never
// destroyed (so no call can outlive it). Enough threads for several
// concurrent PutChunks streams and fsck walks, whose items mostly wait on
// I/O; bounded, unlike a thread per item.
inline WorkerPool& SharedWorkerPool() {
  static WorkerPool* const pool = new WorkerPool(32);
  return *pool;
}

namespace internal {

// The state one ParallelFor call shares with its helpers. Helpers hold it
// by shared_ptr: one that starts after the call returned finds no item
// left and never touches `fn`.
struct ParallelState {
  explicit ParallelState(size_t n, const std::function<Status(size_t)>* fn) : n(n), fn(fn) {}

  // Claims and runs items until none is left or one failed.
  void Work() {
    std::unique_lock lock(mu);
    while (!failed && next < n) {
      const size_t i = next++;
      ++running;
      lock.unlock();
      Status s = (*fn)(i);
      lock.lock();
      --running;
      if (!s.ok() && !failed) {
        failed = true;
        error = std::move(s);
      }
    }
    if (running == 0) idle.notify_all();
  }

  // Returns once no item runs and none will start.
  Status Wait() {
    std::unique_lock lock(mu);
    idle.wait(lock, [this] { return running == 0 && (failed || next >= n); });
    return std::move(error);
  }

  const size_t n;
  const std::function<Status(size_t)>* const fn;
  std::mutex mu;
  std::condition_variable idle;
  size_t next = 0;      // guarded by mu: the next item to claim
  size_t running = 0;   // guarded by mu: items claimed and not finished
  bool failed = false;  // guarded by mu
  Status error;         // guarded by mu
};

}  // namespace internal

template <typename Fn>
Status ParallelFor(size_t n, int threads, Fn fn) {
  if (n == 0) return Status::Ok();
  const std::function<Status(size_t)> call = [&fn](size_t i) -> Status { return fn(i); };
  auto state = std::make_shared<internal::ParallelState>(n, &call);
  const size_t helpers = std::min(n, static_cast<size_t>(std::max(threads, 1))) - 1;
  for (size_t t = 0; t < helpers; ++t) {
    SharedWorkerPool().Submit([state] { state->Work(); });
  }
  state->Work();
  return state->Wait();
}

}  // namespace geofs
