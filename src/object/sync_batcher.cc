#include "object/sync_batcher.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>

namespace geofs::object {

struct SyncBatcher::Request {
  int error = 0;  // errno of the barrier, 0 when it succeeded
  bool done = false;
};

struct SyncBatcher::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Request*> queue;  // guarded by mu
  bool leader_active = false;   // guarded by mu
  uint64_t rounds = 0;          // guarded by mu
};

namespace {

int DefaultBarrier(int fd) { return ::syncfs(fd) == 0 ? 0 : errno; }

}  // namespace

SyncBatcher::SyncBatcher(int fd, BarrierFn barrier)
    : fd_(fd),
      barrier_(barrier ? std::move(barrier) : BarrierFn(DefaultBarrier)),
      shared_(std::make_unique<Shared>()) {}

SyncBatcher::~SyncBatcher() = default;

uint64_t SyncBatcher::rounds() const {
  std::lock_guard lock(shared_->mu);
  return shared_->rounds;
}

size_t SyncBatcher::pending() const {
  std::lock_guard lock(shared_->mu);
  return shared_->queue.size();
}

Status SyncBatcher::Barrier(std::string_view context) {
  Request request;
  std::unique_lock lock(shared_->mu);
  shared_->queue.push_back(&request);
  // A request queued while a leader runs waits for the next round: the
  // running barrier may have started before this caller's writes.
  while (!request.done) {
    if (shared_->leader_active) {
      shared_->cv.wait(lock);
      continue;
    }
    shared_->leader_active = true;
    std::vector<Request*> round;
    round.swap(shared_->queue);
    lock.unlock();
    const int error = barrier_(fd_);
    lock.lock();
    for (Request* r : round) {
      r->error = error;
      r->done = true;
    }
    shared_->leader_active = false;
    ++shared_->rounds;
    shared_->cv.notify_all();
  }
  if (request.error != 0) return Status::FromErrno(request.error, context);
  return Status::Ok();
}

}  // namespace geofs::object
