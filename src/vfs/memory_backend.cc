#include "vfs/memory_backend.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>

#include "vfs/access.h"

namespace geofs::vfs {
namespace {

constexpr uint64_t kBlockSize = 64 * 1024;
constexpr uint64_t kRootIno = 1;
constexpr size_t kHandleBytes = 16;
constexpr uint64_t kDotCookie = 1;
constexpr uint64_t kDotDotCookie = 2;
constexpr uint64_t kFirstEntrySeq = 3;
constexpr uint32_t kDirSize = 4096;
// What FsStat reports: the tree is bounded only by the process's memory.
constexpr uint64_t kCapacityBytes = uint64_t{1} << 40;
constexpr uint64_t kCapacityFiles = uint64_t{1} << 32;
const Capabilities kCapabilities;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void PutBigEndian64(uint64_t v, uint8_t* out) {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<uint8_t>(v);
}

uint64_t GetBigEndian64(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return v;
}

struct Inode {
  struct Child {
    uint64_t ino = 0;
    uint64_t seq = 0;
  };
  using ChildMap = std::map<std::string, Child, std::less<>>;

  uint64_t generation = 0;
  Attr attr;  // attr.fileid is the inode number

  // Regular files: block index -> kBlockSize bytes; absent blocks are holes.
  std::map<uint64_t, std::unique_ptr<uint8_t[]>> blocks;
  std::optional<std::array<uint8_t, 8>> create_verifier;

  // Directories.
  uint64_t parent = 0;
  ChildMap children;
  std::map<uint64_t, ChildMap::iterator> by_seq;
  uint64_t next_seq = kFirstEntrySeq;

  // Symlinks.
  std::string target;

  uint64_t ino() const { return attr.fileid; }
  bool is_dir() const { return attr.type == FileType::kDirectory; }
};

}  // namespace

// The whole tree and its lock. Every public method takes the lock for its
// whole duration, so each operation is atomic.
class MemoryBackend::Tree {
 public:
  explicit Tree(Clock* clock) : clock_(clock), generation_seed_(std::random_device{}()) {
    generation_seed_ = (generation_seed_ << 32) ^ std::random_device{}();
    Inode* root = NewInode(FileType::kDirectory, 0755, 0, 0);
    root->parent = root->ino();
  }

  Handle RootHandle() {
    std::lock_guard lock(mu_);
    return HandleOf(*inodes_.at(kRootIno));
  }

  Result<Attr> GetAttr(const Handle& h) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    return n->attr;
  }

