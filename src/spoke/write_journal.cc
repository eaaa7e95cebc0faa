#include "spoke/write_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <unordered_map>

#include "common/crc32c.h"
#include "common/logging.h"

namespace geofs::spoke {
namespace {

static_assert(std::endian::native == std::endian::little, "the log is little-endian");

constexpr uint32_t kMagic = 0x314a4647;  // "GFJ1"
constexpr size_t kHeaderSize = 56;
// A single write record carries at most this much payload; a longer length
// in a header is corruption.
constexpr uint64_t kMaxRecordPayload = 1ull << 30;

enum class RecordType : uint8_t { kWrite = 1, kRelease = 2 };

// Header layout (offsets): 0 magic, 4 crc, 8 type, 9..15 zero, 16 seq,
// 24 ino, 32 gen, 40 offset, 48 length. For a release, seq is the upto_seq
// and [offset, offset + length) the range released.
struct Record {
  RecordType type = RecordType::kWrite;
  uint64_t seq = 0;
  FileKey file;
  uint64_t offset = 0;
  uint64_t length = 0;

  uint64_t payload() const { return type == RecordType::kWrite ? length : 0; }
};

template <typename T>
void Put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}
template <typename T>
T Get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void EncodeHeader(const Record& r, std::span<const uint8_t> payload, uint8_t* h) {
  std::memset(h, 0, kHeaderSize);
  Put<uint32_t>(h, kMagic);
  h[8] = static_cast<uint8_t>(r.type);
  Put<uint64_t>(h + 16, r.seq);
  Put<uint64_t>(h + 24, r.file.ino);
  Put<uint64_t>(h + 32, r.file.gen);
  Put<uint64_t>(h + 40, r.offset);
  Put<uint64_t>(h + 48, r.length);
  uint32_t crc = Crc32c(Crc32c(0, {h + 8, kHeaderSize - 8}), payload);
  Put<uint32_t>(h + 4, crc);
}

// The record a header describes; nullopt if it is not a plausible header.
std::optional<Record> DecodeHeader(const uint8_t* h) {
  if (Get<uint32_t>(h) != kMagic) return std::nullopt;
  Record r;
  if (h[8] != static_cast<uint8_t>(RecordType::kWrite) &&
      h[8] != static_cast<uint8_t>(RecordType::kRelease)) {
    return std::nullopt;
  }
  r.type = static_cast<RecordType>(h[8]);
  r.seq = Get<uint64_t>(h + 16);
  r.file = {Get<uint64_t>(h + 24), Get<uint64_t>(h + 32)};
  r.offset = Get<uint64_t>(h + 40);
  r.length = Get<uint64_t>(h + 48);
  if (r.type == RecordType::kWrite &&
      (r.length == 0 || r.length > kMaxRecordPayload || r.offset + r.length < r.offset)) {
    return std::nullopt;
  }
  return r;
}

constexpr char kReserveName[] = "reserve";

std::string SegmentName(uint64_t number) {
  char name[32];
  std::snprintf(name, sizeof(name), "seg-%016llx.log", static_cast<unsigned long long>(number));
  return name;
}

std::optional<uint64_t> SegmentNumber(const std::string& name) {
  if (name.size() != 24 || name.compare(0, 4, "seg-") != 0 || name.compare(20, 4, ".log") != 0) {
    return std::nullopt;
  }
  uint64_t n = 0;
  for (size_t i = 4; i < 20; ++i) {
    const char c = name[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    n = n * 16 + d;
  }
  return n;
}

Status PreadFull(int fd, uint8_t* p, size_t n, uint64_t pos) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(pos));
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "reading the write journal");
    }
    if (got == 0) return Status::Corruption("write journal segment shorter than its index");
    p += got;
    n -= got;
    pos += got;
  }
  return Status::Ok();
}

// One log file. Its bytes below `size` never change once written, so they
// may be read without the journal's lock.
struct Segment {
  uint64_t number = 0;
  std::string path;
  int fd = -1;
  uint64_t size = 0;      // bytes of whole records; guarded by the journal's mu_
  uint64_t live = 0;      // index pieces pointing into it; guarded by mu_
  uint64_t flushing = 0;  // writeback started up to here; guarded by mu_

