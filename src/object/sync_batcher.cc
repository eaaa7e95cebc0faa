#include "object/sync_batcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>

namespace geofs::object {

struct SyncBatcher::Request {
  Kind kind = Kind::kData;
  int fd = -1;       // kData
  std::string path;  // kDirectory
  int error = 0;     // errno of the sync, 0 when it succeeded
  bool done = false;
};

struct SyncBatcher::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Request*> queue;  // guarded by mu
  bool leader_active = false;   // guarded by mu
  uint64_t batches = 0;         // guarded by mu
};

namespace {

int DefaultSync(int fd, SyncBatcher::Kind kind) {
  const int rc = kind == SyncBatcher::Kind::kData ? ::fdatasync(fd) : ::fsync(fd);
  return rc == 0 ? 0 : errno;
}

void DefaultWriteback(int fd) { ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); }

}  // namespace

SyncBatcher::SyncBatcher(SyncFn sync, WritebackFn writeback)
    : sync_(sync ? std::move(sync) : SyncFn(DefaultSync)),
      writeback_(writeback ? std::move(writeback) : WritebackFn(DefaultWriteback)),
      shared_(std::make_unique<Shared>()) {}

SyncBatcher::~SyncBatcher() = default;

Status SyncBatcher::SyncData(int fd, std::string_view context) {
  Request request;
  request.kind = Kind::kData;
  request.fd = fd;
  return Submit(&request, context);
}

Status SyncBatcher::SyncDirectory(const std::string& path, std::string_view context) {
  Request request;
  request.kind = Kind::kDirectory;
  request.path = path;
  return Submit(&request, context);
}

uint64_t SyncBatcher::batches() const {
  std::lock_guard lock(shared_->mu);
  return shared_->batches;
}

size_t SyncBatcher::pending() const {
  std::lock_guard lock(shared_->mu);
  return shared_->queue.size();
}

Status SyncBatcher::Submit(Request* request, std::string_view context) {
  std::unique_lock lock(shared_->mu);
  shared_->queue.push_back(request);
  // A request queued while a leader runs waits for the next batch: the
  // running one may have started its syncs before this caller's writes.
  while (!request->done) {
    if (shared_->leader_active) {
      shared_->cv.wait(lock);
      continue;
    }
    shared_->leader_active = true;
    std::vector<Request*> batch;
    batch.swap(shared_->queue);
    lock.unlock();
    RunBatch(batch);
    lock.lock();
    for (Request* r : batch) r->done = true;
    shared_->leader_active = false;
    ++shared_->batches;
    shared_->cv.notify_all();
  }
  if (request->error != 0) return Status::FromErrno(request->error, context);
  return Status::Ok();
}

void SyncBatcher::RunBatch(const std::vector<Request*>& batch) {
  // Data first: all write-backs in flight at once, then a wait on each.
  for (Request* r : batch) {
    if (r->kind == Kind::kData) writeback_(r->fd);
  }
  for (Request* r : batch) {
    if (r->kind == Kind::kData) r->error = sync_(r->fd, Kind::kData);
  }
  std::map<std::string, std::vector<Request*>> dirs;
  for (Request* r : batch) {
    if (r->kind == Kind::kDirectory) dirs[r->path].push_back(r);
  }
  for (auto& [path, requests] : dirs) {
    int error = 0;
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      error = errno;
    } else {
      error = sync_(fd, Kind::kDirectory);
      ::close(fd);
    }
    for (Request* r : requests) r->error = error;
  }
}

}  // namespace geofs::object
