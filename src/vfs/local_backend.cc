#include "vfs/local_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "vfs/access.h"
#include "vfs/dir_cache.h"
#include "vfs/fd_cache.h"
#include "vfs/page_cache.h"

namespace geofs::vfs {
namespace {

constexpr size_t kTypeBytes = 4;
constexpr size_t kMaxFileHandleBytes = kMaxHandleBytes - kTypeBytes;
// Cookies are d_off values, valid for as long as the file system keeps them
// (always, for hash-ordered ext4 directories), so one verifier serves all.
constexpr uint64_t kCookieVerifier = 0x67656f6673763031;  // "geofsv01"
constexpr size_t kMinDirBufferBytes = 1024;
constexpr size_t kMaxDirBufferBytes = 32 * 1024;
constexpr int kMaxDepth = kMaxPathBytes / 2;
constexpr int kCreateAttempts = 3;
// READs of at least this many cached bytes are sent with sendfile; below it
// a copy costs about the same as the extra system call that checks the cache.
constexpr uint64_t kSendfileMinBytes = 32 * 1024;
// File times come from a coarse clock (one tick is 1-10 ms): a directory
// changed less than this before we stat it may change again without its
// times moving, so its contents are not cached yet.
constexpr int64_t kRacyWindowNs = 50'000'000;

// A file_handle with room for the largest f_handle a backend handle holds.
struct FileHandleBuffer {
  file_handle header;
  unsigned char storage[kMaxFileHandleBytes];
};

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

Status Errno(std::string_view context) { return Status::FromErrno(errno, context); }

// Maps a failed rmdir/rename: some file systems say EEXIST for "not empty".
Status NamespaceErrno(std::string_view context) {
  if (errno == EEXIST || errno == ENOTEMPTY) return Status::NotEmpty(context);
  return Errno(context);
}

// open_by_handle_at, retried a few times (~1.5 ms in all) on ENOMEM. Besides
// a real allocation failure, ENOMEM has been seen here (ext4, kernel 6.18)
// for a file unlinked an instant before, a transient state while its inode
// is evicted; once it settles, the handle gets its proper ESTALE.
int OpenByHandle(int root_fd, struct file_handle* fh, int flags) {
  constexpr int kAttempts = 4;
  int fd = -1;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    fd = ::open_by_handle_at(root_fd, fh, flags);
    if (fd >= 0 || errno != ENOMEM) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100 << attempt));
  }
  return fd;
}

Status HandleOpenErrno() {
  switch (errno) {
    case ESTALE:
    case ENOENT:
      return Status::Stale();
    case EINVAL:
    case EOVERFLOW:
      return Status::BadHandle();
    default:
      return Errno("open_by_handle_at");
  }
}

FileType TypeOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return FileType::kDirectory;
    case S_IFLNK:
      return FileType::kSymlink;
    case S_IFBLK:
      return FileType::kBlockDevice;
    case S_IFCHR:
      return FileType::kCharDevice;
    case S_IFSOCK:
      return FileType::kSocket;
    case S_IFIFO:
      return FileType::kFifo;
    default:
      return FileType::kRegular;
  }
}

WallTime ToWallTime(const timespec& ts) {
  return {static_cast<int64_t>(ts.tv_sec), static_cast<uint32_t>(ts.tv_nsec)};
}

Attr ToAttr(const struct stat& st) {
  Attr a;
  a.type = TypeOf(st.st_mode);
  a.mode = st.st_mode & kModeMask;
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.size = static_cast<uint64_t>(st.st_size);
  a.used = static_cast<uint64_t>(st.st_blocks) * 512;
  a.rdev_major = major(st.st_rdev);
  a.rdev_minor = minor(st.st_rdev);
  a.fileid = st.st_ino;
  a.atime = ToWallTime(st.st_atim);
  a.mtime = ToWallTime(st.st_mtim);
  a.ctime = ToWallTime(st.st_ctim);
  return a;
}

Attr Prototype(FileType type, const NewOwnership& own) {
  Attr a;
  a.type = type;
  a.mode = own.mode;
  a.uid = own.uid;
  a.gid = own.gid;
  return a;
}

timespec ToTimespec(TimeUpdate how, WallTime t) {
  switch (how) {
    case TimeUpdate::kDontChange:
      return {0, UTIME_OMIT};
    case TimeUpdate::kServerTime:
      return {0, UTIME_NOW};
    case TimeUpdate::kClientTime:
      break;
  }
  return {static_cast<time_t>(t.sec), static_cast<long>(t.nsec)};
}

// The two halves of an EXCLUSIVE create verifier, stored as mtime and atime
// seconds of the new file.
std::pair<WallTime, WallTime> VerifierTimes(const std::array<uint8_t, 8>& v) {
  auto half = [&](int at) {
    uint32_t x = 0;
    for (int i = 0; i < 4; ++i) x = (x << 8) | v[at + i];
    return WallTime{x, 0};
  };
  return {half(0), half(4)};
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string ProcFdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

Result<std::string> ReadProcFdPath(int fd) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(ProcFdPath(fd).c_str(), buf, sizeof(buf));
  if (n < 0) return Errno("readlink /proc/self/fd");
  return std::string(buf, static_cast<size_t>(n));
}

Result<struct stat> Fstat(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Errno("fstat");
  return st;
}

Handle EncodeHandle(const FileHandleBuffer& fh) {
  uint8_t bytes[kMaxHandleBytes];
  const uint32_t type = static_cast<uint32_t>(fh.header.handle_type);
  for (size_t i = 0; i < kTypeBytes; ++i) bytes[i] = static_cast<uint8_t>(type >> (24 - 8 * i));
  std::memcpy(bytes + kTypeBytes, fh.header.f_handle, fh.header.handle_bytes);
  return Handle(std::span<const uint8_t>(bytes, kTypeBytes + fh.header.handle_bytes));
}

// The handle of `name` in `dirfd` (of `dirfd` itself if `name` is empty);
// symlinks are not followed.
Result<Handle> HandleAt(int dirfd, const char* name) {
  FileHandleBuffer fh;
  fh.header.handle_bytes = kMaxFileHandleBytes;
  int mount_id;
  const int flags = *name == '\0' ? AT_EMPTY_PATH : 0;
  if (::name_to_handle_at(dirfd, name, &fh.header, &mount_id, flags) != 0) {
    if (errno == EOVERFLOW) return Status::NotSupported("file handles too long");
    return Errno("name_to_handle_at");
  }
  return EncodeHandle(fh);
}

Result<FileHandleBuffer> DecodeHandle(const Handle& h) {
  // Kernel handles are whole 32-bit words; anything else was not made here.
  if (h.size() <= kTypeBytes || (h.size() - kTypeBytes) % 4 != 0) return Status::BadHandle();
  FileHandleBuffer fh;
  const uint8_t* b = h.bytes().data();
  uint32_t type = 0;
  for (size_t i = 0; i < kTypeBytes; ++i) type = (type << 8) | b[i];
  if (type > INT_MAX) return Status::BadHandle();
  fh.header.handle_type = static_cast<int>(type);
  fh.header.handle_bytes = static_cast<unsigned>(h.size() - kTypeBytes);
  std::memcpy(fh.header.f_handle, b + kTypeBytes, fh.header.handle_bytes);
  return fh;
}