  Result<Wcc> SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& req,
                      std::optional<WallTime> guard_ctime) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    Wcc wcc;
    wcc.before = ToWcc(n->attr);
    if (guard_ctime && *guard_ctime != n->attr.ctime) return Status::NotSync();
    GEOFS_RETURN_IF_ERROR(CheckSetAttr(n->attr, req, cred));
    Apply(n, req, cred, Now());
    wcc.after = n->attr;
    return wcc;
  }

  Result<LookupReply> Lookup(const Credentials& cred, const Handle& dir_handle,
                             std::string_view name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir->attr, cred));
    Inode* child = ChildOf(*dir, name);
    if (!child) return Status::NotFound(name);
    return LookupReply{EntryOf(*child), dir->attr};
  }

  Result<LookupReply> LookupParent(const Credentials& cred, const Handle& dir_handle) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir->attr, cred));
    return LookupReply{EntryOf(*inodes_.at(dir->parent)), dir->attr};
  }

  Result<AccessReply> Access(const Credentials& cred, const Handle& h, uint32_t requested) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    return AccessReply{GrantedAccess(n->attr, cred, requested), n->attr};
  }

  Result<ReadLinkReply> ReadLink(const Handle& h) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    if (n->attr.type != FileType::kSymlink) return Status::InvalidArgument("not a symlink");
    n->attr.atime = Now();
    return ReadLinkReply{n->target, n->attr};
  }

  Result<ReadReply> Read(const Credentials& cred, const Handle& h, uint64_t offset,
                         uint32_t count) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    GEOFS_RETURN_IF_ERROR(CheckRead(n->attr, cred));
    const uint64_t size = n->attr.size;
    const uint64_t len = offset >= size ? 0 : std::min<uint64_t>(count, size - offset);
    uint8_t* out;
    ReadReply reply;
    reply.data = Buffer::Allocate(len, &out);
    CopyOut(*n, offset, len, out);
    reply.eof = offset + len >= size;
    n->attr.atime = Now();
    reply.attr = n->attr;
    return reply;
  }

  Result<WriteReply> Write(const Credentials& cred, const Handle& h, uint64_t offset,
                           const Buffer& data, Stability stability) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    WriteReply reply;
    reply.wcc.before = ToWcc(n->attr);
    GEOFS_RETURN_IF_ERROR(CheckWrite(n->attr, cred));
    const uint64_t max = kCapabilities.max_file_size;
    if (offset > max || data.size() > max - offset) return Status::FileTooLarge();
    if (!data.empty()) {
      CopyIn(n, offset, data.span());
      n->attr.size = std::max(n->attr.size, offset + data.size());
      n->attr.mode = ModeAfterWrite(n->attr, cred);
      n->attr.mtime = n->attr.ctime = Now();
      n->create_verifier.reset();
    }
    reply.count = static_cast<uint32_t>(data.size());
    reply.committed = stability;
    reply.wcc.after = n->attr;
    return reply;
  }

  Result<CreateReply> Create(const Credentials& cred, const Handle& dir_handle,
                             std::string_view name, const CreateRequest& req) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir->attr, cred));
    CreateReply reply;
    reply.dir_wcc.before = ToWcc(dir->attr);
    if (Inode* existing = ChildOf(*dir, name)) {
      GEOFS_RETURN_IF_ERROR(OpenExisting(cred, existing, req));
      reply.object = EntryOf(*existing);
      reply.dir_wcc.after = dir->attr;
      return reply;
    }
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir->attr, cred));
    Inode* file;
    if (req.mode == CreateMode::kExclusive) {
      GEOFS_ASSIGN_OR_RETURN(file, MakeChild(cred, dir, name, FileType::kRegular, SetAttrs{}));
      file->create_verifier = req.verifier;
    } else {
      GEOFS_ASSIGN_OR_RETURN(file, MakeChild(cred, dir, name, FileType::kRegular, req.attrs));
    }
    reply.object = EntryOf(*file);
    reply.dir_wcc.after = dir->attr;
    return reply;
  }

  Result<CreateReply> Mkdir(const Credentials& cred, const Handle& dir_handle,
                            std::string_view name, const SetAttrs& attrs) {
    return CreateNode(cred, dir_handle, name, FileType::kDirectory, attrs, [](Inode*) {});
  }

  Result<CreateReply> Symlink(const Credentials& cred, const Handle& dir_handle,
                              std::string_view name, std::string_view target,
                              const SetAttrs& attrs) {
    GEOFS_RETURN_IF_ERROR(ValidateSymlinkTarget(target));
    SetAttrs no_mode = attrs;
    no_mode.mode = 0777;  // symlink permissions are never consulted
    return CreateNode(cred, dir_handle, name, FileType::kSymlink, no_mode, [&](Inode* n) {
      n->target = target;
      n->attr.size = n->attr.used = target.size();
    });
  }

  Result<CreateReply> Mknod(const Credentials& cred, const Handle& dir_handle,
                            std::string_view name, const MknodRequest& req) {
    switch (req.type) {
      case FileType::kCharDevice:
      case FileType::kBlockDevice:
        if (!IsRoot(cred)) return Status::NotPermitted("only root may create devices");
        break;
      case FileType::kSocket:
      case FileType::kFifo:
        break;
      default:
        return Status::InvalidArgument("mknod of an unsupported type");
    }
    return CreateNode(cred, dir_handle, name, req.type, req.attrs, [&](Inode* n) {
      if (req.type == FileType::kCharDevice || req.type == FileType::kBlockDevice) {
        n->attr.rdev_major = req.rdev_major;
        n->attr.rdev_minor = req.rdev_minor;
      }
    });
  }

  Result<Wcc> Remove(const Credentials& cred, const Handle& dir_handle, std::string_view name,
                     bool want_dir) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckSearch(dir->attr, cred));
    Wcc wcc;
    wcc.before = ToWcc(dir->attr);
    auto it = dir->children.find(name);
    if (it == dir->children.end()) return Status::NotFound(name);
    Inode* victim = inodes_.at(it->second.ino).get();
    GEOFS_RETURN_IF_ERROR(CheckDelete(dir->attr, victim->attr, cred));
    if (want_dir && !victim->is_dir()) return Status::NotDirectory(name);
    if (!want_dir && victim->is_dir()) return Status::IsDirectory(name);
    if (want_dir && !victim->children.empty()) return Status::NotEmpty(name);
    const WallTime now = Now();
    Detach(dir, it, victim);
    Release(victim, now);
    dir->attr.mtime = dir->attr.ctime = now;
    wcc.after = dir->attr;
    return wcc;
  }

  Result<RenameReply> Rename(const Credentials& cred, const Handle& from_handle,
                             std::string_view from_name, const Handle& to_handle,
                             std::string_view to_name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(from_name));
    GEOFS_RETURN_IF_ERROR(ValidateName(to_name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * from, Find(from_handle));
    GEOFS_ASSIGN_OR_RETURN(Inode * to, Find(to_handle));
    GEOFS_RETURN_IF_ERROR(CheckSearch(from->attr, cred));
    GEOFS_RETURN_IF_ERROR(CheckSearch(to->attr, cred));
    RenameReply reply;
    reply.from_dir_wcc.before = ToWcc(from->attr);
    reply.to_dir_wcc.before = ToWcc(to->attr);
    auto src_it = from->children.find(from_name);
    if (src_it == from->children.end()) return Status::NotFound(from_name);
    Inode* src = inodes_.at(src_it->second.ino).get();
    GEOFS_RETURN_IF_ERROR(CheckDelete(from->attr, src->attr, cred));
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(to->attr, cred));
    auto dst_it = to->children.find(to_name);
    Inode* dst = dst_it == to->children.end() ? nullptr : inodes_.at(dst_it->second.ino).get();
    if (dst) GEOFS_RETURN_IF_ERROR(CheckDelete(to->attr, dst->attr, cred));
    // Moving a directory rewrites its "..".
    if (src->is_dir() && from != to && !HasPermission(src->attr, cred, kMayWrite)) {
      return Status::AccessDenied("moving a directory needs write permission on it");
    }
    if (dst != src) {
      if (src->is_dir() && IsSelfOrAncestor(*src, *to)) {
        return Status::InvalidArgument("cannot move a directory into itself");
      }
      if (dst) {
        if (src->is_dir() && !dst->is_dir()) return Status::NotDirectory(to_name);
        if (!src->is_dir() && dst->is_dir()) return Status::IsDirectory(to_name);
        if (dst->is_dir() && !dst->children.empty()) return Status::NotEmpty(to_name);
      }
      const WallTime now = Now();
      if (dst) {
        Detach(to, dst_it, dst);
        Release(dst, now);
      }
      Detach(from, src_it, src);
      Attach(to, to_name, src);
      src->attr.ctime = now;
      from->attr.mtime = from->attr.ctime = now;
      to->attr.mtime = to->attr.ctime = now;
    }
    reply.from_dir_wcc.after = from->attr;
    reply.to_dir_wcc.after = to->attr;
    return reply;
  }

  Result<LinkReply> Link(const Credentials& cred, const Handle& file_handle,
                         const Handle& dir_handle, std::string_view name) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * file, Find(file_handle));
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    LinkReply reply;
    reply.dir_wcc.before = ToWcc(dir->attr);
    if (file->is_dir()) return Status::IsDirectory("cannot link a directory");
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir->attr, cred));
    if (ChildOf(*dir, name)) return Status::AlreadyExists(name);
    if (file->attr.nlink >= kCapabilities.link_max) return Status::TooManyLinks();
    const WallTime now = Now();
    Attach(dir, name, file);
    file->attr.ctime = now;
    dir->attr.mtime = dir->attr.ctime = now;
    reply.file_attr = file->attr;
    reply.dir_wcc.after = dir->attr;
    return reply;
  }

  Result<DirPage> ReadDir(const Credentials& cred, const Handle& dir_handle,
                          const ReadDirRequest& req) {
    if (req.max_entries == 0) return Status::TooSmall("max_entries is 0");
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckList(dir->attr, cred));
    if (req.cookie >= dir->next_seq) return Status::BadCookie();
    const bool with_attrs = req.with_attrs && HasPermission(dir->attr, cred, kMayExec);
    DirPage page;
    page.verifier = dir->generation;
    auto add = [&](const Inode& n, std::string name, uint64_t cookie) {
      DirEntry e{n.ino(), std::move(name), cookie, std::nullopt};
      if (with_attrs) e.entry = EntryOf(n);
      page.entries.push_back(std::move(e));
    };
    // Positions: "." < ".." < children in sequence order.
    auto full = [&] { return page.entries.size() == req.max_entries; };
    bool more = false;
    if (req.cookie < kDotCookie) add(*dir, ".", kDotCookie);
    if (req.cookie < kDotDotCookie) {
      if (full()) {
        more = true;
      } else {
        add(*inodes_.at(dir->parent), "..", kDotDotCookie);
      }
    }
    for (auto it = dir->by_seq.upper_bound(req.cookie); !more && it != dir->by_seq.end(); ++it) {
      if (full()) {
        more = true;
      } else {
        const auto& [name, child] = *it->second;
        add(*inodes_.at(child.ino), name, child.seq);
      }
    }
    page.eof = !more;
    dir->attr.atime = Now();
    page.dir_attr = dir->attr;
    return page;
  }

  Result<FsStats> FsStat(const Handle& h) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    FsStats s;
    const uint64_t used = std::min(bytes_allocated_, kCapacityBytes);
    s.total_bytes = kCapacityBytes;
    s.free_bytes = s.avail_bytes = kCapacityBytes - used;
    s.total_files = kCapacityFiles;
    s.free_files = s.avail_files =
        kCapacityFiles - std::min<uint64_t>(inodes_.size(), kCapacityFiles);
    s.attr = n->attr;
    return s;
  }

  Result<Wcc> Commit(const Credentials& cred, const Handle& h) {
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, Find(h));
    GEOFS_RETURN_IF_ERROR(CheckWrite(n->attr, cred));
    return Wcc{ToWcc(n->attr), n->attr};
  }

 private:
  WallTime Now() const { return clock_->WallNow(); }

  Handle HandleOf(const Inode& n) const {
    std::array<uint8_t, kHandleBytes> bytes;
    PutBigEndian64(n.ino(), bytes.data());
    PutBigEndian64(n.generation, bytes.data() + 8);
    return Handle(bytes);
  }

  Entry EntryOf(const Inode& n) const { return Entry{HandleOf(n), n.attr}; }

  Result<Inode*> Find(const Handle& h) {
    if (h.size() != kHandleBytes) return Status::BadHandle();
    auto it = inodes_.find(GetBigEndian64(h.bytes().data()));
    if (it == inodes_.end() || it->second->generation != GetBigEndian64(h.bytes().data() + 8)) {
      return Status::Stale();
    }
    return it->second.get();
  }

  Inode* ChildOf(const Inode& dir, std::string_view name) {
    auto it = dir.children.find(name);
    return it == dir.children.end() ? nullptr : inodes_.at(it->second.ino).get();
  }

  // True if `ancestor` is `n` or one of the directories above it.
  bool IsSelfOrAncestor(const Inode& ancestor, const Inode& n) {
    const Inode* cur = &n;
    while (true) {
      if (cur == &ancestor) return true;
      if (cur->ino() == kRootIno) return false;
      cur = inodes_.at(cur->parent).get();
    }
  }

  Inode* NewInode(FileType type, uint32_t mode, uint32_t uid, uint32_t gid) {
    auto n = std::make_unique<Inode>();
    const uint64_t ino = next_ino_++;
    n->generation = SplitMix64(generation_seed_ + ino);
    n->attr.type = type;
    n->attr.mode = mode & kModeMask;
    n->attr.uid = uid;
    n->attr.gid = gid;
    n->attr.fileid = ino;
    // A directory is linked from its parent and from its own ".".
    n->attr.nlink = type == FileType::kDirectory ? 2 : 0;
    if (type == FileType::kDirectory) n->attr.size = n->attr.used = kDirSize;
    n->attr.atime = n->attr.mtime = n->attr.ctime = Now();
    Inode* raw = n.get();
    inodes_.emplace(ino, std::move(n));
    return raw;
  }

  void Attach(Inode* dir, std::string_view name, Inode* child) {
    const uint64_t seq = dir->next_seq++;
    auto it = dir->children.emplace(std::string(name), Inode::Child{child->ino(), seq}).first;
    dir->by_seq.emplace(seq, it);
    if (child->is_dir()) {
      ++dir->attr.nlink;
      child->parent = dir->ino();
    } else {
      ++child->attr.nlink;
    }
  }

  void Detach(Inode* dir, Inode::ChildMap::iterator it, Inode* child) {
    dir->by_seq.erase(it->second.seq);
    dir->children.erase(it);
    if (child->is_dir()) {
      --dir->attr.nlink;
    } else {
      --child->attr.nlink;
    }
  }

  // Called after `n` lost a name: frees it when no name is left.
  void Release(Inode* n, WallTime now) {
    if (n->is_dir() || n->attr.nlink == 0) {
      bytes_allocated_ -= n->blocks.size() * kBlockSize;
      inodes_.erase(n->ino());
    } else {
      n->attr.ctime = now;
    }
  }

  // Creates `name` in `dir` owned by the caller with initial `attrs`.
  // REQUIRES: CheckDirWrite passed and `name` is free.
  Result<Inode*> MakeChild(const Credentials& cred, Inode* dir, std::string_view name,
                           FileType type, const SetAttrs& attrs) {
    const NewOwnership own = NewObjectOwnership(dir->attr, cred, type, attrs.mode.value_or(0));
    SetAttrs rest = attrs;
    rest.mode.reset();
    if (type != FileType::kRegular) rest.size.reset();
    Attr proto;
    proto.type = type;
    proto.mode = own.mode;
    proto.uid = own.uid;
    proto.gid = own.gid;
    GEOFS_RETURN_IF_ERROR(CheckSetAttr(proto, rest, cred));
    Inode* n = NewInode(type, own.mode, own.uid, own.gid);
    Attach(dir, name, n);
    const WallTime now = n->attr.ctime;
    Apply(n, rest, cred, now);
    dir->attr.mtime = dir->attr.ctime = now;
    return n;
  }

  template <typename Init>
  Result<CreateReply> CreateNode(const Credentials& cred, const Handle& dir_handle,
                                 std::string_view name, FileType type, const SetAttrs& attrs,
                                 Init init) {
    GEOFS_RETURN_IF_ERROR(ValidateName(name));
    std::lock_guard lock(mu_);
    GEOFS_ASSIGN_OR_RETURN(Inode * dir, Find(dir_handle));
    GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir->attr, cred));
    CreateReply reply;
    reply.dir_wcc.before = ToWcc(dir->attr);
    if (ChildOf(*dir, name)) return Status::AlreadyExists(name);
    GEOFS_ASSIGN_OR_RETURN(Inode * n, MakeChild(cred, dir, name, type, attrs));
    init(n);
    reply.object = EntryOf(*n);
    reply.dir_wcc.after = dir->attr;
    return reply;
  }

  // CREATE of a name that exists: GUARDED fails; EXCLUSIVE succeeds only as a
  // replay of the same request; UNCHECKED opens a regular file, applying
  // only the size (open with O_TRUNC), like the Linux server.
  Status OpenExisting(const Credentials& cred, Inode* n, const CreateRequest& req) {
    switch (req.mode) {
      case CreateMode::kGuarded:
        return Status::AlreadyExists();
      case CreateMode::kExclusive:
        if (n->create_verifier == req.verifier) return Status::Ok();
        return Status::AlreadyExists("exclusive create with a different verifier");
      case CreateMode::kUnchecked:
        break;
    }
    if (n->attr.type != FileType::kRegular) return Status::AlreadyExists();
    if (!req.attrs.size) return Status::Ok();
    SetAttrs size_only;
    size_only.size = req.attrs.size;
    GEOFS_RETURN_IF_ERROR(CheckSetAttr(n->attr, size_only, cred));
    Apply(n, size_only, cred, Now());
    return Status::Ok();
  }

  // REQUIRES: CheckSetAttr(n->attr, req, cred) passed.
  void Apply(Inode* n, const SetAttrs& req, const Credentials& cred, WallTime now) {
    const bool any = req.mode || req.uid || req.gid || req.size ||
                     req.atime_how != TimeUpdate::kDontChange ||
                     req.mtime_how != TimeUpdate::kDontChange;
    if (!any) return;
    const uint32_t mode = ModeAfterSetAttr(n->attr, req, cred);
    if (n->attr.type != FileType::kSymlink) n->attr.mode = mode;
    if (req.uid) n->attr.uid = *req.uid;
    if (req.gid) n->attr.gid = *req.gid;
    if (req.size) {
      Resize(n, *req.size);
      n->attr.mtime = now;
    }
    if (req.atime_how != TimeUpdate::kDontChange) {
      n->attr.atime = req.atime_how == TimeUpdate::kServerTime ? now : req.atime;
    }
    if (req.mtime_how != TimeUpdate::kDontChange) {
      n->attr.mtime = req.mtime_how == TimeUpdate::kServerTime ? now : req.mtime;
    }
    if (req.size || req.atime_how != TimeUpdate::kDontChange ||
        req.mtime_how != TimeUpdate::kDontChange) {
      n->create_verifier.reset();
    }
    n->attr.ctime = now;
  }

  void Resize(Inode* n, uint64_t size) {
    if (size < n->attr.size) {
      // Drop whole blocks past the end and zero the tail of the last one, so
      // that growing the file again exposes zeros.
      const uint64_t keep = (size + kBlockSize - 1) / kBlockSize;
      auto first_dropped = n->blocks.lower_bound(keep);
      bytes_allocated_ -= std::distance(first_dropped, n->blocks.end()) * kBlockSize;
      n->blocks.erase(first_dropped, n->blocks.end());
      if (size % kBlockSize != 0) {
        auto last = n->blocks.find(size / kBlockSize);
        if (last != n->blocks.end()) {
          std::memset(last->second.get() + size % kBlockSize, 0, kBlockSize - size % kBlockSize);
        }
      }
    }
    n->attr.size = size;
    n->attr.used = n->blocks.size() * kBlockSize;
  }

  void CopyOut(const Inode& n, uint64_t offset, uint64_t len, uint8_t* out) const {
    while (len > 0) {
      const uint64_t index = offset / kBlockSize;
      const uint64_t within = offset % kBlockSize;
      const uint64_t chunk = std::min(len, kBlockSize - within);
      auto it = n.blocks.find(index);
      if (it == n.blocks.end()) {
        std::memset(out, 0, chunk);
      } else {
        std::memcpy(out, it->second.get() + within, chunk);
      }
      out += chunk;
      offset += chunk;
      len -= chunk;
    }
  }

  void CopyIn(Inode* n, uint64_t offset, std::span<const uint8_t> data) {
    while (!data.empty()) {
      const uint64_t index = offset / kBlockSize;
      const uint64_t within = offset % kBlockSize;
      const size_t chunk = std::min<uint64_t>(data.size(), kBlockSize - within);
      auto& block = n->blocks[index];
      if (!block) {
        block.reset(new uint8_t[kBlockSize]());
        bytes_allocated_ += kBlockSize;
      }
      std::memcpy(block.get() + within, data.data(), chunk);
      data = data.subspan(chunk);
      offset += chunk;
    }
    n->attr.used = n->blocks.size() * kBlockSize;
  }

  std::mutex mu_;
  Clock* const clock_;
  uint64_t generation_seed_;
  uint64_t next_ino_ = kRootIno;
  uint64_t bytes_allocated_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Inode>> inodes_;
};

