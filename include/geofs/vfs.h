// The backend interface the NFS front end calls: a handle-based file system.
//
// Implementations: an in-memory tree (unit tests), a local directory
// (standalone mode), and later the hub's namespace and the spoke's cache.
//
// Contract for every implementation:
//  - Thread-safe: any method may be called from many threads at once.
//  - Asynchronous-friendly: every operation reports through a callback that
//    is invoked exactly once, either before the method returns or later on
//    any thread. Callers must not hold locks the callback needs.
//  - One call per NFS procedure: each reply carries everything the protocol
//    reply needs (post-op attributes, weak cache consistency data), so the
//    backend can produce them atomically with the change.
//  - Handles are the backend's own opaque bytes (at most kMaxHandleBytes).
//    They must stay valid across restarts for as long as the object exists,
//    and must never name a different object later (use generations).
//    A handle whose object is gone yields kStale; a malformed one kBadHandle.
//  - Permission checks use the caller's Credentials (already squashed by the
//    export policy); vfs/access.h has the POSIX rules shared by backends.
//  - Names are single path components: never empty, never "." or "..",
//    never containing '/' or NUL (the front end rejects those first), at most
//    kMaxNameBytes bytes.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/buffer.h"
#include "geofs/file_range.h"
#include "geofs/clock.h"
#include "geofs/status.h"

namespace geofs::vfs {

inline constexpr size_t kMaxHandleBytes = 40;
inline constexpr size_t kMaxNameBytes = 255;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxGroups = 16;

// Values match NFSv3's ftype3 so the front end can pass them through.
enum class FileType : uint32_t {
  kRegular = 1,
  kDirectory = 2,
  kBlockDevice = 3,
  kCharDevice = 4,
  kSymlink = 5,
  kSocket = 6,
  kFifo = 7,
};

// An opaque, backend-chosen object identifier.
class Handle {
 public:
  Handle() = default;
  // REQUIRES: bytes.size() <= kMaxHandleBytes.
  explicit Handle(std::span<const uint8_t> bytes) : size_(static_cast<uint8_t>(bytes.size())) {
    if (!bytes.empty()) std::memcpy(bytes_.data(), bytes.data(), bytes.size());
  }
  std::span<const uint8_t> bytes() const { return {bytes_.data(), size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool operator==(const Handle& o) const {
    return size_ == o.size_ && std::memcmp(bytes_.data(), o.bytes_.data(), size_) == 0;
  }

 private:
  std::array<uint8_t, kMaxHandleBytes> bytes_{};
  uint8_t size_ = 0;
};

struct Credentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups, at most kMaxGroups
  bool InGroup(uint32_t g) const;
};

struct Attr {
  FileType type = FileType::kRegular;
  uint32_t mode = 0;  // permission bits including setuid/setgid/sticky (07777)
  uint32_t nlink = 1;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;  // bytes of storage actually allocated
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
  uint64_t fileid = 0;  // stable, unique within the backend; never reused while in use
  WallTime atime, mtime, ctime;
};

// The pre-operation attributes NFS's weak cache consistency needs.
struct WccAttr {
  uint64_t size = 0;
  WallTime mtime, ctime;
};
inline WccAttr ToWcc(const Attr& a) { return {a.size, a.mtime, a.ctime}; }

// Weak cache consistency data around a change to one object.
struct Wcc {
  std::optional<WccAttr> before;
  std::optional<Attr> after;
};

enum class TimeUpdate : uint8_t { kDontChange, kServerTime, kClientTime };

// Attributes to change (NFS sattr3). Unset fields are left alone.
struct SetAttrs {
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint64_t> size;
  TimeUpdate atime_how = TimeUpdate::kDontChange;
  WallTime atime;  // used when atime_how == kClientTime
  TimeUpdate mtime_how = TimeUpdate::kDontChange;
  WallTime mtime;
};

// ACCESS bits, as in NFSv3.
enum AccessBits : uint32_t {
  kAccessRead = 0x01,
  kAccessLookup = 0x02,
  kAccessModify = 0x04,
  kAccessExtend = 0x08,
  kAccessDelete = 0x10,
  kAccessExecute = 0x20,
};

enum class Stability : uint32_t { kUnstable = 0, kDataSync = 1, kFileSync = 2 };

enum class CreateMode : uint32_t { kUnchecked = 0, kGuarded = 1, kExclusive = 2 };

// Everything one object operation returns: its handle and attributes.
struct Entry {
  Handle handle;
  Attr attr;
};

struct LookupReply {
  Entry object;
  std::optional<Attr> dir_attr;
};

struct AccessReply {
  uint32_t granted = 0;  // subset of the requested AccessBits
  Attr attr;
};

struct ReadLinkReply {
  std::string target;
  std::optional<Attr> attr;
};

struct ReadReply {
  Buffer data;  // may be shorter than requested; empty at or past end of file
  // Instead of `data`: the bytes as a range of an open file, which the front
  // end sends with sendfile (`data` is then empty). Backends serving plain
  // local files set it for ranges already in the page cache.
  std::optional<FileRange> file;
  bool eof = false;
  std::optional<Attr> attr;
};

struct WriteReply {
  Wcc wcc;
  uint32_t count = 0;
  Stability committed = Stability::kFileSync;
};

struct CreateRequest {
  CreateMode mode = CreateMode::kUnchecked;
  SetAttrs attrs;                    // for kUnchecked and kGuarded
  std::array<uint8_t, 8> verifier{};  // for kExclusive
};

// Result of any operation that creates a name in a directory.
struct CreateReply {
  Entry object;
  Wcc dir_wcc;
};

struct MknodRequest {
  FileType type = FileType::kFifo;  // kCharDevice, kBlockDevice, kSocket or kFifo
  SetAttrs attrs;
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
};

struct RenameReply {
  Wcc from_dir_wcc;
  Wcc to_dir_wcc;
};

struct LinkReply {
  std::optional<Attr> file_attr;
  Wcc dir_wcc;
};

struct DirEntry {
  uint64_t fileid = 0;
  std::string name;
  // Opaque position after this entry; passing it back continues the listing.
  // Never 0, and stable while the entry exists, whatever else changes.
  uint64_t cookie = 0;
  std::optional<Entry> entry;  // filled only for ReadDir(with_attrs = true)
};

struct DirPage {
  std::vector<DirEntry> entries;
  bool eof = false;
  uint64_t verifier = 0;
  std::optional<Attr> dir_attr;
};

struct ReadDirRequest {
  uint64_t cookie = 0;    // 0: from the start
  uint64_t verifier = 0;  // the page verifier the client holds; ignored with cookie 0
  uint32_t max_entries = 0;
  bool with_attrs = false;  // READDIRPLUS: fill DirEntry::entry
};

struct FsStats {
  uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  uint64_t total_files = 0, free_files = 0, avail_files = 0;
  std::optional<Attr> attr;
};

// Static properties of a backend, for FSINFO and PATHCONF.
struct Capabilities {
  uint64_t max_file_size = (uint64_t{1} << 63) - 1;
  WallTime time_delta{0, 1};  // timestamp granularity
  bool hard_links = true;
  bool symlinks = true;
  bool can_set_time = true;
  uint32_t link_max = 65000;
  uint32_t name_max = kMaxNameBytes;
};

template <typename T>
using Callback = std::function<void(Result<T>)>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Capabilities GetCapabilities() const = 0;
  // Whether GetAttr, Lookup, LookupParent and Access finish within
  // microseconds without waiting on slow I/O (they answer from memory or
  // local file system metadata), so a front end may run them on its network
  // threads instead of handing them to workers.
  virtual bool QuickMetadata() const { return false; }
  // Whether the namespace and attribute changes (SetAttr, Create, Mkdir,
  // Symlink, Mknod, Remove, Rmdir, Rename, Link) likewise return within
  // microseconds: a few system calls on local metadata and no sync to disk,
  // or an asynchronous request whose answer calls back from another thread
  // (anything that waits runs on the backend's own threads). A front end
  // may then run them on its network threads too.
  virtual bool QuickChanges() const { return false; }
  // Whether Read likewise never waits: it answers from memory or with a
  // non-blocking read, and hands anything slower (a disk, a remote fetch)
  // to its own threads, calling back from there.
  virtual bool QuickReads() const { return false; }
  // The handle of the tree's root directory.
  virtual Result<Handle> Root() = 0;

