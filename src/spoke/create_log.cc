#include "spoke/create_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>

#include "common/crc32c.h"
#include "common/logging.h"

namespace geofs::spoke {
namespace {

constexpr uint8_t kPut = 1;
constexpr uint8_t kDrop = 2;
// crc (4) + body length (4); the body: kind (1), ino (8), gen (8), request.
constexpr size_t kFrameSize = 8;
constexpr size_t kBodyFixed = 17;
// A CreateRequest holds a name (255 bytes) and credentials (16 groups):
// a longer body is corruption.
constexpr uint32_t kMaxBody = 64 << 10;

template <typename T>
void PutLe(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
template <typename T>
T GetLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

uint32_t Checksum(std::string_view s) {
  return Crc32c(0, {reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

std::string Encode(uint8_t kind, uint64_t ino, uint64_t gen, std::string_view request) {
  std::string body;
  body.reserve(kBodyFixed + request.size());
  body.push_back(static_cast<char>(kind));
  PutLe(body, ino);
  PutLe(body, gen);
  body.append(request);
  std::string frame;
  frame.reserve(kFrameSize + body.size());
  PutLe(frame, Checksum(body));
  PutLe(frame, static_cast<uint32_t>(body.size()));
  frame += body;
  return frame;
}

Status WriteAll(int fd, std::string_view data, uint64_t offset, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, path);
    }
    data.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status::FromErrno(err, dir);
}

}  // namespace

Result<std::unique_ptr<CreateLog>> CreateLog::Open(const CreateLogOptions& options,
                                                   std::vector<LoggedCreate>* open) {
  int fd = ::open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, options.path);
  std::unique_ptr<CreateLog> log(new CreateLog(options, fd));
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, options.path);
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  size_t pos = 0;
  while (data.size() - pos >= kFrameSize) {
    const uint32_t crc = GetLe<uint32_t>(data.data() + pos);
    const uint32_t len = GetLe<uint32_t>(data.data() + pos + 4);
    if (len < kBodyFixed || len > kMaxBody || data.size() - pos - kFrameSize < len) break;
    std::string_view body(data.data() + pos + kFrameSize, len);
    if (Checksum(body) != crc) break;
    const uint8_t kind = static_cast<uint8_t>(body[0]);
    const uint64_t ino = GetLe<uint64_t>(body.data() + 1);
    const uint64_t gen = GetLe<uint64_t>(body.data() + 9);
    if (kind == kPut) {
      log->open_[ino] = LoggedCreate{ino, gen, std::string(body.substr(kBodyFixed))};
    } else if (kind == kDrop) {
      log->open_.erase(ino);
    } else {
      break;
    }
    pos += kFrameSize + len;
  }
  if (pos != data.size()) {
    GetLogger("create_log")
        ->warn("{}: cutting off {} bytes of torn or corrupt records at offset {}", options.path,
               data.size() - pos, pos);
    if (::ftruncate(fd, static_cast<off_t>(pos)) != 0 || ::fdatasync(fd) != 0) {
      return Status::FromErrno(errno, options.path);
    }
  }
  log->end_ = pos;
  open->clear();
  for (const auto& [ino, create] : log->open_) open->push_back(create);
  log->syncer_ = std::thread([l = log.get()] { l->SyncLoop(); });
  return log;
}

CreateLog::CreateLog(CreateLogOptions options, int fd) : options_(std::move(options)), fd_(fd) {}

CreateLog::~CreateLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  ::close(fd_);
}

Status CreateLog::AppendLocked(uint8_t kind, uint64_t ino, uint64_t gen, std::string_view request) {
  const std::string frame = Encode(kind, ino, gen, request);
  if (Status s = WriteAll(fd_, frame, end_, options_.path); !s.ok()) {
    // Leave no partial record for a later append to follow.
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) {
      GetLogger("create_log")
          ->error("{}: cannot cut a failed append: {}", options_.path, std::strerror(errno));
    }
    return s;
  }
  end_ += frame.size();
  ++appended_;
  return Status::Ok();
}

Status CreateLog::Put(const LoggedCreate& create) {
  std::lock_guard lock(mu_);
  GEOFS_RETURN_IF_ERROR(AppendLocked(kPut, create.ino, create.gen, create.request));
  open_[create.ino] = create;
  return Status::Ok();
}

Status CreateLog::Drop(uint64_t ino) {
  std::lock_guard lock(mu_);
  GEOFS_RETURN_IF_ERROR(AppendLocked(kDrop, ino, 0, {}));
  open_.erase(ino);
  return Status::Ok();
}

Status CreateLog::Sync() {
  std::promise<Status> promise;
  auto future = promise.get_future();
  SyncThen([&promise](Status s) { promise.set_value(std::move(s)); });
  return future.get();
}

void CreateLog::SyncThen(std::function<void(Status)> done) {
  {
    std::lock_guard lock(mu_);
    waiting_.push_back(std::move(done));
  }
  cv_.notify_all();
}

void CreateLog::SyncLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !waiting_.empty(); });
    if (waiting_.empty()) return;  // stopping, nobody waits
    // Everyone waiting now shares this sync: their records are all written.
    std::vector<std::function<void(Status)>> batch = std::move(waiting_);
    waiting_.clear();
    Status s = error_;
    if (s.ok()) {
      if (end_ > options_.compact_bytes) {
        s = CompactLocked();
      } else {
        const int fd = fd_;
        lock.unlock();
        // fd_ changes only in CompactLocked, which runs on this thread.
        if (::fdatasync(fd) != 0) s = Status::FromErrno(errno, options_.path);
        lock.lock();
      }
      if (!s.ok()) {
        GetLogger("create_log")->error("{}: sync failed: {}", options_.path, s.ToString());
        error_ = s;
      }
    }
    lock.unlock();
    for (auto& done : batch) done(s);
    lock.lock();
  }
}

Status CreateLog::CompactLocked() {
  const std::string tmp = options_.path + ".new";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, tmp);
  std::string data;
  for (const auto& [ino, create] : open_) data += Encode(kPut, ino, create.gen, create.request);
  Status s = WriteAll(fd, data, 0, tmp);
  if (s.ok() && ::fdatasync(fd) != 0) s = Status::FromErrno(errno, tmp);
  if (s.ok() && ::rename(tmp.c_str(), options_.path.c_str()) != 0) {
    s = Status::FromErrno(errno, options_.path);
  }
  if (!s.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd_);
  fd_ = fd;
  end_ = data.size();
  return SyncDir(options_.path);
}

size_t CreateLog::open_creates() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

uint64_t CreateLog::bytes() const {
  std::lock_guard lock(mu_);
  return end_;
}

}  // namespace geofs::spoke