MemoryBackend::MemoryBackend(Clock* clock) : tree_(std::make_unique<Tree>(clock)) {}
MemoryBackend::~MemoryBackend() = default;

Capabilities MemoryBackend::GetCapabilities() const { return kCapabilities; }

Result<Handle> MemoryBackend::Root() { return tree_->RootHandle(); }

void MemoryBackend::GetAttr(const Credentials&, const Handle& h, Callback<Attr> cb) {
  cb(tree_->GetAttr(h));
}

void MemoryBackend::SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& attrs,
                            std::optional<WallTime> guard_ctime, Callback<Wcc> cb) {
  cb(tree_->SetAttr(cred, h, attrs, guard_ctime));
}

void MemoryBackend::Lookup(const Credentials& cred, const Handle& dir, std::string_view name,
                           Callback<LookupReply> cb) {
  cb(tree_->Lookup(cred, dir, name));
}

void MemoryBackend::LookupParent(const Credentials& cred, const Handle& dir,
                                 Callback<LookupReply> cb) {
  cb(tree_->LookupParent(cred, dir));
}

void MemoryBackend::Access(const Credentials& cred, const Handle& h, uint32_t requested,
                           Callback<AccessReply> cb) {
  cb(tree_->Access(cred, h, requested));
}

void MemoryBackend::ReadLink(const Credentials&, const Handle& h, Callback<ReadLinkReply> cb) {
  cb(tree_->ReadLink(h));
}