  ~Segment() {
    if (fd >= 0) ::close(fd);
  }
};

// Pending bytes [key, end) of a file come from `segment` at `pos`.
struct Piece {
  uint64_t end = 0;
  uint64_t seq = 0;
  std::shared_ptr<Segment> segment;
  uint64_t pos = 0;
};

struct FileState {
  std::map<uint64_t, Piece> pieces;  // by file offset; non-overlapping
  uint64_t since_seq = 0;            // orders PendingFiles (oldest first)
  uint64_t last_seq = 0;             // the newest write still (partly) pending
  uint64_t bytes = 0;
  WallTime mtime;  // see FilePending::mtime
};

class LogJournal final : public WriteJournal {
 public:
  explicit LogJournal(WriteJournalOptions options)
      : options_(std::move(options)), io_(options_.io ? options_.io : JournalIo::Default()) {}
  ~LogJournal() override {
    if (dir_fd_ >= 0) ::close(dir_fd_);
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
  }

  Status Init();

  Result<uint64_t> Append(const FileKey& file, uint64_t offset, std::span<const uint8_t> data,
                          WallTime mtime) override;
  Status Sync() override;
  using WriteJournal::Read;
  std::vector<PendingRange> Read(const FileKey& file, uint64_t offset, uint64_t length,
                                 const Allocator& allocate) const override;
  std::vector<FilePending> PendingFiles() const override;
  std::optional<FilePending> Pending(const FileKey& file) const override;
  std::vector<PendingSpan> Spans(const FileKey& file) const override;
  Status Release(const FileKey& file, uint64_t upto_seq) override {
    return ReleaseRange(file, upto_seq, 0, UINT64_MAX);
  }
  Status ReleaseRange(const FileKey& file, uint64_t upto_seq, uint64_t offset,
                      uint64_t length) override;
  Status Discard(const FileKey& file) override;
  WriteJournalStats Stats() const override;

 private:
  // Replays one segment into the index; truncates a torn or corrupt tail.
  Status Replay(const std::shared_ptr<Segment>& seg, uint64_t* max_seq);
  Status OpenNewSegment();  // REQUIRES: mu_ held (or during Init)
  // Writes one record at the end of the active segment; on failure nothing
  // of it remains visible. REQUIRES: mu_ held.
  Status WriteRecord(const Record& r, std::span<const uint8_t> payload);
  Status ReleaseLocked(const FileKey& file, uint64_t upto_seq, uint64_t offset, uint64_t end);

  // Index maintenance. REQUIRES: mu_ held.
  void Insert(const FileKey& file, uint64_t offset, uint64_t end, uint64_t seq,
              const std::shared_ptr<Segment>& seg, uint64_t pos);
  // Drops the parts of pieces with seq <= upto inside [lo, hi).
  void Remove(const FileKey& file, uint64_t upto, uint64_t lo, uint64_t hi);
  void AddPiece(FileState& f, uint64_t offset, Piece p);
  std::map<uint64_t, Piece>::iterator ErasePiece(FileState& f,
                                                 std::map<uint64_t, Piece>::iterator it);
  // Deletes dead segments, oldest first (recycling a dead active one), and
  // restores the reserve if it was used. REQUIRES: mu_ held.
  void CollectSegments();
  // The reserve: space held for release records (which only ever free
  // space), so that a journal that filled the disk can still drain.
  // Best effort. REQUIRES: mu_ held (or during Init).
  void CreateReserve();
  // Frees the reserve; false if there was none. REQUIRES: mu_ held.
  bool DropReserve();
  FilePending Describe(const FileKey& key, const FileState& f) const;

  const WriteJournalOptions options_;
  const std::shared_ptr<JournalIo> io_;
  std::shared_ptr<spdlog::logger> log_ = GetLogger("spoke.journal");
  int dir_fd_ = -1;
  int reserve_fd_ = -1;  // guarded by mu_

