// LocalBackend: serves a directory of the local file system (standalone
// mode, and the side-by-side benchmark against NFS-Ganesha).
//
// Handles are Linux file handles: handle_type (4 bytes, big-endian) followed
// by the f_handle bytes of name_to_handle_at(2). They survive a restart of
// the process (a new LocalBackend over the same directory decodes old handles
// to the same files); open_by_handle_at(2) refuses a removed object (kStale).
// Decoding needs CAP_DAC_READ_SEARCH (in practice: run as root). Open()
// rejects file systems without handles, or with handles longer than
// kMaxHandleBytes - 4, as kNotSupported.
//
// Containment. open_by_handle_at opens any inode of the file system, also
// outside the exported directory, so a decoded handle is checked before use:
//  - a directory must reach the root by walking "..";
//  - any other object must have a path under the root in /proc/self/fd. The
//    kernel cannot name an inode it decoded from a handle without finding it
//    in its directory cache first (it is "disconnected": its path reads
//    "/"), and user space cannot find its parent; such objects are accepted.
// So containment of non-directories rests on what the NFS layer guarantees
// anyway: it accepts only handles it signed itself (HMAC), and this backend
// hands out handles only for objects found below the root. An object that a
// local user moves out of the tree stays reachable through an old handle,
// exactly as with the Linux NFS server's default no_subtree_check. Objects
// on other file systems mounted inside the tree are not served (kNotSupported
// on lookup, no attributes in READDIRPLUS).
//
// Permissions. Operations run with the process's privileges (root) and
// enforce the caller's Credentials with vfs/access.h on fstat results; new
// objects are given to the caller with fchownat. EXCLUSIVE create stores the
// 8-byte verifier as the new file's mtime and atime seconds (as the Linux NFS
// server does) until the client's follow-up SETATTR replaces them.
//
// ReadDir cookies are the file system's d_off values (stable hash positions
// on ext4) and "." and ".." are listed; the root's ".." is the root itself.
// The cookie verifier is a constant and is not checked. An unchanged
// directory is listed from a cached copy of its entries (same order, same
// cookies); a cookie the copy does not know, or a directory changed within
// the last moments, is served by seeking the directory itself. LOOKUP in an
// unchanged directory reuses the handle found before. See vfs/dir_cache.h.
//
// Attributes: GETATTR, LOOKUP and every reply's own attributes come from a
// fresh fstat; READDIRPLUS entries may carry attributes up to
// options.attr_ttl old when the object was changed by another local process
// (NFS-Ganesha keeps them 60 s by default).
//
// Thread-safe. Callbacks run inline: every operation is a few blocking
// system calls, so call it from a worker thread, not a network thread. The
// exception is Read with options.read_threads: it calls back inline for
// cached data and from its own threads otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/worker_pool.h"
#include "geofs/vfs.h"

namespace geofs::vfs {

struct LocalBackendOptions {
  // Descriptors kept open for recently used handles (one per handle), so
  // READ and WRITE need no open(2). Sized to hold a whole training data set
  // of tens of thousands of files: an LRU smaller than the set a DataLoader
  // cycles through hits nothing. Open() raises RLIMIT_NOFILE to fit them
  // next to 1024 others (the hard limit too, when privileged); if it
  // cannot, it caches what fits next to those (at least half the limit).
  size_t max_open_files = 65536;
  // Directory entries remembered across directories (listings in
  // file-system order with their handle memos, and name -> handle memos;
  // about 250 bytes each), so READDIR(PLUS) pages and LOOKUPs in unchanged
  // directories need neither getdents64 nor name_to_handle_at. See
  // vfs/dir_cache.h.
  size_t max_cached_names = 256 * 1024;
  // How long attributes read for one object may be served in READDIRPLUS
  // entries (refreshed by every operation that touches the object through
  // this backend). Zero: stat every entry of every page. See vfs/dir_cache.h.
  std::chrono::milliseconds attr_ttl{1000};
  // Whether a namespace change (create, remove, rename, link, setattr)
  // fsyncs the directories and the object it touched before replying. Off,
  // such changes become durable at the file system's next journal commit.
  // Data written with FILE_SYNC/DATA_SYNC and COMMIT is synced either way.
  bool sync_metadata = false;
  // Threads for READs whose data is not in the page cache. With any, READ
  // is quick (QuickReads): the calling thread serves cached data at once
  // (sendfile or a non-blocking read) and only hands a miss to these
  // threads, so the front end may call Read on its network threads. Zero:
  // Read always reads in the calling thread, which then may block.
  size_t read_threads = 4;
};

class LocalBackend : public Backend {
 public:
  // Serves `root_dir`, which must be a directory.
  static Result<std::unique_ptr<LocalBackend>> Open(const std::string& root_dir,
                                                    LocalBackendOptions options = {});
  ~LocalBackend() override;
  LocalBackend(const LocalBackend&) = delete;
  LocalBackend& operator=(const LocalBackend&) = delete;

