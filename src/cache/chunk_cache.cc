#include "cache/chunk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <list>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/cache_file.h"
#include "cache/chunk_cache_internal.h"
#include "cache/eviction_policy.h"
#include "cache/io_engine.h"
#include "common/logging.h"

namespace geofs::cache {
namespace {

using chunk::ChunkId;
using chunk::ChunkIdHash;
using Clock = std::chrono::steady_clock;

// With capacity_bytes == 0 the cache may fill its file system up to this.
constexpr double kFileSystemShare = 0.9;
constexpr auto kCapacityRefresh = std::chrono::seconds(1);

struct FoundFile {
  ChunkId id;
  uint64_t raw_bytes;
  timespec mtime;
};

Status EnsureDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::FromErrno(errno, path);
}

// Creates `dir` and its fan-out subdirectories; removes temporary leftovers
// and files too short to be valid; returns the chunk files found.
Result<std::vector<FoundFile>> PrepareDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::FromErrno(ec.value(), dir);
  std::vector<FoundFile> found;
  size_t removed = 0;
  // Fan-out directories are created by the first write into them.
  for (int i = 0; i < 256; ++i) {
    char name[3];
    std::snprintf(name, sizeof(name), "%02x", i);
    std::string sub = dir + "/" + name;
    DIR* d = opendir(sub.c_str());
    if (d == nullptr && errno == ENOENT) continue;
    if (d == nullptr) return Status::FromErrno(errno, sub);
    while (dirent* ent = readdir(d)) {
      std::string_view entry_name = ent->d_name;
      if (entry_name == "." || entry_name == "..") continue;
      std::string path = sub + "/" + ent->d_name;
      if (entry_name.find(kTempMarker) != std::string_view::npos) {
        if (unlink(path.c_str()) == 0) ++removed;
        continue;
      }
      auto id = ChunkId::FromHex(entry_name);
      struct stat st;
      if (!id.ok() || entry_name.size() != 2 * ChunkId::kSize ||
          fstatat(dirfd(d), ent->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode)) {
        continue;  // not ours
      }
      if (static_cast<uint64_t>(st.st_size) < kFileHeaderSize) {
        if (unlink(path.c_str()) == 0) ++removed;
        continue;
      }
      found.push_back({*id, static_cast<uint64_t>(st.st_size) - kFileHeaderSize, st.st_mtim});
    }
    closedir(d);
  }
  if (removed > 0) GetLogger("cache")->info("{}: removed {} incomplete files", dir, removed);
  std::sort(found.begin(), found.end(), [](const FoundFile& a, const FoundFile& b) {
    return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) < std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
  });
  return found;
}

class ChunkCacheImpl final : public ChunkCache {
 public:
  ChunkCacheImpl(const ChunkCacheOptions& options, std::unique_ptr<IoEngine> engine)
      : options_(options), engine_(std::move(engine)), policy_(options.capacity_bytes) {}

  ~ChunkCacheImpl() override {
    // Runs every outstanding completion while the rest is still alive.
    engine_.reset();
  }

  Status Load() {
    GEOFS_ASSIGN_OR_RETURN(std::vector<FoundFile> found, PrepareDir(options_.dir));
    std::lock_guard lock(mu_);
    for (const FoundFile& f : found) {
      index_[f.id] = {f.raw_bytes, next_generation_++};
      policy_.Restore(f.id, f.raw_bytes, false);
      disk_bytes_ += f.raw_bytes;
    }
    RefreshCapacityLocked(/*force=*/true);
    while (disk_bytes_ > capacity_) {
      auto victim = policy_.Victim(0);
      if (!victim) break;
      EvictLocked(*victim);
    }
    GetLogger("cache")->info("{}: {} chunks, {} bytes, capacity {}, {}", options_.dir,
                             index_.size(), disk_bytes_, capacity_,
                             engine_->is_io_uring() ? "io_uring" : "thread pool I/O");
    return Status::Ok();
  }