  mutable std::mutex mu_;
  std::condition_variable sync_cv_;
  std::unordered_map<FileKey, FileState, FileKeyHash> files_;  // guarded by mu_
  std::deque<std::shared_ptr<Segment>> segments_;              // oldest first; back() is active
  std::vector<std::shared_ptr<Segment>> unsynced_;             // rotated out since the last sync
  uint64_t next_seq_ = 1;
  uint64_t next_segment_ = 1;
  uint64_t log_bytes_ = 0;
  uint64_t pending_bytes_ = 0;
  uint64_t records_ = 0;  // records written; a sync covers those counted before it
  uint64_t synced_records_ = 0;
  bool syncing_ = false;
  bool dir_dirty_ = false;
  bool rotate_ = false;  // the active segment's tail may hold a failed write
  Status sync_error_;    // sticky
  uint64_t appends_ = 0;
  uint64_t syncs_ = 0;
};

Status LogJournal::Init() {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "creating journal directory " + options_.dir);
  dir_fd_ = ::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) return Status::FromErrno(errno, "opening " + options_.dir);

  std::vector<uint64_t> numbers;
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return Status::FromErrno(errno, "listing " + options_.dir);
  while (struct dirent* de = ::readdir(d)) {
    if (auto n = SegmentNumber(de->d_name)) numbers.push_back(*n);
  }
  ::closedir(d);
  std::sort(numbers.begin(), numbers.end());

  uint64_t max_seq = 0;
  for (uint64_t n : numbers) {
    auto seg = std::make_shared<Segment>();
    seg->number = n;
    seg->path = options_.dir + "/" + SegmentName(n);
    seg->fd = ::open(seg->path.c_str(), O_RDWR | O_CLOEXEC);
    if (seg->fd < 0) return Status::FromErrno(errno, "opening " + seg->path);
    segments_.push_back(seg);
    GEOFS_RETURN_IF_ERROR(Replay(seg, &max_seq));
    log_bytes_ += seg->size;
    next_segment_ = n + 1;
  }
  next_seq_ = max_seq + 1;
  std::lock_guard lock(mu_);
  GEOFS_RETURN_IF_ERROR(OpenNewSegment());
  CollectSegments();
  if (::fsync(dir_fd_) != 0) return Status::FromErrno(errno, "syncing " + options_.dir);
  dir_dirty_ = false;
  if (!files_.empty()) {
    log_->info("write journal {}: {} files with {} pending bytes replayed", options_.dir,
               files_.size(), pending_bytes_);
  }
  return Status::Ok();
}

Status LogJournal::Replay(const std::shared_ptr<Segment>& seg, uint64_t* max_seq) {
  struct stat st;
  if (::fstat(seg->fd, &st) != 0) return Status::FromErrno(errno, "stat " + seg->path);
  const uint64_t file_size = st.st_size;
  std::vector<uint8_t> buf;
  uint64_t pos = 0;
  std::string torn;
  while (pos < file_size) {
    if (file_size - pos < kHeaderSize) {
      torn = "short header";
      break;
    }
    uint8_t h[kHeaderSize];
    GEOFS_RETURN_IF_ERROR(PreadFull(seg->fd, h, kHeaderSize, pos));
    std::optional<Record> r = DecodeHeader(h);
    if (!r) {
      torn = "bad header";
      break;
    }
    const uint64_t payload = r->payload();
    if (payload > file_size - pos - kHeaderSize) {
      torn = "short payload";
      break;
    }
    uint32_t crc = Crc32c(0, {h + 8, kHeaderSize - 8});
    constexpr size_t kBlock = 1 << 20;
    buf.resize(std::min<uint64_t>(payload, kBlock));
    for (uint64_t done = 0; done < payload;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(payload - done, kBlock));
      GEOFS_RETURN_IF_ERROR(PreadFull(seg->fd, buf.data(), n, pos + kHeaderSize + done));
      crc = Crc32c(crc, {buf.data(), n});
      done += n;
    }
    if (crc != Get<uint32_t>(h + 4)) {
      torn = "checksum mismatch";
      break;
    }
    if (r->type == RecordType::kWrite) {
      Insert(r->file, r->offset, r->offset + r->length, r->seq, seg, pos + kHeaderSize);
      *max_seq = std::max(*max_seq, r->seq);
    } else {
      const uint64_t end = r->offset + std::min(r->length, UINT64_MAX - r->offset);
      Remove(r->file, r->seq, r->offset, end);
    }
    pos += kHeaderSize + payload;
  }
  seg->size = pos;
  if (pos < file_size) {
    log_->warn("write journal {}: {} at byte {}; dropping the {} bytes from there", seg->path, torn,
               pos, file_size - pos);
    if (::ftruncate(seg->fd, static_cast<off_t>(pos)) != 0 || ::fdatasync(seg->fd) != 0) {
      return Status::FromErrno(errno, "truncating " + seg->path);
    }
  }
  return Status::Ok();
}

