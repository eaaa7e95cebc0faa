#include "cache/chunk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/cache_file.h"
#include "cache/chunk_cache_internal.h"
#include "cache/eviction_policy.h"
#include "cache/io_engine.h"
#include "common/buffer_pool.h"
#include "common/logging.h"

namespace geofs::cache {
namespace {

using chunk::ChunkId;
using chunk::ChunkIdHash;
using Clock = std::chrono::steady_clock;

// With capacity_bytes == 0 the cache may fill its file system up to this.
constexpr double kFileSystemShare = 0.9;
constexpr auto kCapacityRefresh = std::chrono::seconds(1);
// Recent requests after which a ranged read brings a chunk into memory.
constexpr uint32_t kHotAccesses = 4;
constexpr uint64_t kMinDefaultMemory = 64ull << 20;
constexpr uint64_t kMaxDefaultMemory = 1ull << 30;

struct FoundFile {
  ChunkId id;
  uint64_t raw_bytes;
  timespec mtime;
};

// The raw length from the header of the file at `path`; kCorruption when the
// file is not a whole current-format cache file.
Result<uint64_t> ReadRawLength(const std::string& path, uint64_t file_size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  uint8_t header[kFileHeaderSize];
  ssize_t n = pread(fd, header, sizeof(header), 0);
  close(fd);
  if (n < 0) return Status::FromErrno(errno, path);
  return ParseFileHeader(std::span<const uint8_t>(header, static_cast<size_t>(n)), file_size);
}

Status EnsureDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::FromErrno(errno, path);
}

// Creates `dir`; removes temporary leftovers and files that are not in the
// current format (older versions, torn, too short); returns the chunk files
// found. Reads each file's header, which costs one small read per file once
// per start and keeps old-format files from ever reaching a read.
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
      Result<uint64_t> raw_bytes = ReadRawLength(path, static_cast<uint64_t>(st.st_size));
      if (!raw_bytes.ok()) {
        if (unlink(path.c_str()) == 0) ++removed;
        continue;
      }
      found.push_back({*id, *raw_bytes, st.st_mtim});
    }
    closedir(d);
  }
  if (removed > 0) {
    GetLogger("cache")->info("{}: removed {} incomplete or old-format files", dir, removed);
  }
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
    GetRange(id, 0, UINT64_MAX, std::move(cb));
  }

  void GetRange(const ChunkId& id, uint64_t offset, uint64_t length, GetCallback cb) override {
    auto op = std::make_shared<ReadOp>();
    op->cb = std::move(cb);
    Read(id, offset, length, std::move(op));
  }

  void ReadRangeInto(const ChunkId& id, uint64_t offset, uint64_t length, uint8_t* dest,
                     ReadIntoCallback cb) override {
    auto op = std::make_shared<ReadOp>();
    op->dest = dest;
    op->into_cb = std::move(cb);
    Read(id, offset, length, std::move(op));
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
    op->prefix = EncodeFilePrefix(id, op->raw.span());
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
    s.open_files = files_.size();
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
  // A cache file held open, with its verified block checksums. Closed when
  // the last read using it and the open-file set have let go of it.
  struct OpenFile {
    OpenFile(int fd, uint64_t generation, std::vector<uint32_t> crcs)
        : fd(fd), generation(generation), crcs(std::move(crcs)) {}
    ~OpenFile() { close(fd); }
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    const int fd;
    const uint64_t generation;
    const std::vector<uint32_t> crcs;
  };
  // One read of a range of a cached chunk, for GetRange (answered with a
  // Buffer) or ReadRangeInto (answered with the count copied to `dest`).
  struct ReadOp {
    ChunkId id;
    DiskEntry entry;
    uint64_t offset = 0;  // the range asked for, cut at the end of the chunk
    uint64_t length = 0;
    bool whole = false;      // reads the whole chunk
    bool to_memory = false;  // and keeps it in the memory tier
    std::shared_ptr<OpenFile> file;
    GetCallback cb;
    uint8_t* dest = nullptr;  // ReadRangeInto
    ReadIntoCallback into_cb;
    // The file is read from the start of `first_block` to the end of the
    // block holding the range's last byte, as up to three pieces in order.
    // Usually `blocks` receives all of it; a direct ReadRangeInto reads the
    // range itself into `dest` and only the rest of its edge blocks into
    // `blocks`.
    uint64_t first_block = 0;
    bool direct = false;
    Buffer blocks;
    std::array<std::span<uint8_t>, 3> pieces;
    size_t piece_count = 0;
    size_t total = 0;  // bytes of all pieces
    size_t done = 0;
    bool used_engine = false;  // some bytes came through engine_->Read
  };
  struct WriteOp {
    ChunkId id;
    Buffer raw;
    std::vector<uint8_t> prefix;  // header and block table
    std::string temp;
    int fd = -1;
    size_t written = 0;
    bool retried = false;  // after ENOSPC, evicts and tries once more
  };

  // --- reads ---

  static Buffer Clip(const Buffer& raw, uint64_t offset, uint64_t length) {
    uint64_t from = std::min<uint64_t>(offset, raw.size());
    return raw.Slice(from, std::min<uint64_t>(length, raw.size() - from));
  }

  // Answers `op` for [offset, offset + length) of `id` from memory or disk.
  void Read(const ChunkId& id, uint64_t offset, uint64_t length, std::shared_ptr<ReadOp> op) {
    std::unique_lock lock(mu_);
    policy_.RecordAccess(id);
    std::optional<Buffer> in_memory;
    if (auto m = memory_index_.find(id); m != memory_index_.end()) {
      memory_.splice(memory_.begin(), memory_, m->second);
      policy_.Touch(id);
      in_memory = m->second->second;
    } else if (auto p = puts_.find(id); p != puts_.end()) {
      in_memory = p->second.raw;  // being written: served from the Put's bytes
    }
    if (in_memory) {
      ++stats_.memory_hits;
      lock.unlock();
      return Deliver(*op, Clip(*in_memory, offset, length));
    }
    auto it = index_.find(id);
    if (it == index_.end()) {
      ++stats_.misses;
      lock.unlock();
      return Fail(*op, Status::NotFound("chunk not cached"));
    }
    policy_.Touch(id);
    op->id = id;
    op->entry = it->second;
    op->offset = std::min(offset, op->entry.raw_bytes);
    op->length = std::min(length, op->entry.raw_bytes - op->offset);
    bool whole = op->length == op->entry.raw_bytes;
    op->to_memory = AdmitLocked(id, op->entry.raw_bytes, whole);
    if (op->to_memory && !whole) ++stats_.promotions;
    op->whole = whole || op->to_memory;
    if (!op->whole && op->length == 0) {
      ++stats_.disk_hits;
      lock.unlock();
      return Deliver(*op, Buffer());
    }
    op->file = FindFileLocked(id, op->entry.generation);
    lock.unlock();
    StartRead(std::move(op));
  }

  // Answers `op` with `range` (or copies it to op.dest).
  static void Deliver(ReadOp& op, Buffer range) {
    if (!op.dest) return op.cb(std::move(range));
    if (!range.empty()) std::memcpy(op.dest, range.data(), range.size());
    op.into_cb(range.size());
  }

  static void Fail(ReadOp& op, Status status) {
    if (!op.dest) return op.cb(std::move(status));
    op.into_cb(std::move(status));
  }

  void StartRead(std::shared_ptr<ReadOp> op) {
    if (!op->file) {
      Result<std::shared_ptr<OpenFile>> file = OpenCacheFile(op->id, op->entry);
      if (!file.ok()) return FinishRead(std::move(op), file.status());
      op->file = std::move(file).value();
    }
    uint64_t begin = op->whole ? 0 : op->offset;
    uint64_t end = op->whole ? op->entry.raw_bytes : op->offset + op->length;
    op->first_block = begin / kBlockSize;
    uint64_t from = op->first_block * kBlockSize;
    uint64_t to = std::min(op->entry.raw_bytes, (end + kBlockSize - 1) / kBlockSize * kBlockSize);
    op->total = to - from;
    uint8_t* scratch;
    // Sized to the blocks read, not the chunk, and reused (pool_) unless the
    // memory tier keeps it: a read faults in no fresh pages. A direct read
    // needs room only for the rest of its edge blocks.
    op->direct = op->dest != nullptr && !op->whole;
    if (op->direct) {
      size_t head = begin - from;
      size_t tail = to - end;
      op->blocks = pool_.Allocate(head + tail, &scratch);
      op->pieces = {std::span(scratch, head), std::span(op->dest, end - begin),
                    std::span(scratch + head, tail)};
      op->piece_count = 3;
    } else {
      op->blocks = op->to_memory ? Buffer::Allocate(op->total, &scratch)
                                 : pool_.Allocate(op->total, &scratch);
      op->pieces[0] = std::span(scratch, op->total);
      op->piece_count = 1;
    }
    if (op->total == 0) return FinishRead(std::move(op), Status::Ok());
    ContinueRead(std::move(op));
  }

  // The pieces of `op` not read yet, as iovecs; returns how many.
  static int PendingIovecs(const ReadOp& op, iovec* iov) {
    int n = 0;
    size_t skip = op.done;
    for (size_t i = 0; i < op.piece_count; ++i) {
      std::span<uint8_t> piece = op.pieces[i];
      if (skip >= piece.size()) {
        skip -= piece.size();
        continue;
      }
      iov[n++] = {piece.data() + skip, piece.size() - skip};
      skip = 0;
    }
    return n;
  }

  void ContinueRead(std::shared_ptr<ReadOp> op) {
    ReadOp* r = op.get();
    const uint64_t base = DataOffset(r->entry.raw_bytes) + r->first_block * kBlockSize;
    iovec iov[3];
    // What the page cache holds is copied here, on the caller's thread: no
    // submission, no wake-up of the reaper, no thread hop for the reply.
    while (options_.inline_reads && r->done < r->total) {
      int n = PendingIovecs(*r, iov);
      int64_t res = engine_->ReadNow(r->file->fd, iov, n, base + r->done);
      if (res == -EAGAIN) break;
      if (res < 0) return FinishRead(std::move(op), Status::FromErrno(-res, "read"));
      if (res == 0) return FinishRead(std::move(op), Status::Corruption("truncated"));
      r->done += static_cast<size_t>(res);
    }
    if (r->done == r->total) return VerifyAndFinish(std::move(op));
    r->used_engine = true;
    int n = PendingIovecs(*r, iov);
    engine_->Read(r->file->fd, iov, n, base + r->done,
                  [this, op = std::move(op)](int64_t res) mutable {
                    if (res < 0) return FinishRead(std::move(op), Status::FromErrno(-res, "read"));
                    if (res == 0) return FinishRead(std::move(op), Status::Corruption("truncated"));
                    op->done += static_cast<size_t>(res);
                    if (op->done < op->total) return ContinueRead(std::move(op));
                    VerifyAndFinish(std::move(op));
                  });
  }

  // Checks the blocks read against their CRCs and answers.
  void VerifyAndFinish(std::shared_ptr<ReadOp> op) {
    std::array<std::span<const uint8_t>, 3> pieces;
    for (size_t i = 0; i < op->piece_count; ++i) pieces[i] = op->pieces[i];
    Status check =
        VerifyBlocks(op->file->crcs, op->first_block, std::span(pieces.data(), op->piece_count));
    FinishRead(std::move(op), std::move(check));
  }

  // Opens the file of `id` and verifies its header and block table. The
  // prefix (a few hundred bytes) is read inline: it happens once per open
  // file, and the file is in the page cache after its write or first read.
  Result<std::shared_ptr<OpenFile>> OpenCacheFile(const ChunkId& id, const DiskEntry& entry) {
    int fd = open(ChunkPath(options_.dir, id).c_str(), O_RDONLY | O_CLOEXEC);
    // Removed behind our back, or evicted since the lookup.
    if (fd < 0 && errno == ENOENT) return Status::NotFound("cache file is gone");
    if (fd < 0) return Status::FromErrno(errno, "open cache file");
    struct stat st;
    std::vector<uint8_t> prefix(DataOffset(entry.raw_bytes));
    ssize_t n = fstat(fd, &st) == 0 ? pread(fd, prefix.data(), prefix.size(), 0) : -1;
    if (n < 0) {
      Status failed = Status::FromErrno(errno, "read cache file header");
      close(fd);
      return failed;
    }
    prefix.resize(static_cast<size_t>(n));
    Result<std::vector<uint32_t>> crcs =
        VerifyFilePrefix(id, prefix, static_cast<uint64_t>(st.st_size));
    if (crcs.ok() && crcs->size() != BlockCount(entry.raw_bytes)) {
      crcs = Status::Corruption("length changed since the file was indexed");
    }
    if (!crcs.ok()) {
      close(fd);
      return crcs.status();
    }
    auto file = std::make_shared<OpenFile>(fd, entry.generation, std::move(crcs).value());
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it != index_.end() && it->second.generation == entry.generation) {
      // A concurrent read may have opened it too; either copy serves.
      if (auto f = files_index_.find(id); f == files_index_.end()) {
        files_.emplace_front(id, file);
        files_index_[id] = files_.begin();
        while (files_.size() > options_.max_open_files) {
          files_index_.erase(files_.back().first);
          files_.pop_back();
        }
      }
    }
    return file;
  }

  void FinishRead(std::shared_ptr<ReadOp> op, Status status) {
    std::unique_lock lock(mu_);
    auto it = index_.find(op->id);
    bool current = it != index_.end() && it->second.generation == op->entry.generation;
    if (status.ok()) {
      ++stats_.disk_hits;
      stats_.disk_read_bytes += op->total;
      if (!op->used_engine && op->total > 0) ++stats_.inline_reads;
      if (op->to_memory && current) MemoryInsertLocked(op->id, op->blocks);
      lock.unlock();
      if (op->direct) return op->into_cb(op->length);
      uint64_t skip = op->offset - op->first_block * kBlockSize;
      return Deliver(*op, op->blocks.Slice(skip, op->length));
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
    Fail(*op, Status::NotFound("cached chunk unreadable: " + status.ToString()));
  }

  // The open file of `id` if it is the current one. REQUIRES: mu_ held.
  std::shared_ptr<OpenFile> FindFileLocked(const ChunkId& id, uint64_t generation) {
    auto f = files_index_.find(id);
    if (f == files_index_.end()) return nullptr;
    if (f->second->second->generation != generation) {
      FileEraseLocked(id);
      return nullptr;
    }
    files_.splice(files_.begin(), files_, f->second);
    return f->second->second;
  }

  void FileEraseLocked(const ChunkId& id) {
    auto f = files_index_.find(id);
    if (f == files_index_.end()) return;
    files_.erase(f->second);
    files_index_.erase(f);
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
    if (w->written < w->prefix.size()) {
      iov[n++] = {w->prefix.data() + w->written, w->prefix.size() - w->written};
      iov[n++] = {const_cast<uint8_t*>(w->raw.data()), w->raw.size()};
    } else {
      size_t off = w->written - w->prefix.size();
      iov[n++] = {const_cast<uint8_t*>(w->raw.data()) + off, w->raw.size() - off};
    }
    engine_->Write(w->fd, iov, n, w->written, [this, op = std::move(op)](int64_t res) mutable {
      if (res < 0) return FailWrite(std::move(op), static_cast<int>(-res));
      if (res == 0) return FailWrite(std::move(op), EIO);
      op->written += static_cast<size_t>(res);
      if (op->written < op->prefix.size() + op->raw.size()) return ContinueWrite(std::move(op));
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
    FileEraseLocked(id);
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

  // Whether a disk read of `id` should bring the whole chunk into memory. A
  // read that needs the whole chunk anyway (`whole`) only has to beat the
  // coldest chunk held; a ranged read must also have seen kHotAccesses recent
  // requests, because it then reads the whole chunk instead of a few blocks.
  // Comparing with the coldest keeps a uniformly random working set larger
  // than the tier from churning it (ties keep the incumbent, as on disk).
  bool AdmitLocked(const ChunkId& id, uint64_t bytes, bool whole) {
    if (bytes > options_.memory_bytes) return false;
    uint32_t frequency = policy_.Frequency(id);
    if (!whole && frequency < kHotAccesses) return false;
    if (memory_bytes_ + bytes <= options_.memory_bytes) return true;
    return frequency > policy_.Frequency(memory_.back().first);
  }

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
  geofs::BufferPool pool_;

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
  // Open cache files, most recently used first, at most max_open_files.
  using FileList = std::list<std::pair<ChunkId, std::shared_ptr<OpenFile>>>;
  FileList files_;
  std::unordered_map<ChunkId, FileList::iterator, ChunkIdHash> files_index_;
  ChunkCacheStats stats_;
};

}  // namespace

uint64_t DefaultMemoryTierBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return kMinDefaultMemory;
  uint64_t ram = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  return std::clamp(ram / 16, kMinDefaultMemory, kMaxDefaultMemory);
}

void ChunkCache::GetRange(const ChunkId& id, uint64_t offset, uint64_t length, GetCallback cb) {
  Get(id, [offset, length, cb = std::move(cb)](Result<Buffer> raw) {
    if (!raw.ok()) return cb(std::move(raw));
    uint64_t from = std::min<uint64_t>(offset, raw->size());
    cb(raw->Slice(from, std::min<uint64_t>(length, raw->size() - from)));
  });
}

void ChunkCache::ReadRangeInto(const ChunkId& id, uint64_t offset, uint64_t length, uint8_t* dest,
                               ReadIntoCallback cb) {
  GetRange(id, offset, length, [dest, cb = std::move(cb)](Result<Buffer> range) {
    if (!range.ok()) return cb(range.status());
    if (!range->empty()) std::memcpy(dest, range->data(), range->size());
    cb(range->size());
  });
}

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