  virtual void GetAttr(const Credentials& cred, const Handle& h, Callback<Attr> cb) = 0;
  // `guard_ctime`: fail with kNotSync unless the object's ctime equals it.
  virtual void SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& attrs,
                       std::optional<WallTime> guard_ctime, Callback<Wcc> cb) = 0;
  virtual void Lookup(const Credentials& cred, const Handle& dir, std::string_view name,
                      Callback<LookupReply> cb) = 0;
  // Looks up the parent of a directory (".." in NFS LOOKUP). The root's
  // parent is the root itself.
  virtual void LookupParent(const Credentials& cred, const Handle& dir,
                            Callback<LookupReply> cb) = 0;
  virtual void Access(const Credentials& cred, const Handle& h, uint32_t requested,
                      Callback<AccessReply> cb) = 0;
  virtual void ReadLink(const Credentials& cred, const Handle& h, Callback<ReadLinkReply> cb) = 0;
  virtual void Read(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
                    Callback<ReadReply> cb) = 0;
  virtual void Write(const Credentials& cred, const Handle& h, uint64_t offset, Buffer data,
                     Stability stability, Callback<WriteReply> cb) = 0;
  virtual void Create(const Credentials& cred, const Handle& dir, std::string_view name,
                      const CreateRequest& req, Callback<CreateReply> cb) = 0;
  virtual void Mkdir(const Credentials& cred, const Handle& dir, std::string_view name,
                     const SetAttrs& attrs, Callback<CreateReply> cb) = 0;
  virtual void Symlink(const Credentials& cred, const Handle& dir, std::string_view name,
                       std::string_view target, const SetAttrs& attrs,
                       Callback<CreateReply> cb) = 0;
  virtual void Mknod(const Credentials& cred, const Handle& dir, std::string_view name,
                     const MknodRequest& req, Callback<CreateReply> cb) = 0;
  virtual void Remove(const Credentials& cred, const Handle& dir, std::string_view name,
                      Callback<Wcc> cb) = 0;
  virtual void Rmdir(const Credentials& cred, const Handle& dir, std::string_view name,
                     Callback<Wcc> cb) = 0;
  virtual void Rename(const Credentials& cred, const Handle& from_dir, std::string_view from_name,
                      const Handle& to_dir, std::string_view to_name,
                      Callback<RenameReply> cb) = 0;
  virtual void Link(const Credentials& cred, const Handle& file, const Handle& dir,
                    std::string_view name, Callback<LinkReply> cb) = 0;
  virtual void ReadDir(const Credentials& cred, const Handle& dir, const ReadDirRequest& req,
                       Callback<DirPage> cb) = 0;
  virtual void FsStat(const Credentials& cred, const Handle& h, Callback<FsStats> cb) = 0;
  // Makes data written UNSTABLE in [offset, offset+count) (count 0: to the
  // end) durable.
  virtual void Commit(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
                      Callback<Wcc> cb) = 0;
};

}  // namespace geofs::vfs