  void Get(const ChunkId& id, GetCallback cb) override {
    std::unique_lock lock(mu_);
    policy_.RecordAccess(id);
    if (auto m = memory_index_.find(id); m != memory_index_.end()) {
      memory_.splice(memory_.begin(), memory_, m->second);
      policy_.Touch(id);
      ++stats_.memory_hits;
      Buffer hit = m->second->second;
      lock.unlock();
      cb(std::move(hit));
      return;
    }
    if (auto p = puts_.find(id); p != puts_.end()) {
      ++stats_.memory_hits;
      Buffer hit = p->second.raw;
      lock.unlock();
      cb(std::move(hit));
      return;
    }
    auto it = index_.find(id);
    if (it == index_.end()) {
      ++stats_.misses;
      lock.unlock();
      cb(Status::NotFound("chunk not cached"));
      return;
    }
    policy_.Touch(id);
    DiskEntry entry = it->second;
    lock.unlock();
    ReadFile(id, entry, std::move(cb));
  }

  void Put(const ChunkId& id, Buffer raw, PutCallback cb) override {
    {
      std::unique_lock lock(mu_);
      if (index_.count(id) != 0) {
        lock.unlock();
        cb(Status::Ok());
        return;
      }
      if (auto p = puts_.find(id); p != puts_.end()) {
        p->second.waiters.push_back(std::move(cb));
        return;
      }
      Status room = MakeRoomLocked(raw.size());
      if (!room.ok()) {
        lock.unlock();
        cb(std::move(room));
        return;
      }
      reserved_bytes_ += raw.size();
      PendingPut& pending = puts_[id];
      pending.raw = raw;
      pending.waiters.push_back(std::move(cb));
    }
    auto op = std::make_shared<WriteOp>();
    op->id = id;
    op->raw = std::move(raw);
    EncodeFileHeader(id, op->raw.span(), op->header);
    StartWrite(std::move(op));
  }

  bool Contains(const ChunkId& id) const override {
    std::lock_guard lock(mu_);
    return index_.count(id) != 0;
  }

  void Pin(const ChunkId& id) override {
    std::lock_guard lock(mu_);
    if (++pins_[id] != 1) return;
    if (auto it = index_.find(id); it != index_.end()) {
      policy_.SetPinned(id, true);
      pinned_bytes_ += it->second.raw_bytes;
    }
  }

  void Unpin(const ChunkId& id) override {
    std::lock_guard lock(mu_);
    auto pin = pins_.find(id);
    if (pin == pins_.end()) return;
    if (--pin->second != 0) return;
    pins_.erase(pin);
    if (auto it = index_.find(id); it != index_.end()) {
      policy_.SetPinned(id, false);
      pinned_bytes_ -= it->second.raw_bytes;
    }
  }

  uint64_t Shrink(uint64_t bytes) override {
    std::lock_guard lock(mu_);
    return ShrinkLocked(bytes);
  }

  ChunkCacheStats Stats() const override {
    std::lock_guard lock(mu_);
    ChunkCacheStats s = stats_;
    s.disk_bytes = disk_bytes_;
    s.disk_chunks = index_.size();
    s.memory_bytes = memory_bytes_;
    s.pinned_bytes = pinned_bytes_;
    s.capacity_bytes = capacity_;
    s.io_uring = engine_->is_io_uring();
    return s;
  }

 private:
  struct DiskEntry {
    uint64_t raw_bytes;
    // Distinguishes this file from a later one of the same chunk, so a slow
    // read never drops or promotes an entry that was replaced meanwhile.
    uint64_t generation;
  };
  struct PendingPut {
    Buffer raw;  // served to Gets while the file is being written
    std::vector<PutCallback> waiters;
  };
  struct ReadOp {
    ChunkId id;
    DiskEntry entry;
    GetCallback cb;
    int fd = -1;
    Buffer file;
    uint8_t* data = nullptr;
    size_t done = 0;
  };
  struct WriteOp {
    ChunkId id;
    Buffer raw;
    uint8_t header[kFileHeaderSize];
    std::string temp;
    int fd = -1;
    size_t written = 0;
    bool retried = false;  // after ENOSPC, evicts and tries once more
  };