Status LogJournal::OpenNewSegment() {
  auto seg = std::make_shared<Segment>();
  seg->number = next_segment_;
  seg->path = options_.dir + "/" + SegmentName(seg->number);
  seg->fd = ::open(seg->path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (seg->fd < 0) return Status::FromErrno(errno, "creating " + seg->path);
  ++next_segment_;
  if (!segments_.empty()) unsynced_.push_back(segments_.back());
  segments_.push_back(std::move(seg));
  dir_dirty_ = true;
  rotate_ = false;
  return Status::Ok();
}

Status LogJournal::WriteRecord(const Record& r, std::span<const uint8_t> payload) {
  if (rotate_ || segments_.back()->size >= options_.segment_bytes) {
    GEOFS_RETURN_IF_ERROR(OpenNewSegment());
  }
  Segment& seg = *segments_.back();
  uint8_t h[kHeaderSize];
  EncodeHeader(r, payload, h);
  iovec iov[2] = {{h, kHeaderSize}, {const_cast<uint8_t*>(payload.data()), payload.size()}};
  const uint64_t total = kHeaderSize + payload.size();
  uint64_t done = 0;
  while (done < total) {
    iovec part[2];
    int count = 0;
    uint64_t skip = done;
    for (const iovec& v : iov) {
      if (skip >= v.iov_len) {
        skip -= v.iov_len;
        continue;
      }
      part[count++] = {static_cast<uint8_t*>(v.iov_base) + skip, v.iov_len - skip};
      skip = 0;
    }
    const ssize_t n = io_->Pwritev(seg.fd, part, count, static_cast<off_t>(seg.size + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOSPC && payload.empty() && DropReserve()) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Nothing of a failed record may stay visible: a replay would stop
      // at it and ignore every record written after it.
      if (::ftruncate(seg.fd, static_cast<off_t>(seg.size)) != 0) rotate_ = true;
      return Status::FromErrno(err, "writing the write journal " + seg.path);
    }
    done += n;
  }
  seg.size += total;
  log_bytes_ += total;
  ++records_;
  return Status::Ok();
}

Result<uint64_t> LogJournal::Append(const FileKey& file, uint64_t offset,
                                    std::span<const uint8_t> data, WallTime mtime) {
  if (data.size() > kMaxRecordPayload) {
    return Status::InvalidArgument("write journal: a write is at most 1 GiB");
  }
  if (offset + data.size() < offset) return Status::InvalidArgument("write past 2^64");
  std::shared_ptr<Segment> flush;  // writeback to start once unlocked
  uint64_t flush_from = 0, flush_to = 0;
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    if (!sync_error_.ok()) return sync_error_;
    if (data.empty()) return next_seq_++;
    const uint64_t size = kHeaderSize + data.size();
    if (log_bytes_ + size > options_.max_bytes) {
      return Status::NoSpace("write journal full (" + std::to_string(log_bytes_) + " of " +
                             std::to_string(options_.max_bytes) + " bytes)");
    }
    Record r{RecordType::kWrite, next_seq_, file, offset, data.size()};
    GEOFS_RETURN_IF_ERROR(WriteRecord(r, data));
    seq = next_seq_++;
    ++appends_;
    const std::shared_ptr<Segment>& seg = segments_.back();
    Insert(file, offset, offset + data.size(), r.seq, seg, seg->size - data.size());
    FileState& f = files_[file];
    f.mtime = std::max(f.mtime, mtime);
    if (options_.bytes_per_sync > 0 && seg->size - seg->flushing >= options_.bytes_per_sync) {
      flush = seg;
      flush_from = seg->flushing;
      flush_to = seg->flushing = seg->size;
    }
  }
  if (flush) {
    io_->StartWriteback(flush->fd, static_cast<off_t>(flush_from),
                        static_cast<off_t>(flush_to - flush_from));
  }
  return seq;
}