void MemoryBackend::Read(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
                         Callback<ReadReply> cb) {
  cb(tree_->Read(cred, h, offset, count));
}

void MemoryBackend::Write(const Credentials& cred, const Handle& h, uint64_t offset, Buffer data,
                          Stability stability, Callback<WriteReply> cb) {
  cb(tree_->Write(cred, h, offset, data, stability));
}

void MemoryBackend::Create(const Credentials& cred, const Handle& dir, std::string_view name,
                           const CreateRequest& req, Callback<CreateReply> cb) {
  cb(tree_->Create(cred, dir, name, req));
}

void MemoryBackend::Mkdir(const Credentials& cred, const Handle& dir, std::string_view name,
                          const SetAttrs& attrs, Callback<CreateReply> cb) {
  cb(tree_->Mkdir(cred, dir, name, attrs));
}

void MemoryBackend::Symlink(const Credentials& cred, const Handle& dir, std::string_view name,
                            std::string_view target, const SetAttrs& attrs,
                            Callback<CreateReply> cb) {
  cb(tree_->Symlink(cred, dir, name, target, attrs));
}

void MemoryBackend::Mknod(const Credentials& cred, const Handle& dir, std::string_view name,
                          const MknodRequest& req, Callback<CreateReply> cb) {
  cb(tree_->Mknod(cred, dir, name, req));
}

