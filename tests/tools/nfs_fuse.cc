// geofs-nfs-fuse: mounts an NFSv3 export (through libnfs, the userspace
// client) as a FUSE file system, so unmodified programs (cp, sha256sum,
// Python) can run against a geofs export on a machine without a kernel NFS
// client. A test tool: it favours fresh data over speed.
//
//   geofs-nfs-fuse 'nfs://127.0.0.1/export?version=3&nfsport=P&mountport=M' MOUNTPOINT
//       [-f] [-d] [--connections N] [-o FUSE_OPTIONS]
//
// Design:
// - libnfs's sync API is path based, so this uses FUSE's high-level (path
//   based) API; st_ino is the NFS fileid (use_ino), so inode numbers are the
//   server's.
// - A libnfs context is not thread-safe. The bridge keeps a small pool of
//   contexts (TCP connections), each behind its own mutex, and runs FUSE's
//   multithreaded loop: parallel readers (DataLoader workers) get parallel
//   NFS calls. An open file stays on the context that opened it.
// - Kernel attribute, entry and negative caches are off (timeouts 0) and the
//   page cache is dropped on open, so every stat and open sees the server's
//   current state.
// - Like the kernel NFS client, close (FUSE flush) COMMITs a file that was
//   written (libnfs writes UNSTABLE and does not COMMIT on close), and fsync
//   COMMITs.
// - All calls carry the URL's AUTH_SYS credentials (uid=, gid=), not the
//   calling process's.
#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <nfsc/libnfs.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace geofs::nfs_fuse {
namespace {

// One mounted libnfs context and the lock that serializes its use.
struct Connection {
  nfs_context* nfs = nullptr;
  std::mutex mu;
};

// The pool of connections to one export. Thread-safe.
class ConnectionPool {
 public:
  // Exclusive use of one connection for the lifetime of the lease.
  class Lease {
   public:
    Lease(Connection* conn, std::unique_lock<std::mutex> lock)
        : conn_(conn), lock_(std::move(lock)) {}
    nfs_context* nfs() const { return conn_->nfs; }

   private:
    Connection* conn_;
    std::unique_lock<std::mutex> lock_;
  };

  ~ConnectionPool() {
    for (auto& c : conns_) {
      if (c->nfs != nullptr) nfs_destroy_context(c->nfs);
    }
  }

  // Mounts `count` contexts on the export named by `url`. On failure prints
  // libnfs's reason to stderr and returns false.
  bool Connect(const std::string& url, int count) {
    for (int i = 0; i < count; ++i) {
      auto conn = std::make_unique<Connection>();
      conn->nfs = nfs_init_context();
      if (conn->nfs == nullptr) {
        std::fprintf(stderr, "geofs-nfs-fuse: nfs_init_context failed\n");
        return false;
      }
      nfs_url* parsed = nfs_parse_url_dir(conn->nfs, url.c_str());
      if (parsed == nullptr) {
        std::fprintf(stderr, "geofs-nfs-fuse: bad URL %s: %s\n", url.c_str(),
                     nfs_get_error(conn->nfs));
        nfs_destroy_context(conn->nfs);
        return false;
      }
      // Listings must reflect the server now, not when first read.
      nfs_set_dircache(conn->nfs, 0);
      int rc = nfs_mount(conn->nfs, parsed->server, parsed->path);
      if (rc != 0) {
        std::fprintf(stderr, "geofs-nfs-fuse: mount %s failed: %s\n", url.c_str(),
                     nfs_get_error(conn->nfs));
      }
      nfs_destroy_url(parsed);
      if (rc != 0) {
        nfs_destroy_context(conn->nfs);
        return false;
      }
      conns_.push_back(std::move(conn));
    }
    return true;
  }

  size_t size() const { return conns_.size(); }

  // The connection an open file will stay on: round robin.
  size_t PickForFile() { return next_file_.fetch_add(1) % conns_.size(); }

  Lease Acquire(size_t index) {
    Connection* c = conns_[index].get();
    return Lease(c, std::unique_lock<std::mutex>(c->mu));
  }