// The descriptor cache size that fits under RLIMIT_NOFILE next to
// everything else the process keeps open (`kOtherDescriptors`), raising the
// soft limit (and the hard one, if the process may) if needed.
size_t FitDescriptorBudget(size_t wanted) {
  constexpr rlim_t kOtherDescriptors = 1024;
  wanted = std::max<size_t>(wanted, 1);
  rlimit lim;
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return wanted;
  const rlim_t need = wanted + kOtherDescriptors;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return wanted;
  rlimit raised = lim;
  raised.rlim_cur = need;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) raised.rlim_max = need;
  if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return wanted;
  raised = lim;
  raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? need : std::min(need, lim.rlim_max);
  if (raised.rlim_cur > lim.rlim_cur && ::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  if (lim.rlim_cur >= need) return wanted;
  return std::max<size_t>(lim.rlim_cur - std::min(lim.rlim_cur, kOtherDescriptors),
                          std::max<rlim_t>(lim.rlim_cur / 2, 1));
}

int64_t RealNanos() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

AttrCache::Time SteadyNow() { return std::chrono::steady_clock::now(); }

bool IsUnder(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

class LocalBackend::Fs {
 public:
  enum class Need { kAny, kRead, kWrite };

  static Result<std::unique_ptr<Fs>> Open(const std::string& root_dir,
                                          const LocalBackendOptions& options) {
    UniqueFd root(::open(root_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return Errno(root_dir);
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(root.get()));
    // kNotSupported: no file handles on this file system, or too long ones.
    GEOFS_ASSIGN_OR_RETURN(Handle handle, HandleAt(root.get(), ""));
    GEOFS_ASSIGN_OR_RETURN(FileHandleBuffer fh, DecodeHandle(handle));
    UniqueFd probe(::open_by_handle_at(root.get(), &fh.header, O_PATH | O_CLOEXEC));
    if (!probe.valid()) {
      if (errno == EPERM) {
        return Status::NotPermitted("open_by_handle_at needs CAP_DAC_READ_SEARCH (run as root)");
      }
      return Errno("open_by_handle_at");
    }
    GEOFS_ASSIGN_OR_RETURN(std::string root_path, ReadProcFdPath(root.get()));

    Capabilities caps;
    if (long v = ::fpathconf(root.get(), _PC_LINK_MAX); v > 0) caps.link_max = v;
    if (long v = ::fpathconf(root.get(), _PC_NAME_MAX); v > 0) {
      caps.name_max = std::min<uint32_t>(v, kMaxNameBytes);
    }
    if (long bits = ::fpathconf(root.get(), _PC_FILESIZEBITS); bits > 0 && bits < 64) {
      caps.max_file_size = (uint64_t{1} << (bits - 1)) - 1;
    }
    const size_t cache_size = FitDescriptorBudget(options.max_open_files);
    auto log = GetLogger("vfs.local");
    if (cache_size < options.max_open_files) {
      log->warn("RLIMIT_NOFILE too low for {} cached descriptors; caching {}",
                options.max_open_files, cache_size);
    }
    log->info("serving {} ({} byte handles)", root_path, handle.size());
    return std::unique_ptr<Fs>(
        new Fs(std::move(root), st, handle, std::move(root_path), caps, options, cache_size));
  }

  size_t CachedFileCount() const { return fds_.size(); }
  size_t CachedNameCount() const { return dir_cache_.size(); }
  const Capabilities& capabilities() const { return caps_; }
  const LocalBackendOptions& options() const { return options_; }
  const Handle& root_handle() const { return root_handle_; }

  Result<Attr> GetAttr(const Handle& h) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    return ToAttr(st);
  }

  Result<Wcc> SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& req,
                      std::optional<WallTime> guard_ctime) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, req.size ? Need::kWrite : Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    const Attr cur = ToAttr(st);
    Wcc wcc;
    wcc.before = ToWcc(cur);
    if (guard_ctime && *guard_ctime != cur.ctime) return Status::NotSync();
    GEOFS_RETURN_IF_ERROR(CheckSetAttr(cur, req, cred));
    const AttrCache::Time now = SteadyNow();
    GEOFS_ASSIGN_OR_RETURN(struct stat after,
                           Apply(*f, cur.type, req, ModeAfterSetAttr(cur, req, cred), st));
    if (options_.sync_metadata) GEOFS_RETURN_IF_ERROR(SyncObject(*f));
    wcc.after = Remember(after, now);
    return wcc;
  }

  Result<LookupReply> Lookup(const Credentials& cred, const Handle& dir_handle,
                             std::string_view name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    const int64_t now = RealNanos();
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir_attr, cred));
    const DirStamp stamp = DirStamp::Of(dst);
    const bool trusted = Trusted(dst, now);
    const std::string cname(name);
    if (trusted) {
      if (std::optional<Entry> known = KnownChild(dir_handle, stamp, dir->fd(), cname)) {
        return LookupReply{std::move(*known), dir_attr};
      }
    }
    GEOFS_ASSIGN_OR_RETURN(Entry child, OpenChild(dir->fd(), cname.c_str(), true));
    if (trusted) {
      const std::pair<std::string_view, NameInfo> memo{
          name, {child.attr.fileid, child.attr.type, child.handle}};
      dir_cache_.InsertNames(dir_handle, stamp, {&memo, 1});
    }
    return LookupReply{std::move(child), dir_attr};
  }

  Result<LookupReply> LookupParent(const Credentials& cred, const Handle& dir_handle) {
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir_attr, cred));
    GEOFS_ASSIGN_OR_RETURN(Entry parent, ParentEntry(dir_handle, dir->fd(), dir_attr));
    return LookupReply{std::move(parent), dir_attr};
  }

  Result<AccessReply> Access(const Credentials& cred, const Handle& h, uint32_t requested) {
    GEOFS_ASSIGN_OR_RETURN(Attr attr, GetAttr(h));
    return AccessReply{GrantedAccess(attr, cred, requested), attr};
  }

  Result<ReadLinkReply> ReadLink(const Handle& h) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    if (!S_ISLNK(st.st_mode)) return Status::InvalidArgument("not a symlink");
    char buf[kMaxPathBytes + 1];
    ssize_t n = ::readlinkat(f->fd(), "", buf, sizeof(buf));
    if (n < 0) return Errno("readlinkat");
    return ReadLinkReply{std::string(buf, static_cast<size_t>(n)), ToAttr(st)};
  }

  // With `nowait`, a read that would wait for the disk reads nothing and
  // sets *would_block instead (the reply is then meaningless).
  Result<ReadReply> Read(const Credentials& cred, const Handle& h, uint64_t offset,
                         uint32_t count, bool nowait = false, bool* would_block = nullptr) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kRead));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    ReadReply reply;
    reply.attr = ToAttr(st);
    GEOFS_RETURN_IF_ERROR(CheckRead(*reply.attr, cred));
    const uint64_t size = reply.attr->size;
    const uint64_t want = offset >= size ? 0 : std::min<uint64_t>(count, size - offset);
    reply.eof = offset + want >= size;
    // Cached data leaves through sendfile, without a copy into memory;
    // anything else is read into memory by a thread that may wait, so the
    // network thread that sends it never waits on the disk. Small reads are
    // cheaper copied.
    if (want >= kSendfileMinBytes) {
      if (RangeInPageCache(f->fd(), offset, want)) {
        reply.file = FileRange{f, f->fd(), offset, want};
        return reply;
      }
      if (nowait) {
        *would_block = true;
        return reply;
      }
    }
    uint8_t* out;
    reply.data = Buffer::Allocate(want, &out);
    uint64_t done = 0;
    if (nowait && want > 0) {
      // All or nothing: a partly cached range, a file that shrank, or a
      // file system without RWF_NOWAIT goes to the blocking path.
      iovec iov{out, want};
      ssize_t n = ::preadv2(f->fd(), &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
      if (n != static_cast<ssize_t>(want)) {
        *would_block = true;
        return reply;
      }
      done = want;
    }
    while (done < want) {
      ssize_t n = ::pread(f->fd(), out + done, want - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("pread");
      if (n == 0) break;
      done += static_cast<uint64_t>(n);
    }
    reply.data.Truncate(done);
    reply.eof = offset + done >= size;  // the file may have shrunk meanwhile
    return reply;
  }

  Result<WriteReply> Write(const Credentials& cred, const Handle& h, uint64_t offset,
                           const Buffer& data, Stability stability) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kWrite));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    const Attr cur = ToAttr(st);
    WriteReply reply;
    reply.wcc.before = ToWcc(cur);
    GEOFS_RETURN_IF_ERROR(CheckWrite(cur, cred));
    constexpr uint64_t kMaxOffset = std::numeric_limits<off_t>::max();
    if (offset > kMaxOffset || data.size() > kMaxOffset - offset) return Status::FileTooLarge();
    const int flags = stability == Stability::kFileSync   ? RWF_SYNC
                      : stability == Stability::kDataSync ? RWF_DSYNC
                                                          : 0;
    size_t done = 0;
    while (done < data.size()) {
      iovec iov{const_cast<uint8_t*>(data.data()) + done, data.size() - done};
      ssize_t n = ::pwritev2(f->fd(), &iov, 1, static_cast<off_t>(offset + done), flags);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("pwrite");
      done += static_cast<size_t>(n);
    }
    const uint32_t mode = ModeAfterWrite(cur, cred);
    if (done > 0 && mode != cur.mode && ::fchmod(f->fd(), mode) != 0) return Errno("fchmod");
    const AttrCache::Time now = SteadyNow();
    GEOFS_ASSIGN_OR_RETURN(struct stat after, Fstat(f->fd()));
    reply.count = static_cast<uint32_t>(done);
    reply.committed = stability;
    reply.wcc.after = Remember(after, now);
    return reply;
  }

  Result<CreateReply> Create(const Credentials& cred, const Handle& dir_handle,
                             std::string_view name, const CreateRequest& req) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir_attr, cred));
    CreateReply reply;
    reply.dir_wcc.before = ToWcc(dir_attr);

    SetAttrs rest;
    NewOwnership own;
    if (req.mode == CreateMode::kExclusive) {
      own = NewObjectOwnership(dir_attr, cred, FileType::kRegular, 0);
      auto [mtime, atime] = VerifierTimes(req.verifier);
      rest.mtime_how = rest.atime_how = TimeUpdate::kClientTime;
      rest.mtime = mtime;
      rest.atime = atime;
    } else {
      own = NewObjectOwnership(dir_attr, cred, FileType::kRegular, req.attrs.mode.value_or(0));
      rest = req.attrs;
      rest.mode.reset();
    }
    const Attr proto = Prototype(FileType::kRegular, own);
    // Everything is checked before the file exists, so nothing needs undoing.
    Status may_create = CheckDirWrite(dir_attr, cred);
    if (may_create.ok()) may_create = CheckSetAttr(proto, rest, cred);

    const std::string cname(name);
    for (int attempt = 0; attempt < kCreateAttempts; ++attempt) {
      if (may_create.ok()) {
        UniqueFd fd(::openat(dir->fd(), cname.c_str(),
                             O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, own.mode & 0777));
        if (fd.valid()) {
          auto obj = std::make_shared<const OpenFd>(fd.Release(), FdAccess::kReadWrite,
                                                    FileType::kRegular);
          GEOFS_ASSIGN_OR_RETURN(reply.object,
                                 FinishCreate(dir->fd(), cname.c_str(), obj, proto, rest, cred));
          GEOFS_ASSIGN_OR_RETURN(reply.dir_wcc.after, DirAfterChange(*dir));
          return reply;
        }
        if (errno != EEXIST) return Errno(name);
      }
      Result<Entry> existing = OpenExisting(cred, dir->fd(), cname.c_str(), req);
      if (existing.ok()) {
        reply.object = std::move(existing).value();
        reply.dir_wcc.after = dir_attr;
        return reply;
      }
      if (existing.status().code() != StatusCode::kNotFound) return existing.status();
      if (!may_create.ok()) return may_create;
      // The name was removed between our create and open attempts: again.
    }
    return Status::Unavailable("create kept racing with removal");
  }

  Result<CreateReply> Mkdir(const Credentials& cred, const Handle& dir_handle,
                            std::string_view name, const SetAttrs& attrs) {
    return CreateNode(
        cred, dir_handle, name, FileType::kDirectory, attrs,
        [](int dirfd, const char* n, uint32_t mode) { return ::mkdirat(dirfd, n, mode); });
  }

  Result<CreateReply> Symlink(const Credentials& cred, const Handle& dir_handle,
                              std::string_view name, std::string_view target,
                              const SetAttrs& attrs) {
    GEOFS_RETURN_IF_ERROR(ValidateSymlinkTarget(target));
    SetAttrs symlink_attrs = attrs;
    symlink_attrs.mode = 0777;  // symlink permissions are never consulted
    const std::string ctarget(target);
    return CreateNode(
        cred, dir_handle, name, FileType::kSymlink, symlink_attrs,
        [&](int dirfd, const char* n, uint32_t) { return ::symlinkat(ctarget.c_str(), dirfd, n); });
  }

  Result<CreateReply> Mknod(const Credentials& cred, const Handle& dir_handle,
                            std::string_view name, const MknodRequest& req) {
    mode_t format;
    dev_t rdev = 0;
    switch (req.type) {
      case FileType::kCharDevice:
      case FileType::kBlockDevice:
        if (!IsRoot(cred)) return Status::NotPermitted("only root may create devices");
        format = req.type == FileType::kCharDevice ? S_IFCHR : S_IFBLK;
        rdev = makedev(req.rdev_major, req.rdev_minor);
        break;
      case FileType::kSocket:
        format = S_IFSOCK;
        break;
      case FileType::kFifo:
        format = S_IFIFO;
        break;
      default:
        return Status::InvalidArgument("mknod of an unsupported type");
    }
    return CreateNode(cred, dir_handle, name, req.type, req.attrs,
                      [&](int dirfd, const char* n, uint32_t mode) {
                        return ::mknodat(dirfd, n, format | mode, rdev);
                      });
  }

  Result<Wcc> Remove(const Credentials& cred, const Handle& dir_handle, std::string_view name,
                     bool want_dir) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir_attr, cred));
    Wcc wcc;
    wcc.before = ToWcc(dir_attr);
    const std::string cname(name);
    struct stat vst;
    if (::fstatat(dir->fd(), cname.c_str(), &vst, AT_SYMLINK_NOFOLLOW) != 0) return Errno(name);
    GEOFS_RETURN_IF_ERROR(CheckDelete(dir_attr, ToAttr(vst), cred));
    if (want_dir && !S_ISDIR(vst.st_mode)) return Status::NotDirectory(name);
    if (!want_dir && S_ISDIR(vst.st_mode)) return Status::IsDirectory(name);
    std::optional<Handle> victim = HandleIfLastLink(dir->fd(), cname.c_str(), vst);
    if (::unlinkat(dir->fd(), cname.c_str(), want_dir ? AT_REMOVEDIR : 0) != 0) {
      return NamespaceErrno(name);
    }
    if (victim) fds_.Erase(*victim);
    attrs_.Erase(vst.st_ino);
    GEOFS_ASSIGN_OR_RETURN(wcc.after, DirAfterChange(*dir));
    return wcc;
  }

  Result<RenameReply> Rename(const Credentials& cred, const Handle& from_handle,
                             std::string_view from_name, const Handle& to_handle,
                             std::string_view to_name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(from_name));
    GEOFS_RETURN_IF_ERROR(ValidateName(to_name));
    GEOFS_ASSIGN_OR_RETURN(auto from, OpenHandle(from_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(auto to, OpenHandle(to_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat from_st, LiveStat(from_handle, *from));
    GEOFS_ASSIGN_OR_RETURN(struct stat to_st, LiveStat(to_handle, *to));
    const Attr from_attr = ToAttr(from_st);
    const Attr to_attr = ToAttr(to_st);
    GEOFS_RETURN_IF_ERROR(CheckSearch(from_attr, cred));
    GEOFS_RETURN_IF_ERROR(CheckSearch(to_attr, cred));
    RenameReply reply;
    reply.from_dir_wcc.before = ToWcc(from_attr);
    reply.to_dir_wcc.before = ToWcc(to_attr);

    const std::string src_name(from_name), dst_name(to_name);
    struct stat src;
    if (::fstatat(from->fd(), src_name.c_str(), &src, AT_SYMLINK_NOFOLLOW) != 0) {
      return Errno(from_name);
    }
    GEOFS_RETURN_IF_ERROR(CheckDelete(from_attr, ToAttr(src), cred));
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(to_attr, cred));
    struct stat dst;
    const bool dst_exists = ::fstatat(to->fd(), dst_name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) == 0;
    if (!dst_exists && errno != ENOENT) return Errno(to_name);
    if (dst_exists) GEOFS_RETURN_IF_ERROR(CheckDelete(to_attr, ToAttr(dst), cred));
    // Moving a directory rewrites its "..".
    if (S_ISDIR(src.st_mode) && !SameFile(from_st, to_st) &&
        !HasPermission(ToAttr(src), cred, kMayWrite)) {
      return Status::AccessDenied("moving a directory needs write permission on it");
    }
    // The kernel checks the rest (same file, types, emptiness, loops).
    std::optional<Handle> victim;
    if (dst_exists && !SameFile(src, dst)) {
      victim = HandleIfLastLink(to->fd(), dst_name.c_str(), dst);
    }
    if (::renameat(from->fd(), src_name.c_str(), to->fd(), dst_name.c_str()) != 0) {
      return NamespaceErrno(to_name);
    }
    if (victim) fds_.Erase(*victim);
    attrs_.Erase(src.st_ino);
    if (dst_exists) attrs_.Erase(dst.st_ino);
    GEOFS_ASSIGN_OR_RETURN(reply.from_dir_wcc.after, DirAfterChange(*from));
    GEOFS_ASSIGN_OR_RETURN(reply.to_dir_wcc.after, DirAfterChange(*to));
    return reply;
  }

  Result<LinkReply> Link(const Credentials& cred, const Handle& file_handle,
                         const Handle& dir_handle, std::string_view name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    GEOFS_ASSIGN_OR_RETURN(auto file, OpenHandle(file_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat fst, LiveStat(file_handle, *file));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    LinkReply reply;
    reply.dir_wcc.before = ToWcc(dir_attr);
    if (S_ISDIR(fst.st_mode)) return Status::IsDirectory("cannot link a directory");
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir_attr, cred));
    if (::linkat(file->fd(), "", dir->fd(), std::string(name).c_str(), AT_EMPTY_PATH) != 0) {
      return Errno(name);
    }
    if (options_.sync_metadata) GEOFS_RETURN_IF_ERROR(SyncObject(*file));
    attrs_.Erase(fst.st_ino);
    GEOFS_ASSIGN_OR_RETURN(struct stat after, Fstat(file->fd()));
    reply.file_attr = ToAttr(after);
    GEOFS_ASSIGN_OR_RETURN(reply.dir_wcc.after, DirAfterChange(*dir));
    return reply;
  }

  Result<DirPage> ReadDir(const Credentials& cred, const Handle& dir_handle,
                          const ReadDirRequest& req) {
    if (req.max_entries == 0) return Status::TooSmall("max_entries is 0");
    const int64_t now = RealNanos();
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckList(dir_attr, cred));
    const bool with_attrs = req.with_attrs && HasPermission(dir_attr, cred, kMayExec);
    DirPage page;
    page.verifier = kCookieVerifier;
    page.dir_attr = dir_attr;

    const DirStamp stamp = DirStamp::Of(dst);
    std::shared_ptr<const DirListing> listing = dir_cache_.FindListing(dir_handle, stamp);
    if (!listing && Trusted(dst, now)) {
      GEOFS_ASSIGN_OR_RETURN(listing, ReadListing(*dir));
      if (listing) dir_cache_.InsertListing(dir_handle, stamp, listing);
    }
    std::optional<size_t> start;
    if (listing) start = listing->StartAfter(req.cookie);
    if (!start) {
      GEOFS_RETURN_IF_ERROR(ReadDirFromDisk(dir_handle, *dir, dir_attr, req, with_attrs, &page));
      return page;
    }
    const auto& items = listing->items();
    const size_t end = std::min<size_t>(items.size(), *start + req.max_entries);
    page.eof = end == items.size();
    std::vector<size_t> children;  // listing indexes of the entries needing attributes
    page.entries.resize(end - *start);
    for (size_t i = *start; i < end; ++i) {
      const DirListing::Item& item = items[i];
      DirEntry& e = page.entries[i - *start];
      e.name = item.name;
      e.fileid = item.ino;
      e.cookie = item.cookie;
      if (!DotEntry(dir_handle, *dir, dir_attr, with_attrs, &e) && with_attrs) {
        children.push_back(i);
      }
    }
    if (!children.empty()) {
      FillChildren(dir_handle, stamp, dir->fd(), *listing, children, page.entries, *start);
    }
    return page;
  }

  Result<FsStats> FsStat(const Handle& h) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    struct statfs sf;
    if (::fstatfs(f->fd(), &sf) != 0) return Errno("fstatfs");
    const uint64_t block = sf.f_frsize ? sf.f_frsize : sf.f_bsize;
    FsStats s;
    s.total_bytes = sf.f_blocks * block;
    s.free_bytes = sf.f_bfree * block;
    s.avail_bytes = sf.f_bavail * block;
    s.total_files = sf.f_files;
    s.free_files = s.avail_files = sf.f_ffree;
    s.attr = ToAttr(st);
    return s;
  }

  Result<Wcc> Commit(const Credentials& cred, const Handle& h) {
    GEOFS_ASSIGN_OR_RETURN(auto f, OpenHandle(h, Need::kRead));
    GEOFS_ASSIGN_OR_RETURN(struct stat st, LiveStat(h, *f));
    const Attr cur = ToAttr(st);
    GEOFS_RETURN_IF_ERROR(CheckWrite(cur, cred));
    if (::fdatasync(f->fd()) != 0) return Errno("fdatasync");
    const AttrCache::Time now = SteadyNow();
    GEOFS_ASSIGN_OR_RETURN(struct stat after, Fstat(f->fd()));
    return Wcc{ToWcc(cur), Remember(after, now)};
  }

 private:
  Fs(UniqueFd root, const struct stat& root_st, Handle root_handle, std::string root_path,
     const Capabilities& caps, const LocalBackendOptions& options, size_t cache_size)
      : options_(options),
        root_dev_(root_st.st_dev),
        root_ino_(root_st.st_ino),
        root_(
            std::make_shared<const OpenFd>(root.Release(), FdAccess::kRead, FileType::kDirectory)),
        root_handle_(root_handle),
        root_path_(std::move(root_path)),
        caps_(caps),
        fds_(cache_size),
        dir_cache_(std::max<size_t>(options.max_cached_names, 1)),
        attrs_(std::max<size_t>(options.max_cached_names, 1), options.attr_ttl) {}

  // The descriptor for `h`, decoded and checked on a cache miss. With kRead
  // or kWrite a regular file comes back readable (writable); any other type
  // comes back as cached, so that the caller's type check reports it.
  Result<std::shared_ptr<const OpenFd>> OpenHandle(const Handle& h, Need need) {
    if (h == root_handle_) return root_;
    std::shared_ptr<const OpenFd> f = fds_.Find(h);
    if (!f) {
      GEOFS_ASSIGN_OR_RETURN(f, Decode(h));
      fds_.Insert(h, f);
    }
    if (need == Need::kAny || f->type() != FileType::kRegular) return f;
    const FdAccess want = need == Need::kRead ? FdAccess::kRead : FdAccess::kReadWrite;
    if (f->access() >= want) return f;
    GEOFS_ASSIGN_OR_RETURN(FileHandleBuffer fh, DecodeHandle(h));
    const int flags = (want == FdAccess::kRead ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY;
    const int fd = OpenByHandle(root_->fd(), &fh.header, flags);
    if (fd < 0) return HandleOpenErrno();
    f = std::make_shared<const OpenFd>(fd, want, FileType::kRegular);
    fds_.Insert(h, f);
    return f;
  }

  Result<std::shared_ptr<const OpenFd>> Decode(const Handle& h) {
    GEOFS_ASSIGN_OR_RETURN(FileHandleBuffer fh, DecodeHandle(h));
    UniqueFd fd(OpenByHandle(root_->fd(), &fh.header, O_PATH | O_CLOEXEC));
    if (!fd.valid()) return HandleOpenErrno();
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(fd.get()));
    if (st.st_nlink == 0 || st.st_dev != root_dev_) return Status::Stale();
    GEOFS_RETURN_IF_ERROR(CheckContained(fd.get(), st));
    return std::make_shared<const OpenFd>(fd.Release(), FdAccess::kPath, TypeOf(st.st_mode));
  }

  // See "Containment" in local_backend.h.
  Status CheckContained(int fd, const struct stat& st) {
    if (S_ISDIR(st.st_mode)) {
      UniqueFd ancestor;
      int cur = fd;
      struct stat cur_st = st;
      for (int depth = 0; depth < kMaxDepth; ++depth) {
        if (cur_st.st_dev == root_dev_ && cur_st.st_ino == root_ino_) return Status::Ok();
        UniqueFd parent(::openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!parent.valid()) break;
        struct stat parent_st;
        if (::fstat(parent.get(), &parent_st) != 0 || SameFile(parent_st, cur_st)) break;
        ancestor = std::move(parent);
        cur = ancestor.get();
        cur_st = parent_st;
      }
      return Status::Stale("directory outside the exported tree");
    }
    Result<std::string> path = ReadProcFdPath(fd);
    if (!path.ok()) return path.status();
    if (*path == "/" || IsUnder(*path, root_path_)) return Status::Ok();
    return Status::Stale("object outside the exported tree");
  }

  // fstat, treating an object without names as gone (its descriptor may be
  // cached from before it was removed).
  Result<struct stat> LiveStat(const Handle& h, const OpenFd& f) {
    const AttrCache::Time now = SteadyNow();
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(f.fd()));
    if (st.st_nlink == 0) {
      fds_.Erase(h);
      attrs_.Erase(st.st_ino);
      return Status::Stale();
    }
    Remember(st, now);
    return st;
  }

  // Caches the attributes of `st`, read no earlier than `read_at`.
  Attr Remember(const struct stat& st, AttrCache::Time read_at) {
    Attr attr = ToAttr(st);
    attrs_.Put(attr, read_at);
    return attr;
  }

  // Whether a directory whose fresh fstat is `st`, taken after wall time
  // `before_stat_ns`, may have its contents cached under its stamp: a later
  // change then shows in its ctime (see kRacyWindowNs).
  static bool Trusted(const struct stat& st, int64_t before_stat_ns) {
    const int64_t ctime = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
    return ctime + kRacyWindowNs < before_stat_ns;
  }

  // The child `name` of directory `dirfd` in state `stamp`, answered from
  // its memoised handle: an fstat of its cached descriptor, or else, for a
  // regular file, an open for reading (which the READ that usually follows
  // a LOOKUP needs anyway) and an fstat. Nullopt if it is not known.
  std::optional<Entry> KnownChild(const Handle& dir_handle, const DirStamp& stamp, int dirfd,
                                  const std::string& name) {
    std::optional<NameInfo> known = dir_cache_.FindName(dir_handle, stamp, name);
    if (!known) return std::nullopt;
    std::shared_ptr<const OpenFd> f = fds_.Find(known->handle);
    const bool opened = !f;
    if (opened) {
      // The stamp pins the name to this inode, so this opens no device or
      // FIFO; O_NONBLOCK guards against one all the same.
      if (known->type != FileType::kRegular) return std::nullopt;
      const int fd =
          ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) return std::nullopt;
      f = std::make_shared<const OpenFd>(fd, FdAccess::kRead, FileType::kRegular);
    }
    const AttrCache::Time now = SteadyNow();
    Result<struct stat> st = Fstat(f->fd());
    if (!st.ok() || st->st_ino != known->ino || st->st_nlink == 0 ||
        TypeOf(st->st_mode) != known->type) {
      return std::nullopt;
    }
    if (opened) fds_.Insert(known->handle, std::move(f));
    return Entry{known->handle, Remember(*st, now)};
  }

  // The whole listing of directory `dir` in file-system order, or null if
  // it is too large to cache.
  Result<std::shared_ptr<const DirListing>> ReadListing(const OpenFd& dir) {
    UniqueFd fd(::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return Errno("open directory");
    const size_t limit = options_.max_cached_names / 2;
    std::vector<DirListing::Item> items;
    std::vector<char> buf(kMaxDirBufferBytes);
    while (true) {
      ssize_t n = ::getdents64(fd.get(), buf.data(), buf.size());
      if (n < 0) return Errno("getdents64");
      if (n == 0) break;
      for (ssize_t pos = 0; pos < n;) {
        const auto* d = reinterpret_cast<const dirent64*>(buf.data() + pos);
        pos += d->d_reclen;
        items.push_back({d->d_name, d->d_ino, static_cast<uint64_t>(d->d_off)});
      }
      if (items.size() > limit) return std::shared_ptr<const DirListing>();
    }
    return std::make_shared<const DirListing>(std::move(items));
  }

  // Lists from the directory itself, seeking to the cookie: for cookies a
  // cached listing does not know and for directories not cached.
  Status ReadDirFromDisk(const Handle& dir_handle, const OpenFd& dir, const Attr& dir_attr,
                         const ReadDirRequest& req, bool with_attrs, DirPage* page) {
    // A descriptor of our own: the position is per open file.
    UniqueFd fd(::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return Errno("open directory");
    if (req.cookie != 0 && ::lseek(fd.get(), static_cast<off_t>(req.cookie), SEEK_SET) < 0) {
      return Status::BadCookie();
    }
    // Sized for the page: getdents64 does work for every entry it returns.
    std::vector<char> buf(
        std::clamp<size_t>(size_t{req.max_entries} * 64, kMinDirBufferBytes, kMaxDirBufferBytes));
    while (true) {
      ssize_t n = ::getdents64(fd.get(), buf.data(), buf.size());
      if (n < 0) return Errno("getdents64");
      if (n == 0) {
        page->eof = true;
        return Status::Ok();
      }
      for (ssize_t pos = 0; pos < n;) {
        const auto* d = reinterpret_cast<const dirent64*>(buf.data() + pos);
        pos += d->d_reclen;
        if (page->entries.size() == req.max_entries) return Status::Ok();
        DirEntry e;
        e.name = d->d_name;
        e.fileid = d->d_ino;
        e.cookie = static_cast<uint64_t>(d->d_off);
        if (!DotEntry(dir_handle, dir, dir_attr, with_attrs, &e) && with_attrs) {
          Result<Entry> child = ChildEntry(fd.get(), d->d_name);
          if (child.ok()) e.entry = std::move(child).value();
        }
        page->entries.push_back(std::move(e));
      }
    }
  }

  // Completes "." and ".." (returning true); leaves other names alone.
  bool DotEntry(const Handle& dir_handle, const OpenFd& dir, const Attr& dir_attr, bool with_attrs,
                DirEntry* e) {
    if (e->name == ".") {
      if (with_attrs) e->entry = Entry{dir_handle, dir_attr};
      return true;
    }
    if (e->name != "..") return false;
    Result<Entry> parent = ParentEntry(dir_handle, dir.fd(), dir_attr);
    if (parent.ok()) {
      e->fileid = parent->attr.fileid;
      if (with_attrs) e->entry = std::move(parent).value();
    }
    return true;
  }

  // Fills the entries of the listing's items `children` (entries[i - first]
  // is item i) with handles memoised beside the listing and attributes from
  // the attribute cache, asking the file system only for what they lack. An
  // entry whose name now names another object is left without them.
  void FillChildren(const Handle& dir_handle, const DirStamp& stamp, int dirfd,
                    const DirListing& listing, std::span<const size_t> children,
                    std::span<DirEntry> entries, size_t first) {
    const auto& items = listing.items();
    const AttrCache::Time now = SteadyNow();
    std::vector<uint64_t> fileids(children.size());
    for (size_t k = 0; k < children.size(); ++k) fileids[k] = items[children[k]].ino;
    std::vector<std::optional<Attr>> attrs(children.size());
    attrs_.FindMany(fileids, now, attrs);
    std::vector<std::pair<std::string_view, NameInfo>> found;
    for (size_t k = 0; k < children.size(); ++k) {
      const size_t index = children[k];
      const DirListing::Item& item = items[index];
      DirEntry& e = entries[index - first];
      const Handle* handle = listing.MemoisedHandle(index);
      if (handle && attrs[k]) {
        e.entry = Entry{*handle, *attrs[k]};
        continue;
      }
      if (!handle) {
        Result<Entry> child = ChildEntry(dirfd, item.name.c_str());
        if (!child.ok() || child->attr.fileid != item.ino) continue;
        listing.Memoise(index, child->handle);
        found.emplace_back(item.name, NameInfo{item.ino, child->attr.type, child->handle});
        attrs_.Put(child->attr, now);
        e.entry = std::move(child).value();
        continue;
      }
      struct stat st;
      if (::fstatat(dirfd, item.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (st.st_ino != item.ino || st.st_dev != root_dev_) continue;
      e.entry = Entry{*handle, Remember(st, now)};
    }
    // LOOKUPs of the listed names (an `ls -l`, then opens) reuse them too.
    dir_cache_.InsertNames(dir_handle, stamp, found);
  }

  // Opens `name` in `dirfd` without following symlinks; caches the
  // descriptor under the new handle if `cache`.
  Result<Entry> OpenChild(int dirfd, const char* name, bool cache) {
    const AttrCache::Time now = SteadyNow();
    UniqueFd fd(::openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return Errno(name);
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(fd.get()));
    if (st.st_dev != root_dev_) return Status::NotSupported("a mount point inside the export");
    GEOFS_ASSIGN_OR_RETURN(Handle h, HandleAt(fd.get(), ""));
    if (cache) {
      fds_.Insert(
          h, std::make_shared<const OpenFd>(fd.Release(), FdAccess::kPath, TypeOf(st.st_mode)));
    }
    return Entry{h, Remember(st, now)};
  }

  // The handle and attributes of `name` in `dirfd` for READDIRPLUS, in two
  // system calls instead of OpenChild's four. The handle is taken first: if
  // the name is replaced in between, the attributes belong to the newcomer
  // and the handle to a removed object, which the client finds stale on use.
  Result<Entry> ChildEntry(int dirfd, const char* name) {
    GEOFS_ASSIGN_OR_RETURN(Handle h, HandleAt(dirfd, name));
    struct stat st;
    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno(name);
    if (st.st_dev != root_dev_) return Status::NotSupported("a mount point inside the export");
    return Entry{h, ToAttr(st)};
  }

  // The parent of directory `dir` (the root for the root). Not cached: it is
  // reached through "..", so it is checked when its handle is next decoded.
  Result<Entry> ParentEntry(const Handle& dir_handle, int dirfd, const Attr& dir_attr) {
    if (dir_handle == root_handle_) return Entry{root_handle_, dir_attr};
    return OpenChild(dirfd, "..", false);
  }

  // Handle of a name about to be unlinked, if that removes its last link
  // (so its cached descriptor must go too and free the space).
  std::optional<Handle> HandleIfLastLink(int dirfd, const char* name, const struct stat& st) {
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) return std::nullopt;
    Result<Handle> h = HandleAt(dirfd, name);
    if (!h.ok()) return std::nullopt;
    return *h;
  }

  // Gives a just-created object to its owner and applies the initial
  // attributes; removes it again if that fails.
  Result<Entry> FinishCreate(int dirfd, const char* name, std::shared_ptr<const OpenFd> obj,
                             const Attr& proto, const SetAttrs& rest, const Credentials& cred) {
    Result<struct stat> st = Fstat(obj->fd());
    if (st.ok()) {
      // The creator (this process) owns it; hand it over only if that is
      // not the owner it should have.
      SetAttrs apply = rest;
      if (!apply.uid && proto.uid != st->st_uid) apply.uid = proto.uid;
      if (!apply.gid && proto.gid != st->st_gid) apply.gid = proto.gid;
      st = Apply(*obj, proto.type, apply, ModeAfterSetAttr(proto, rest, cred), *st);
    }
    Result<Handle> h = st.status();
    if (st.ok()) h = HandleAt(obj->fd(), "");
    if (h.ok() && options_.sync_metadata) {
      Status synced = SyncObject(*obj);
      if (!synced.ok()) h = synced;
    }
    if (!h.ok()) {
      ::unlinkat(dirfd, name, proto.type == FileType::kDirectory ? AT_REMOVEDIR : 0);
      return h.status();
    }
    fds_.Insert(*h, std::move(obj));
    return Entry{*h, ToAttr(*st)};
  }

  // MKDIR, SYMLINK and MKNOD: `make(dirfd, name, mode)` creates the object
  // the way mkdirat(2) does.
  template <typename Make>
  Result<CreateReply> CreateNode(const Credentials& cred, const Handle& dir_handle,
                                 std::string_view name, FileType type, const SetAttrs& attrs,
                                 Make make) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    GEOFS_ASSIGN_OR_RETURN(auto dir, OpenHandle(dir_handle, Need::kAny));
    GEOFS_ASSIGN_OR_RETURN(struct stat dst, LiveStat(dir_handle, *dir));
    const Attr dir_attr = ToAttr(dst);
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir_attr, cred));
    CreateReply reply;
    reply.dir_wcc.before = ToWcc(dir_attr);
    const NewOwnership own = NewObjectOwnership(dir_attr, cred, type, attrs.mode.value_or(0));
    SetAttrs rest = attrs;
    rest.mode.reset();
    rest.size.reset();
    const Attr proto = Prototype(type, own);
    GEOFS_RETURN_IF_ERROR(CheckSetAttr(proto, rest, cred));
    const std::string cname(name);
    if (make(dir->fd(), cname.c_str(), own.mode & 0777) != 0) return Errno(name);
    UniqueFd fd(::openat(dir->fd(), cname.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return Errno(name);
    auto obj = std::make_shared<const OpenFd>(fd.Release(), FdAccess::kPath, type);
    GEOFS_ASSIGN_OR_RETURN(reply.object,
                           FinishCreate(dir->fd(), cname.c_str(), obj, proto, rest, cred));
    GEOFS_ASSIGN_OR_RETURN(reply.dir_wcc.after, DirAfterChange(*dir));
    return reply;
  }

  // CREATE of a name that exists: GUARDED fails; EXCLUSIVE succeeds only as
  // a replay (the verifier times, still empty); UNCHECKED opens a regular
  // file, applying only the size (open with O_TRUNC), like the Linux server.
  Result<Entry> OpenExisting(const Credentials& cred, int dirfd, const char* name,
                             const CreateRequest& req) {
    UniqueFd fd(::openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return Errno(name);
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(fd.get()));
    if (st.st_dev != root_dev_) return Status::AlreadyExists(name);
    Attr attr = ToAttr(st);
    std::shared_ptr<const OpenFd> obj;
    switch (req.mode) {
      case CreateMode::kGuarded:
        return Status::AlreadyExists(name);
      case CreateMode::kExclusive: {
        auto [mtime, atime] = VerifierTimes(req.verifier);
        if (!S_ISREG(st.st_mode) || st.st_size != 0 || attr.mtime != mtime || attr.atime != atime) {
          return Status::AlreadyExists("exclusive create with a different verifier");
        }
        obj = std::make_shared<const OpenFd>(fd.Release(), FdAccess::kPath, FileType::kRegular);
        break;
      }
      case CreateMode::kUnchecked:
        if (!S_ISREG(st.st_mode)) return Status::AlreadyExists(name);
        if (!req.attrs.size) {
          obj = std::make_shared<const OpenFd>(fd.Release(), FdAccess::kPath, FileType::kRegular);
          break;
        }
        SetAttrs size_only;
        size_only.size = req.attrs.size;
        GEOFS_RETURN_IF_ERROR(CheckSetAttr(attr, size_only, cred));
        // Reopening the descriptor's own inode cannot race with a rename.
        UniqueFd rw(::open(ProcFdPath(fd.get()).c_str(), O_RDWR | O_CLOEXEC));
        if (!rw.valid()) return Errno(name);
        obj =
            std::make_shared<const OpenFd>(rw.Release(), FdAccess::kReadWrite, FileType::kRegular);
        GEOFS_ASSIGN_OR_RETURN(st, Apply(*obj, FileType::kRegular, size_only,
                                         ModeAfterSetAttr(attr, size_only, cred), st));
        attr = ToAttr(st);
        break;
    }
    GEOFS_ASSIGN_OR_RETURN(Handle h, HandleAt(obj->fd(), ""));
    fds_.Insert(h, std::move(obj));
    return Entry{h, attr};
  }

  // Applies owner, size and times of `req` to `f` (of type `type`), then
  // makes its mode `mode`; `st` is the object's state before, which spares
  // the fstat after when nothing changed. Returns the state after.
  // REQUIRES: the caller checked the request; `f` is writable if req.size
  // is set.
  Result<struct stat> Apply(const OpenFd& f, FileType type, const SetAttrs& req, uint32_t mode,
                            struct stat st) {
    const int fd = f.fd();
    bool changed = false;
    const bool chown = req.uid || req.gid;
    if (chown) {
      const uid_t uid = req.uid ? *req.uid : static_cast<uid_t>(-1);
      const gid_t gid = req.gid ? *req.gid : static_cast<gid_t>(-1);
      if (::fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0) return Errno("fchownat");
      changed = true;
    }
    if (req.size) {
      if (*req.size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
        return Status::FileTooLarge();
      }
      if (::ftruncate(fd, static_cast<off_t>(*req.size)) != 0) return Errno("ftruncate");
      changed = true;
    }
    if (req.atime_how != TimeUpdate::kDontChange || req.mtime_how != TimeUpdate::kDontChange) {
      const timespec times[2] = {ToTimespec(req.atime_how, req.atime),
                                 ToTimespec(req.mtime_how, req.mtime)};
      if (::utimensat(fd, "", times, AT_EMPTY_PATH) != 0) return Errno("utimensat");
      changed = true;
    }
    // Symlink modes cannot change on Linux. A chown drops setuid bits of
    // non-directories even for root, bits the POSIX rules in access.h keep:
    // only then is the mode to compare unknown without asking again.
    if (type != FileType::kSymlink) {
      if (!req.mode && chown) {
        GEOFS_ASSIGN_OR_RETURN(st, Fstat(fd));
        changed = false;
      }
      if (req.mode || (st.st_mode & kModeMask) != mode) {
        const int rc = f.access() == FdAccess::kPath
                           ? ::fchmodat(AT_FDCWD, ProcFdPath(fd).c_str(), mode, 0)
                           : ::fchmod(fd, mode);
        if (rc != 0) return Errno("chmod");
        changed = true;
      }
    }
    if (!changed) return st;
    return Fstat(fd);
  }

  // Post-change attributes of a directory, synced first if configured.
  Result<Attr> DirAfterChange(const OpenFd& dir) {
    if (options_.sync_metadata) {
      UniqueFd fd(::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!fd.valid() || ::fsync(fd.get()) != 0) return Errno("fsync directory");
    }
    const AttrCache::Time now = SteadyNow();
    GEOFS_ASSIGN_OR_RETURN(struct stat st, Fstat(dir.fd()));
    return Remember(st, now);
  }

  // fsyncs a regular file or directory (other objects live in their
  // directory's metadata).
  Status SyncObject(const OpenFd& f) {
    if (f.type() != FileType::kRegular && f.type() != FileType::kDirectory) return Status::Ok();
    UniqueFd fd(::open(ProcFdPath(f.fd()).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd.valid() || ::fsync(fd.get()) != 0) return Errno("fsync");
    return Status::Ok();
  }

  const LocalBackendOptions options_;
  const dev_t root_dev_;
  const ino_t root_ino_;
  const std::shared_ptr<const OpenFd> root_;
  const Handle root_handle_;
  const std::string root_path_;
  const Capabilities caps_;
  FdCache fds_;
  DirCache dir_cache_;
  AttrCache attrs_;
};

Result<std::unique_ptr<LocalBackend>> LocalBackend::Open(const std::string& root_dir,
                                                         LocalBackendOptions options) {
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<Fs> fs, Fs::Open(root_dir, options));
  return std::unique_ptr<LocalBackend>(new LocalBackend(std::move(fs), options.read_threads));
}

LocalBackend::LocalBackend(std::unique_ptr<Fs> fs, size_t read_threads)
    : fs_(std::move(fs)),
      read_pool_(read_threads > 0 ? std::make_unique<WorkerPool>(read_threads) : nullptr) {}
LocalBackend::~LocalBackend() = default;

size_t LocalBackend::CachedFileCount() const { return fs_->CachedFileCount(); }

size_t LocalBackend::CachedNameCount() const { return fs_->CachedNameCount(); }

Capabilities LocalBackend::GetCapabilities() const { return fs_->capabilities(); }

bool LocalBackend::QuickChanges() const { return !fs_->options().sync_metadata; }

bool LocalBackend::QuickReads() const { return read_pool_ != nullptr; }

Result<Handle> LocalBackend::Root() { return fs_->root_handle(); }

void LocalBackend::GetAttr(const Credentials&, const Handle& h, Callback<Attr> cb) {
  cb(fs_->GetAttr(h));
}

void LocalBackend::SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& attrs,
                           std::optional<WallTime> guard_ctime, Callback<Wcc> cb) {
  cb(fs_->SetAttr(cred, h, attrs, guard_ctime));
}