  // Descriptors currently held by the handle cache (at most
  // options.max_open_files).
  size_t CachedFileCount() const;
  // Directory entries currently held by the directory cache (at most
  // options.max_cached_names).
  size_t CachedNameCount() const;

  Capabilities GetCapabilities() const override;
  // True: metadata calls are a few system calls on cached descriptors.
  bool QuickMetadata() const override { return true; }
  // True unless options.sync_metadata: then every change waits for fsync.
  bool QuickChanges() const override;
  // True when options.read_threads > 0.
  bool QuickReads() const override;
  Result<Handle> Root() override;

  void GetAttr(const Credentials& cred, const Handle& h, Callback<Attr> cb) override;
  void SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& attrs,
               std::optional<WallTime> guard_ctime, Callback<Wcc> cb) override;
  void Lookup(const Credentials& cred, const Handle& dir, std::string_view name,
              Callback<LookupReply> cb) override;
  void LookupParent(const Credentials& cred, const Handle& dir, Callback<LookupReply> cb) override;
  void Access(const Credentials& cred, const Handle& h, uint32_t requested,
              Callback<AccessReply> cb) override;
  void ReadLink(const Credentials& cred, const Handle& h, Callback<ReadLinkReply> cb) override;
  void Read(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
            Callback<ReadReply> cb) override;
  void Write(const Credentials& cred, const Handle& h, uint64_t offset, Buffer data,
             Stability stability, Callback<WriteReply> cb) override;
  void Create(const Credentials& cred, const Handle& dir, std::string_view name,
              const CreateRequest& req, Callback<CreateReply> cb) override;
  void Mkdir(const Credentials& cred, const Handle& dir, std::string_view name,
             const SetAttrs& attrs, Callback<CreateReply> cb) override;
  void Symlink(const Credentials& cred, const Handle& dir, std::string_view name,
               std::string_view target, const SetAttrs& attrs, Callback<CreateReply> cb) override;
  void Mknod(const Credentials& cred, const Handle& dir, std::string_view name,
             const MknodRequest& req, Callback<CreateReply> cb) override;
  void Remove(const Credentials& cred, const Handle& dir, std::string_view name,
              Callback<Wcc> cb) override;
  void Rmdir(const Credentials& cred, const Handle& dir, std::string_view name,
             Callback<Wcc> cb) override;
  void Rename(const Credentials& cred, const Handle& from_dir, std::string_view from_name,
              const Handle& to_dir, std::string_view to_name, Callback<RenameReply> cb) override;
  void Link(const Credentials& cred, const Handle& file, const Handle& dir, std::string_view name,
            Callback<LinkReply> cb) override;
  void ReadDir(const Credentials& cred, const Handle& dir, const ReadDirRequest& req,
               Callback<DirPage> cb) override;
  void FsStat(const Credentials& cred, const Handle& h, Callback<FsStats> cb) override;
  void Commit(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
              Callback<Wcc> cb) override;

 private:
  class Fs;
  explicit LocalBackend(std::unique_ptr<Fs> fs, size_t read_threads);
  std::unique_ptr<Fs> fs_;
  // Declared last: destroyed first, finishing its reads while fs_ lives.
  std::unique_ptr<WorkerPool> read_pool_;  // null without read_threads
};

}  // namespace geofs::vfs