  // --- reads ---

  void ReadFile(const ChunkId& id, DiskEntry entry, GetCallback cb) {
    auto op = std::make_shared<ReadOp>();
    op->id = id;
    op->entry = entry;
    op->cb = std::move(cb);
    op->fd = open(ChunkPath(options_.dir, id).c_str(), O_RDONLY | O_CLOEXEC);
    if (op->fd < 0) {
      // Removed behind our back, or evicted since the lookup.
      FinishRead(std::move(op), Status::NotFound("cache file is gone"));
      return;
    }
    op->file = Buffer::Allocate(kFileHeaderSize + entry.raw_bytes, &op->data);
    ContinueRead(std::move(op));
  }

  void ContinueRead(std::shared_ptr<ReadOp> op) {
    ReadOp* r = op.get();
    engine_->Read(r->fd, r->data + r->done, r->file.size() - r->done, r->done,
                  [this, op = std::move(op)](int64_t res) mutable {
                    if (res < 0) return FinishRead(std::move(op), Status::FromErrno(-res, "read"));
                    if (res == 0) return FinishRead(std::move(op), Status::Corruption("truncated"));
                    op->done += static_cast<size_t>(res);
                    if (op->done < op->file.size()) return ContinueRead(std::move(op));
                    Status check = VerifyFile(op->id, op->file.span());
                    FinishRead(std::move(op), std::move(check));
                  });
  }

  void FinishRead(std::shared_ptr<ReadOp> op, Status status) {
    if (op->fd >= 0) close(op->fd);
    std::unique_lock lock(mu_);
    auto it = index_.find(op->id);
    bool current = it != index_.end() && it->second.generation == op->entry.generation;
    if (status.ok()) {
      ++stats_.disk_hits;
      Buffer raw = op->file.Slice(kFileHeaderSize, op->entry.raw_bytes);
      if (current) MemoryInsertLocked(op->id, raw);
      lock.unlock();
      op->cb(std::move(raw));
      return;
    }
    ++stats_.misses;
    if (status.code() == StatusCode::kCorruption) {
      ++stats_.corrupt_dropped;
      GetLogger("cache")->warn("dropping cached chunk {}: {}", op->id.ToHex(), status.ToString());
    } else if (status.code() != StatusCode::kNotFound) {
      GetLogger("cache")->warn("reading cached chunk {}: {}", op->id.ToHex(), status.ToString());
    }
    // Whatever went wrong, the caller refetches; the file is not trusted again.
    if (current) EvictLocked(op->id, /*count=*/false);
    lock.unlock();
    op->cb(Status::NotFound("cached chunk unreadable: " + status.ToString()));
  }

  // --- writes ---