void LocalBackend::Lookup(const Credentials& cred, const Handle& dir, std::string_view name,
                          Callback<LookupReply> cb) {
  cb(fs_->Lookup(cred, dir, name));
}

void LocalBackend::LookupParent(const Credentials& cred, const Handle& dir,
                                Callback<LookupReply> cb) {
  cb(fs_->LookupParent(cred, dir));
}

void LocalBackend::Access(const Credentials& cred, const Handle& h, uint32_t requested,
                          Callback<AccessReply> cb) {
  cb(fs_->Access(cred, h, requested));
}

void LocalBackend::ReadLink(const Credentials&, const Handle& h, Callback<ReadLinkReply> cb) {
  cb(fs_->ReadLink(h));
}

void LocalBackend::Read(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
                        Callback<ReadReply> cb) {
  if (!read_pool_) {
    cb(fs_->Read(cred, h, offset, count));
    return;
  }
  bool would_block = false;
  Result<ReadReply> now = fs_->Read(cred, h, offset, count, /*nowait=*/true, &would_block);
  if (!would_block) {
    cb(std::move(now));
    return;
  }
  read_pool_->Submit([this, cred, h, offset, count, cb = std::move(cb)] {
    cb(fs_->Read(cred, h, offset, count));
  });
}

void LocalBackend::Write(const Credentials& cred, const Handle& h, uint64_t offset, Buffer data,
                         Stability stability, Callback<WriteReply> cb) {
  cb(fs_->Write(cred, h, offset, data, stability));
}