void MemoryBackend::Remove(const Credentials& cred, const Handle& dir, std::string_view name,
                           Callback<Wcc> cb) {
  cb(tree_->Remove(cred, dir, name, /*want_dir=*/false));
}

void MemoryBackend::Rmdir(const Credentials& cred, const Handle& dir, std::string_view name,
                          Callback<Wcc> cb) {
  cb(tree_->Remove(cred, dir, name, /*want_dir=*/true));
}

void MemoryBackend::Rename(const Credentials& cred, const Handle& from_dir,
                           std::string_view from_name, const Handle& to_dir,
                           std::string_view to_name, Callback<RenameReply> cb) {
  cb(tree_->Rename(cred, from_dir, from_name, to_dir, to_name));
}

void MemoryBackend::Link(const Credentials& cred, const Handle& file, const Handle& dir,
                         std::string_view name, Callback<LinkReply> cb) {
  cb(tree_->Link(cred, file, dir, name));
}

void MemoryBackend::ReadDir(const Credentials& cred, const Handle& dir, const ReadDirRequest& req,
                            Callback<DirPage> cb) {
  cb(tree_->ReadDir(cred, dir, req));
}

void MemoryBackend::FsStat(const Credentials&, const Handle& h, Callback<FsStats> cb) {
  cb(tree_->FsStat(h));
}

void MemoryBackend::Commit(const Credentials& cred, const Handle& h, uint64_t, uint32_t,
                           Callback<Wcc> cb) {
  cb(tree_->Commit(cred, h));
}

}  // namespace geofs::vfs