  // Any connection: the first idle one, else waits on one in turn.
  Lease AcquireAny() {
    const size_t start = next_any_.fetch_add(1);
    for (size_t i = 0; i < conns_.size(); ++i) {
      Connection* c = conns_[(start + i) % conns_.size()].get();
      std::unique_lock<std::mutex> lock(c->mu, std::try_to_lock);
      if (lock.owns_lock()) return Lease(c, std::move(lock));
    }
    return Acquire(start % conns_.size());
  }

 private:
  std::vector<std::unique_ptr<Connection>> conns_;
  std::atomic<size_t> next_file_{0};
  std::atomic<size_t> next_any_{0};
};

// What fuse_file_info::fh points to for an open file.
struct OpenFile {
  size_t conn = 0;
  nfsfh* fh = nullptr;
  // Written since the last COMMIT.
  std::atomic<bool> dirty{false};
};

ConnectionPool& Pool() { return *static_cast<ConnectionPool*>(fuse_get_context()->private_data); }

OpenFile* FileOf(const fuse_file_info* fi) {
  return fi == nullptr ? nullptr : reinterpret_cast<OpenFile*>(fi->fh);
}

void ToStat(const nfs_stat_64& in, struct stat* out) {
  std::memset(out, 0, sizeof(*out));
  out->st_dev = in.nfs_dev;
  out->st_ino = in.nfs_ino;
  out->st_mode = static_cast<mode_t>(in.nfs_mode);
  out->st_nlink = in.nfs_nlink;
  out->st_uid = static_cast<uid_t>(in.nfs_uid);
  out->st_gid = static_cast<gid_t>(in.nfs_gid);
  out->st_rdev = in.nfs_rdev;
  out->st_size = static_cast<off_t>(in.nfs_size);
  out->st_blksize = static_cast<blksize_t>(in.nfs_blksize);
  out->st_blocks = static_cast<blkcnt_t>(in.nfs_blocks);
  out->st_atim = {static_cast<time_t>(in.nfs_atime), static_cast<long>(in.nfs_atime_nsec)};
  out->st_mtim = {static_cast<time_t>(in.nfs_mtime), static_cast<long>(in.nfs_mtime_nsec)};
  out->st_ctim = {static_cast<time_t>(in.nfs_ctime), static_cast<long>(in.nfs_ctime_nsec)};
}

mode_t ModeOf(const nfsdirent& e) {
  // nfsdirent::mode holds permission bits only; the type comes from `type`
  // (ftype3: 1 REG, 2 DIR, 3 BLK, 4 CHR, 5 LNK, 6 SOCK, 7 FIFO).
  static constexpr mode_t kTypes[] = {0,       S_IFREG, S_IFDIR,  S_IFBLK,
                                      S_IFCHR, S_IFLNK, S_IFSOCK, S_IFIFO};
  mode_t type = e.type < sizeof(kTypes) / sizeof(kTypes[0]) ? kTypes[e.type] : 0;
  return type | (e.mode & 07777);
}

void* Init(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->readdir_ino = 1;
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->kernel_cache = 0;
  // Unlink removes the file on the server at once instead of renaming it to
  // .fuse_hidden*: an open handle then sees what NFS gives (the server may
  // keep serving it or answer STALE).
  cfg->hard_remove = 1;
  // Large requests mean fewer NFS round trips per MiB.
  conn->max_write = 1 << 20;
  conn->max_readahead = 1 << 20;
  return fuse_get_context()->private_data;
}

int GetAttr(const char* path, struct stat* st, fuse_file_info* fi) {
  nfs_stat_64 attr{};
  int rc;
  if (OpenFile* f = FileOf(fi)) {
    auto lease = Pool().Acquire(f->conn);
    rc = nfs_fstat64(lease.nfs(), f->fh, &attr);
  } else {
    auto lease = Pool().AcquireAny();
    rc = nfs_lstat64(lease.nfs(), path, &attr);
  }
  if (rc < 0) return rc;
  ToStat(attr, st);
  return 0;
}

int ReadLink(const char* path, char* buf, size_t size) {
  if (size == 0) return -EINVAL;
  char* target = nullptr;
  int rc;
  {
    auto lease = Pool().AcquireAny();
    rc = nfs_readlink2(lease.nfs(), path, &target);
  }
  if (rc < 0) return rc;
  // FUSE wants a NUL-terminated string, truncated to fit like readlink(2).
  std::snprintf(buf, size, "%s", target);
  std::free(target);
  return 0;
}

int ReadDir(const char* path, void* buf, fuse_fill_dir_t filler, off_t offset, fuse_file_info* fi,
            fuse_readdir_flags flags) {
  // Fill the whole listing in one call (offset 0 for every entry): FUSE
  // buffers it, and one nfs_opendir is one consistent READDIRPLUS walk.
  auto lease = Pool().AcquireAny();
  nfsdir* dir = nullptr;
  int rc = nfs_opendir(lease.nfs(), path, &dir);
  if (rc < 0) return rc;
  while (nfsdirent* e = nfs_readdir(lease.nfs(), dir)) {
    struct stat st {};
    st.st_ino = e->inode;
    st.st_mode = ModeOf(*e);
    if (filler(buf, e->name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  nfs_closedir(lease.nfs(), dir);
  return 0;
}

int MkDir(const char* path, mode_t mode) {
  auto lease = Pool().AcquireAny();
  return nfs_mkdir2(lease.nfs(), path, static_cast<int>(mode & 07777));
}

int Unlink(const char* path) {
  auto lease = Pool().AcquireAny();
  return nfs_unlink(lease.nfs(), path);
}

int RmDir(const char* path) {
  auto lease = Pool().AcquireAny();
  return nfs_rmdir(lease.nfs(), path);
}

int SymLink(const char* target, const char* link_path) {
  auto lease = Pool().AcquireAny();
  return nfs_symlink(lease.nfs(), target, link_path);
}

int Rename(const char* from, const char* to, unsigned int flags) {
  // NFSv3 RENAME always replaces; it cannot honour NOREPLACE or EXCHANGE
  // atomically.
  if (flags != 0) return -EINVAL;
  auto lease = Pool().AcquireAny();
  return nfs_rename(lease.nfs(), from, to);
}

int Link(const char* from, const char* to) {
  auto lease = Pool().AcquireAny();
  return nfs_link(lease.nfs(), from, to);
}

int ChMod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (OpenFile* f = FileOf(fi)) {
    auto lease = Pool().Acquire(f->conn);
    return nfs_fchmod(lease.nfs(), f->fh, static_cast<int>(mode & 07777));
  }
  auto lease = Pool().AcquireAny();
  return nfs_lchmod(lease.nfs(), path, static_cast<int>(mode & 07777));
}

int ChOwn(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  // (uid_t)-1 means "leave unchanged" both for chown(2) and for libnfs.
  if (OpenFile* f = FileOf(fi)) {
    auto lease = Pool().Acquire(f->conn);
    return nfs_fchown(lease.nfs(), f->fh, static_cast<int>(uid), static_cast<int>(gid));
  }
  auto lease = Pool().AcquireAny();
  return nfs_lchown(lease.nfs(), path, static_cast<int>(uid), static_cast<int>(gid));
}

int Truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (size < 0) return -EINVAL;
  if (OpenFile* f = FileOf(fi)) {
    auto lease = Pool().Acquire(f->conn);
    return nfs_ftruncate(lease.nfs(), f->fh, static_cast<uint64_t>(size));
  }
  auto lease = Pool().AcquireAny();
  return nfs_truncate(lease.nfs(), path, static_cast<uint64_t>(size));
}

int UTimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  // libnfs sets both times from the client's values (SET_TO_CLIENT_TIME), in
  // microseconds; UTIME_OMIT keeps the current value, UTIME_NOW is now.
  auto lease = Pool().AcquireAny();
  nfs_stat_64 current{};
  if (tv[0].tv_nsec == UTIME_OMIT || tv[1].tv_nsec == UTIME_OMIT) {
    int rc = nfs_lstat64(lease.nfs(), path, &current);
    if (rc < 0) return rc;
  }
  timeval now{};
  gettimeofday(&now, nullptr);
  const uint64_t current_sec[2] = {current.nfs_atime, current.nfs_mtime};
  const uint64_t current_nsec[2] = {current.nfs_atime_nsec, current.nfs_mtime_nsec};
  timeval times[2];
  for (int i = 0; i < 2; ++i) {
    if (tv[i].tv_nsec == UTIME_NOW) {
      times[i] = now;
    } else if (tv[i].tv_nsec == UTIME_OMIT) {
      times[i] = {static_cast<time_t>(current_sec[i]),
                  static_cast<suseconds_t>(current_nsec[i] / 1000)};
    } else {
      times[i] = {tv[i].tv_sec, static_cast<suseconds_t>(tv[i].tv_nsec / 1000)};
    }
  }
  return nfs_lutimes(lease.nfs(), path, times);
}

// Opens (or creates, when `create`) `path` and hands the handle to FUSE.
int OpenOrCreate(const char* path, mode_t mode, fuse_file_info* fi, bool create) {
  auto file = std::make_unique<OpenFile>();
  file->conn = Pool().PickForFile();
  // O_APPEND is the kernel's business: it passes the end of file as offset.
  const int flags = fi->flags & ~O_APPEND;
  {
    auto lease = Pool().Acquire(file->conn);
    int rc = create
                 ? nfs_create(lease.nfs(), path, flags, static_cast<int>(mode & 07777), &file->fh)
                 : nfs_open(lease.nfs(), path, flags, &file->fh);
    if (rc < 0) return rc;
  }
  // Another client may have changed the file: drop the kernel's cached pages.
  fi->keep_cache = 0;
  fi->fh = reinterpret_cast<uint64_t>(file.release());
  return 0;
}

int Open(const char* path, fuse_file_info* fi) { return OpenOrCreate(path, 0, fi, false); }

int Create(const char* path, mode_t mode, fuse_file_info* fi) {
  return OpenOrCreate(path, mode, fi, true);
}

int Read(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  OpenFile* f = FileOf(fi);
  auto lease = Pool().Acquire(f->conn);
  // FUSE takes a short read for end of file, so fill the whole request.
  size_t done = 0;
  while (done < size) {
    int n = nfs_pread(lease.nfs(), f->fh, static_cast<uint64_t>(offset) + done, size - done,
                      buf + done);
    if (n < 0) return done > 0 ? static_cast<int>(done) : n;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

int Write(const char* path, const char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  OpenFile* f = FileOf(fi);
  auto lease = Pool().Acquire(f->conn);
  f->dirty = true;
  size_t done = 0;
  while (done < size) {
    int n = nfs_pwrite(lease.nfs(), f->fh, static_cast<uint64_t>(offset) + done, size - done,
                       buf + done);
    if (n < 0) return done > 0 ? static_cast<int>(done) : n;
    if (n == 0) return -EIO;
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

// COMMITs what was written since the last COMMIT.
int Commit(OpenFile* f) {
  if (!f->dirty.exchange(false)) return 0;
  auto lease = Pool().Acquire(f->conn);
  int rc = nfs_fsync(lease.nfs(), f->fh);
  if (rc < 0) f->dirty = true;
  return rc;
}

int Flush(const char* path, fuse_file_info* fi) { return Commit(FileOf(fi)); }

int FSync(const char* path, int datasync, fuse_file_info* fi) { return Commit(FileOf(fi)); }

int Release(const char* path, fuse_file_info* fi) {
  std::unique_ptr<OpenFile> f(FileOf(fi));
  Commit(f.get());
  auto lease = Pool().Acquire(f->conn);
  nfs_close(lease.nfs(), f->fh);
  return 0;
}

int StatFs(const char* path, struct statvfs* out) {
  nfs_statvfs_64 in{};
  {
    auto lease = Pool().AcquireAny();
    int rc = nfs_statvfs64(lease.nfs(), path, &in);
    if (rc < 0) return rc;
  }
  std::memset(out, 0, sizeof(*out));
  out->f_bsize = in.f_bsize;
  out->f_frsize = in.f_frsize;
  out->f_blocks = in.f_blocks;
  out->f_bfree = in.f_bfree;
  out->f_bavail = in.f_bavail;
  out->f_files = in.f_files;
  out->f_ffree = in.f_ffree;
  out->f_favail = in.f_favail;
  out->f_fsid = in.f_fsid;
  out->f_flag = in.f_flag;
  out->f_namemax = in.f_namemax;
  return 0;
}

fuse_operations Operations() {
  fuse_operations ops{};
  ops.getattr = GetAttr;
  ops.readlink = ReadLink;
  ops.mkdir = MkDir;
  ops.unlink = Unlink;
  ops.rmdir = RmDir;
  ops.symlink = SymLink;
  ops.rename = Rename;
  ops.link = Link;
  ops.chmod = ChMod;
  ops.chown = ChOwn;
  ops.truncate = Truncate;
  ops.open = Open;
  ops.read = Read;
  ops.write = Write;
  ops.statfs = StatFs;
  ops.flush = Flush;
  ops.release = Release;
  ops.fsync = FSync;
  ops.readdir = ReadDir;
  ops.init = Init;
  ops.create = Create;
  ops.utimens = UTimens;
  return ops;
}

struct CommandLine {
  std::string url;
  std::string mountpoint;
  bool foreground = false;
  bool debug = false;
  int connections = 4;
  std::vector<std::string> fuse_options;
};

void Usage() {
  std::fprintf(stderr,
               "usage: geofs-nfs-fuse 'nfs://HOST/EXPORT?version=3&nfsport=P&mountport=M' "
               "MOUNTPOINT [-f] [-d] [--connections N] [-o FUSE_OPTIONS]\n");
}

bool Parse(int argc, char** argv, CommandLine* cmd) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-f") {
      cmd->foreground = true;
    } else if (arg == "-d") {
      cmd->debug = true;
      cmd->foreground = true;
    } else if (arg == "-o" && i + 1 < argc) {
      cmd->fuse_options.push_back(argv[++i]);
    } else if (arg == "--connections" && i + 1 < argc) {
      cmd->connections = std::atoi(argv[++i]);
      if (cmd->connections < 1 || cmd->connections > 64) return false;
    } else if (!arg.empty() && arg[0] == '-') {
      return false;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) return false;
  cmd->url = positional[0];
  cmd->mountpoint = positional[1];
  return true;
}

int Main(int argc, char** argv) {
  CommandLine cmd;
  if (!Parse(argc, argv, &cmd)) {
    Usage();
    return 2;
  }
  // Connect before mounting, so a wrong URL or a dead server fails here with
  // libnfs's reason instead of leaving a mount that answers EIO.
  ConnectionPool pool;
  if (!pool.Connect(cmd.url, cmd.connections)) return 1;

  std::vector<std::string> fuse_argv = {argv[0], "-o", "fsname=geofs-nfs,subtype=geofs-nfs"};
  if (cmd.debug) fuse_argv.push_back("-d");
  for (const std::string& o : cmd.fuse_options) {
    fuse_argv.push_back("-o");
    fuse_argv.push_back(o);
  }
  std::vector<char*> raw;
  for (std::string& a : fuse_argv) raw.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(raw.size()), raw.data());

  const fuse_operations ops = Operations();
  fuse* fs = fuse_new(&args, &ops, sizeof(ops), &pool);
  if (fs == nullptr) return 1;
  int status = 1;
  if (fuse_mount(fs, cmd.mountpoint.c_str()) != 0) {
    std::fprintf(stderr, "geofs-nfs-fuse: cannot mount FUSE at %s\n", cmd.mountpoint.c_str());
  } else {
    fuse_session* session = fuse_get_session(fs);
    if (fuse_set_signal_handlers(session) == 0 && fuse_daemonize(cmd.foreground) == 0) {
      fuse_loop_config* loop = fuse_loop_cfg_create();
      fuse_loop_cfg_set_max_threads(loop, static_cast<unsigned>(pool.size()) * 2 + 2);
      status = fuse_loop_mt(fs, loop) == 0 ? 0 : 1;
      fuse_loop_cfg_destroy(loop);
      fuse_remove_signal_handlers(session);
    }
    fuse_unmount(fs);
  }
  fuse_destroy(fs);
  fuse_opt_free_args(&args);
  return status;
}

}  // namespace
}  // namespace geofs::nfs_fuse

int main(int argc, char** argv) { return geofs::nfs_fuse::Main(argc, argv); }