void LocalBackend::Create(const Credentials& cred, const Handle& dir, std::string_view name,
                          const CreateRequest& req, Callback<CreateReply> cb) {
  cb(fs_->Create(cred, dir, name, req));
}

void LocalBackend::Mkdir(const Credentials& cred, const Handle& dir, std::string_view name,
                         const SetAttrs& attrs, Callback<CreateReply> cb) {
  cb(fs_->Mkdir(cred, dir, name, attrs));
}

void LocalBackend::Symlink(const Credentials& cred, const Handle& dir, std::string_view name,
                           std::string_view target, const SetAttrs& attrs,
                           Callback<CreateReply> cb) {
  cb(fs_->Symlink(cred, dir, name, target, attrs));
}

void LocalBackend::Mknod(const Credentials& cred, const Handle& dir, std::string_view name,
                         const MknodRequest& req, Callback<CreateReply> cb) {
  cb(fs_->Mknod(cred, dir, name, req));
}

void LocalBackend::Remove(const Credentials& cred, const Handle& dir, std::string_view name,
                          Callback<Wcc> cb) {
  cb(fs_->Remove(cred, dir, name, /*want_dir=*/false));
}

void LocalBackend::Rmdir(const Credentials& cred, const Handle& dir, std::string_view name,
                         Callback<Wcc> cb) {
  cb(fs_->Remove(cred, dir, name, /*want_dir=*/true));
}

void LocalBackend::Rename(const Credentials& cred, const Handle& from_dir,
                          std::string_view from_name, const Handle& to_dir,
                          std::string_view to_name, Callback<RenameReply> cb) {
  cb(fs_->Rename(cred, from_dir, from_name, to_dir, to_name));
}

void LocalBackend::Link(const Credentials& cred, const Handle& file, const Handle& dir,
                        std::string_view name, Callback<LinkReply> cb) {
  cb(fs_->Link(cred, file, dir, name));
}

void LocalBackend::ReadDir(const Credentials& cred, const Handle& dir, const ReadDirRequest& req,
                           Callback<DirPage> cb) {
  cb(fs_->ReadDir(cred, dir, req));
}

void LocalBackend::FsStat(const Credentials&, const Handle& h, Callback<FsStats> cb) {
  cb(fs_->FsStat(h));
}

void LocalBackend::Commit(const Credentials& cred, const Handle& h, uint64_t, uint32_t,
                          Callback<Wcc> cb) {
  cb(fs_->Commit(cred, h));
}

}  // namespace geofs::vfs