Status LogJournal::Sync() {
  std::unique_lock lock(mu_);
  const uint64_t target = records_;
  for (;;) {
    if (!sync_error_.ok()) return sync_error_;
    if (synced_records_ >= target && !dir_dirty_) return Status::Ok();
    if (!syncing_) break;
    sync_cv_.wait(lock);
  }
  // This caller syncs for everyone who arrived so far.
  syncing_ = true;
  const uint64_t goal = records_;
  std::vector<std::shared_ptr<Segment>> to_sync = std::move(unsynced_);
  unsynced_.clear();
  to_sync.push_back(segments_.back());
  const bool sync_dir = dir_dirty_;
  dir_dirty_ = false;
  lock.unlock();

  Status s;
  for (const auto& seg : to_sync) {
    if (io_->Fdatasync(seg->fd) != 0) {
      s = Status::FromErrno(errno, "syncing " + seg->path);
      break;
    }
  }
  if (s.ok() && sync_dir && ::fsync(dir_fd_) != 0) {
    s = Status::FromErrno(errno, "syncing " + options_.dir);
  }

  lock.lock();
  syncing_ = false;
  if (s.ok()) {
    synced_records_ = std::max(synced_records_, goal);
    ++syncs_;
  } else {
    log_->error("write journal: {}; refusing further writes", s.ToString());
    if (s.code() != StatusCode::kNoSpace) s = Status::IoError(s.message());
    sync_error_ = s;
  }
  sync_cv_.notify_all();
  return s;
}

void LogJournal::AddPiece(FileState& f, uint64_t offset, Piece p) {
  f.bytes += p.end - offset;
  pending_bytes_ += p.end - offset;
  ++p.segment->live;
  f.pieces.emplace(offset, std::move(p));
}

std::map<uint64_t, Piece>::iterator LogJournal::ErasePiece(FileState& f,
                                                           std::map<uint64_t, Piece>::iterator it) {
  const uint64_t len = it->second.end - it->first;
  f.bytes -= len;
  pending_bytes_ -= len;
  --it->second.segment->live;
  return f.pieces.erase(it);
}

void LogJournal::Insert(const FileKey& file, uint64_t offset, uint64_t end, uint64_t seq,
                        const std::shared_ptr<Segment>& seg, uint64_t pos) {
  FileState& f = files_[file];
  if (f.pieces.empty()) f.since_seq = seq;
  f.last_seq = std::max(f.last_seq, seq);
  // Later writes win: cut what overlaps [offset, end) out of older pieces.
  auto it = f.pieces.lower_bound(offset);
  if (it != f.pieces.begin() && std::prev(it)->second.end > offset) --it;
  while (it != f.pieces.end() && it->first < end) {
    const uint64_t start = it->first;
    Piece old = it->second;
    it = ErasePiece(f, it);
    if (start < offset) AddPiece(f, start, Piece{offset, old.seq, old.segment, old.pos});
    if (old.end > end) {
      AddPiece(f, end, Piece{old.end, old.seq, old.segment, old.pos + (end - start)});
    }
  }
  AddPiece(f, offset, Piece{end, seq, seg, pos});
}

void LogJournal::Remove(const FileKey& file, uint64_t upto, uint64_t lo, uint64_t hi) {
  auto fit = files_.find(file);
  if (fit == files_.end()) return;
  FileState& f = fit->second;
  auto it = f.pieces.lower_bound(lo);
  if (it != f.pieces.begin() && std::prev(it)->second.end > lo) --it;
  while (it != f.pieces.end() && it->first < hi) {
    if (it->second.seq > upto) {
      ++it;
      continue;
    }
    const uint64_t start = it->first;
    Piece old = it->second;
    it = ErasePiece(f, it);
    if (start < lo) AddPiece(f, start, Piece{lo, old.seq, old.segment, old.pos});
    if (old.end > hi) {
      AddPiece(f, hi, Piece{old.end, old.seq, old.segment, old.pos + (hi - start)});
    }
  }
  if (f.pieces.empty()) {
    files_.erase(fit);
  } else {
    f.since_seq = std::max(f.since_seq, upto + 1);
  }
}