  void StartWrite(std::shared_ptr<WriteOp> op) {
    static std::atomic<uint64_t> temp_counter{0};
    op->written = 0;
    op->temp = ChunkPath(options_.dir, op->id) + std::string(kTempMarker) +
               std::to_string(getpid()) + "." + std::to_string(temp_counter++);
    op->fd = open(op->temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (op->fd < 0 && errno == ENOENT) {
      // The first chunk of its fan-out directory.
      if (EnsureDir(ChunkSubdir(options_.dir, op->id)).ok()) {
        op->fd = open(op->temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      }
    }
    if (op->fd < 0) return FailWrite(std::move(op), errno);
    ContinueWrite(std::move(op));
  }

  void ContinueWrite(std::shared_ptr<WriteOp> op) {
    WriteOp* w = op.get();
    iovec iov[2];
    int n = 0;
    if (w->written < kFileHeaderSize) {
      iov[n++] = {w->header + w->written, kFileHeaderSize - w->written};
      iov[n++] = {const_cast<uint8_t*>(w->raw.data()), w->raw.size()};
    } else {
      size_t off = w->written - kFileHeaderSize;
      iov[n++] = {const_cast<uint8_t*>(w->raw.data()) + off, w->raw.size() - off};
    }
    engine_->Write(w->fd, iov, n, w->written, [this, op = std::move(op)](int64_t res) mutable {
      if (res < 0) return FailWrite(std::move(op), static_cast<int>(-res));
      if (res == 0) return FailWrite(std::move(op), EIO);
      op->written += static_cast<size_t>(res);
      if (op->written < kFileHeaderSize + op->raw.size()) return ContinueWrite(std::move(op));
      int fd = std::exchange(op->fd, -1);
      if (close(fd) != 0) return FailWrite(std::move(op), errno);
      if (rename(op->temp.c_str(), ChunkPath(options_.dir, op->id).c_str()) != 0) {
        return FailWrite(std::move(op), errno);
      }
      FinishPut(*op, Status::Ok());
    });
  }

  void FailWrite(std::shared_ptr<WriteOp> op, int err) {
    if (op->fd >= 0) close(std::exchange(op->fd, -1));
    unlink(op->temp.c_str());
    if (err == ENOSPC && !op->retried) {
      op->retried = true;
      uint64_t freed = Shrink(op->raw.size());
      GetLogger("cache")->warn("{}: file system full, evicted {} bytes and retrying", options_.dir,
                               freed);
      return StartWrite(std::move(op));
    }
    FinishPut(*op, err == ENOSPC ? Status::NoSpace("cache file system is full")
                                 : Status::FromErrno(err, op->temp));
  }

  void FinishPut(const WriteOp& op, Status status) {
    std::vector<PutCallback> waiters;
    {
      std::lock_guard lock(mu_);
      auto p = puts_.find(op.id);
      waiters = std::move(p->second.waiters);
      puts_.erase(p);
      reserved_bytes_ -= op.raw.size();
      if (status.ok()) {
        bool pinned = pins_.count(op.id) != 0;
        index_[op.id] = {op.raw.size(), next_generation_++};
        policy_.Insert(op.id, op.raw.size(), pinned);
        disk_bytes_ += op.raw.size();
        if (pinned) pinned_bytes_ += op.raw.size();
        ++stats_.inserts;
        MemoryInsertLocked(op.id, op.raw);
      }
    }
    for (auto& cb : waiters) cb(status);
  }

  // --- capacity and eviction (REQUIRES: mu_ held) ---

  Status MakeRoomLocked(uint64_t bytes) {
    RefreshCapacityLocked(/*force=*/false);
    if (bytes > capacity_) return Status::NoSpace("chunk larger than the cache");
    while (disk_bytes_ + reserved_bytes_ + bytes > capacity_) {
      auto victim = policy_.Victim(bytes);
      if (!victim) return Status::NoSpace("cache is full of pinned or incoming chunks");
      EvictLocked(*victim);
    }
    return Status::Ok();
  }

  uint64_t ShrinkLocked(uint64_t bytes) {
    uint64_t freed = 0;
    while (freed < bytes) {
      auto victim = policy_.Victim(0);
      if (!victim) break;
      freed += index_.at(*victim).raw_bytes;
      EvictLocked(*victim);
    }
    return freed;
  }

  // Unlinks under the lock on purpose: a Put of the same chunk cannot then
  // rename its new file into place before the old one is gone.
  void EvictLocked(const ChunkId& id, bool count = true) {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    uint64_t bytes = it->second.raw_bytes;
    if (pins_.count(id) != 0) pinned_bytes_ -= bytes;
    index_.erase(it);
    policy_.Remove(id);
    MemoryEraseLocked(id);
    disk_bytes_ -= bytes;
    if (count) ++stats_.evictions;
    unlink(ChunkPath(options_.dir, id).c_str());
  }

  void RefreshCapacityLocked(bool force) {
    if (options_.capacity_bytes != 0) {
      if (force) capacity_ = options_.capacity_bytes;
      return;
    }
    Clock::time_point now = Clock::now();
    if (!force && now - capacity_checked_ < kCapacityRefresh) return;
    capacity_checked_ = now;
    struct statvfs fs;
    if (statvfs(options_.dir.c_str(), &fs) != 0) return;  // keep the last figure
    uint64_t total = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
    uint64_t used = total - static_cast<uint64_t>(fs.f_bfree) * fs.f_frsize;
    uint64_t ours = disk_bytes_ + reserved_bytes_;
    uint64_t others = used > ours ? used - ours : 0;
    uint64_t limit = static_cast<uint64_t>(static_cast<double>(total) * kFileSystemShare);
    capacity_ = limit > others ? limit - others : 0;
    policy_.SetCapacity(capacity_);
  }

  // --- memory tier (REQUIRES: mu_ held) ---

  void MemoryInsertLocked(const ChunkId& id, const Buffer& raw) {
    if (raw.size() > options_.memory_bytes) return;
    if (auto m = memory_index_.find(id); m != memory_index_.end()) {
      memory_.splice(memory_.begin(), memory_, m->second);
      return;
    }
    memory_.emplace_front(id, raw);
    memory_index_[id] = memory_.begin();
    memory_bytes_ += raw.size();
    while (memory_bytes_ > options_.memory_bytes) {
      memory_bytes_ -= memory_.back().second.size();
      memory_index_.erase(memory_.back().first);
      memory_.pop_back();
    }
  }

  void MemoryEraseLocked(const ChunkId& id) {
    auto m = memory_index_.find(id);
    if (m == memory_index_.end()) return;
    memory_bytes_ -= m->second->second.size();
    memory_.erase(m->second);
    memory_index_.erase(m);
  }

  const ChunkCacheOptions options_;
  std::unique_ptr<IoEngine> engine_;

  mutable std::mutex mu_;
  EvictionPolicy policy_;
  std::unordered_map<ChunkId, DiskEntry, ChunkIdHash> index_;
  std::unordered_map<ChunkId, PendingPut, ChunkIdHash> puts_;
  std::unordered_map<ChunkId, uint32_t, ChunkIdHash> pins_;
  using MemoryList = std::list<std::pair<ChunkId, Buffer>>;  // front: most recent
  MemoryList memory_;
  std::unordered_map<ChunkId, MemoryList::iterator, ChunkIdHash> memory_index_;
  uint64_t memory_bytes_ = 0;
  uint64_t disk_bytes_ = 0;      // raw bytes of the files in index_
  uint64_t reserved_bytes_ = 0;  // raw bytes of the Puts being written
  uint64_t pinned_bytes_ = 0;
  uint64_t capacity_ = 0;
  Clock::time_point capacity_checked_{};
  uint64_t next_generation_ = 0;
  ChunkCacheStats stats_;
};

}  // namespace

Result<std::unique_ptr<ChunkCache>> OpenChunkCacheWithEngine(const ChunkCacheOptions& options,
                                                             std::unique_ptr<IoEngine> engine) {
  if (options.dir.empty()) return Status::InvalidArgument("cache directory not set");
  auto cache = std::make_unique<ChunkCacheImpl>(options, std::move(engine));
  GEOFS_RETURN_IF_ERROR(cache->Load());
  return std::unique_ptr<ChunkCache>(std::move(cache));
}

Result<std::unique_ptr<ChunkCache>> ChunkCache::Open(const ChunkCacheOptions& options) {
  std::unique_ptr<IoEngine> engine;
  if (options.use_io_uring) {
    auto ring = NewIoUringEngine();
    if (ring.ok()) {
      engine = std::move(ring).value();
    } else {
      GetLogger("cache")->warn("io_uring unavailable ({}); using plain I/O",
                               ring.status().ToString());
    }
  }
  if (!engine) engine = NewThreadPoolEngine();
  return OpenChunkCacheWithEngine(options, std::move(engine));
}

}  // namespace geofs::cache