void LogJournal::CollectSegments() {
  // An active segment that holds only released writes is recycled too:
  // otherwise its dead bytes would stay until it reached segment_bytes,
  // and on a small or full disk the journal could never take a write again.
  const Segment& active = *segments_.back();
  if (active.live == 0 && active.size >= std::max<uint64_t>(options_.segment_bytes / 64, 1) &&
      !OpenNewSegment().ok()) {
    log_->warn("write journal: cannot start a new segment to recycle {}", active.path);
  }
  while (segments_.size() > 1 && segments_.front()->live == 0) {
    std::shared_ptr<Segment> seg = segments_.front();
    segments_.pop_front();
    std::erase(unsynced_, seg);
    if (::unlink(seg->path.c_str()) != 0) {
      log_->warn("write journal: cannot delete {}: {}", seg->path, std::strerror(errno));
    }
    log_bytes_ -= seg->size;
  }
  if (reserve_fd_ < 0) CreateReserve();
}

void LogJournal::CreateReserve() {
  if (options_.reserve_bytes == 0) return;
  const std::string path = options_.dir + "/" + kReserveName;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (::posix_fallocate(fd, 0, static_cast<off_t>(options_.reserve_bytes)) != 0) {
    // No room yet: try again when segments are deleted.
    ::close(fd);
    ::unlink(path.c_str());
    return;
  }
  reserve_fd_ = fd;
}

bool LogJournal::DropReserve() {
  if (reserve_fd_ < 0) return false;
  ::close(reserve_fd_);
  reserve_fd_ = -1;
  const std::string path = options_.dir + "/" + kReserveName;
  log_->warn("write journal: disk full; using the space reserved for releases");
  return ::unlink(path.c_str()) == 0;
}

Status LogJournal::ReleaseLocked(const FileKey& file, uint64_t upto_seq, uint64_t offset,
                                 uint64_t end) {
  if (!sync_error_.ok()) return sync_error_;
  Record r{RecordType::kRelease, upto_seq, file, offset, end - offset};
  GEOFS_RETURN_IF_ERROR(WriteRecord(r, {}));
  Remove(file, upto_seq, offset, end);
  return Status::Ok();
}

Status LogJournal::ReleaseRange(const FileKey& file, uint64_t upto_seq, uint64_t offset,
                                uint64_t length) {
  const uint64_t end = offset + std::min(length, UINT64_MAX - offset);
  {
    std::lock_guard lock(mu_);
    if (!files_.contains(file)) return Status::Ok();
    GEOFS_RETURN_IF_ERROR(ReleaseLocked(file, upto_seq, offset, end));
  }
  GEOFS_RETURN_IF_ERROR(Sync());
  // Only once the release record is durable may the writes it covers go.
  std::lock_guard lock(mu_);
  CollectSegments();
  return Status::Ok();
}

Status LogJournal::Discard(const FileKey& file) {
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(file);
    if (it == files_.end()) return Status::Ok();
    GEOFS_RETURN_IF_ERROR(ReleaseLocked(file, it->second.last_seq, 0, UINT64_MAX));
  }
  GEOFS_RETURN_IF_ERROR(Sync());
  std::lock_guard lock(mu_);
  CollectSegments();
  return Status::Ok();
}

std::vector<PendingRange> LogJournal::Read(const FileKey& file, uint64_t offset, uint64_t length,
                                           const Allocator& allocate) const {
  const uint64_t end = offset + std::min(length, UINT64_MAX - offset);
  struct Part {
    uint64_t offset, length;
    std::shared_ptr<Segment> segment;
    uint64_t pos;
  };
  std::vector<Part> parts;
  {
    std::lock_guard lock(mu_);
    auto fit = files_.find(file);
    if (fit == files_.end()) return {};
    const auto& pieces = fit->second.pieces;
    auto it = pieces.lower_bound(offset);
    if (it != pieces.begin() && std::prev(it)->second.end > offset) --it;
    for (; it != pieces.end() && it->first < end; ++it) {
      const uint64_t lo = std::max(it->first, offset);
      const uint64_t hi = std::min(it->second.end, end);
      parts.push_back({lo, hi - lo, it->second.segment, it->second.pos + (lo - it->first)});
    }
  }
  // Adjacent pieces become one range, read into one buffer.
  std::vector<PendingRange> out;
  for (size_t i = 0; i < parts.size();) {
    size_t j = i + 1;
    uint64_t run_end = parts[i].offset + parts[i].length;
    while (j < parts.size() && parts[j].offset == run_end) run_end += parts[j++].length;
    uint8_t* p;
    Buffer data = allocate(run_end - parts[i].offset, &p);
    Status s;
    for (size_t k = i; k < j && s.ok(); ++k) {
      s = PreadFull(parts[k].segment->fd, p + (parts[k].offset - parts[i].offset), parts[k].length,
                    parts[k].pos);
    }
    if (s.ok()) {
      out.push_back({parts[i].offset, std::move(data)});
    } else {
      log_->error("write journal: {}", s.ToString());
    }
    i = j;
  }
  return out;
}

FilePending LogJournal::Describe(const FileKey& key, const FileState& f) const {
  FilePending p;
  p.file = key;
  p.end = f.pieces.empty() ? 0 : f.pieces.rbegin()->second.end;
  p.upto_seq = f.last_seq;
  p.bytes = f.bytes;
  p.mtime = f.mtime;
  return p;
}

std::vector<FilePending> LogJournal::PendingFiles() const {
  std::vector<std::pair<uint64_t, FilePending>> order;
  {
    std::lock_guard lock(mu_);
    order.reserve(files_.size());
    for (const auto& [key, f] : files_) order.emplace_back(f.since_seq, Describe(key, f));
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FilePending> out;
  out.reserve(order.size());
  for (auto& [since, p] : order) out.push_back(std::move(p));
  return out;
}

std::optional<FilePending> LogJournal::Pending(const FileKey& file) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(file);
  if (it == files_.end()) return std::nullopt;
  return Describe(file, it->second);
}

std::vector<PendingSpan> LogJournal::Spans(const FileKey& file) const {
  std::lock_guard lock(mu_);
  std::vector<PendingSpan> out;
  auto it = files_.find(file);
  if (it == files_.end()) return out;
  for (const auto& [offset, piece] : it->second.pieces) {
    if (!out.empty() && out.back().offset + out.back().length == offset) {
      out.back().length += piece.end - offset;
    } else {
      out.push_back({offset, piece.end - offset});
    }
  }
  return out;
}

WriteJournalStats LogJournal::Stats() const {
  std::lock_guard lock(mu_);
  WriteJournalStats s;
  s.pending_files = files_.size();
  s.pending_bytes = pending_bytes_;
  s.log_bytes = log_bytes_;
  s.appends = appends_;
  s.syncs = syncs_;
  return s;
}

}  // namespace

ssize_t JournalIo::Pwritev(int fd, const struct iovec* iov, int count, off_t offset) {
  return ::pwritev(fd, iov, count, offset);
}

int JournalIo::Fdatasync(int fd) { return ::fdatasync(fd); }

int JournalIo::StartWriteback(int fd, off_t offset, off_t length) {
  return ::sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

std::shared_ptr<JournalIo> JournalIo::Default() {
  static const auto io = std::make_shared<JournalIo>();
  return io;
}

Result<std::unique_ptr<WriteJournal>> WriteJournal::Open(const WriteJournalOptions& options) {
  if (options.dir.empty()) return Status::InvalidArgument("write journal: no directory");
  if (options.segment_bytes == 0) {
    return Status::InvalidArgument("write journal: segment_bytes must be positive");
  }
  auto journal = std::make_unique<LogJournal>(options);
  GEOFS_RETURN_IF_ERROR(journal->Init());
  return std::unique_ptr<WriteJournal>(std::move(journal));
}

}  // namespace geofs::spoke
