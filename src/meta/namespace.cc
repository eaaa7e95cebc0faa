// Namespace: opening, commits, and the read-only operations.
#include "meta/namespace.h"

#include <random>

#include "common/logging.h"
#include "meta/schema.h"
#include "meta/txn.h"
#include "vfs/access.h"

namespace geofs::meta {
namespace {

using schema::InodeRecord;

constexpr size_t kHandleBytes = 16;
constexpr uint64_t kDirSize = 4096;

// SplitMix64's finaliser: a bijection on 64-bit values, so distinct inputs
// give distinct outputs.
uint64_t Mix64(uint64_t x) {
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

// Set while an UnsyncedScope lives on this thread.
thread_local bool t_unsynced = false;

uint64_t RandomSalt() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

Namespace::Namespace(KvStore* store, const NamespaceOptions& options)
    : store_(store), options_(options) {}

Namespace::~Namespace() = default;

Result<std::unique_ptr<Namespace>> Namespace::Open(KvStore* store,
                                                   const NamespaceOptions& options) {
  if (options.ino_reserve == 0) return Status::InvalidArgument("ino_reserve must be > 0");
  std::unique_ptr<Namespace> ns(new Namespace(store, options));
  GEOFS_RETURN_IF_ERROR(ns->Load());
  return ns;
}

Status Namespace::Load() {
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> format, store_->Get(schema::FormatKey()));
  if (!format) {
    std::unique_ptr<KvIterator> it = store_->NewIterator("", "");
    it->Seek("");
    if (it->Valid()) return Status::Corruption("store holds data but no namespace");
    GEOFS_RETURN_IF_ERROR(it->status());
    it.reset();

    salt_ = RandomSalt();
    const WallTime now = Now();
    InodeRecord root;
    root.ino = schema::kRootIno;
    root.type = vfs::FileType::kDirectory;
    root.mode = options_.root_mode & vfs::kModeMask;
    root.uid = options_.root_uid;
    root.gid = options_.root_gid;
    root.nlink = 2;
    root.size = root.used = kDirSize;
    root.atime = root.mtime = root.ctime = now;
    root.generation = GenerationOf(schema::kRootIno);
    root.version = 1;
    root.parent = schema::kRootIno;
    root.next_cookie = schema::kFirstCookie;
    NamespaceStats stats;
    stats.inodes = stats.directories = 1;
    next_ino_ = ino_limit_ = schema::kRootIno + 1;

    WriteBatch batch;
    batch.Put(schema::FormatKey(), schema::EncodeU64(schema::kFormatVersion));
    batch.Put(schema::SaltKey(), schema::EncodeU64(salt_));
    batch.Put(schema::InoLimitKey(), schema::EncodeU64(ino_limit_));
    batch.Put(schema::InodeKey(root.ino), schema::EncodeInode(root));
    batch.Put(schema::StatsKey(), schema::EncodeStats(stats));
    GEOFS_RETURN_IF_ERROR(store_->Write(batch, /*sync=*/true));
    stats_ = stats;
    root_handle_ = HandleOf(root);
    return Status::Ok();
  }

  GEOFS_ASSIGN_OR_RETURN(uint64_t version, schema::DecodeU64(*format));
  if (version != schema::kFormatVersion) {
    return Status::NotSupported("namespace format " + std::to_string(version));
  }
  auto read_u64 = [&](const std::string& key) -> Result<uint64_t> {
    GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> v, store_->Get(key));
    if (!v) return Status::Corruption("missing " + key);
    return schema::DecodeU64(*v);
  };
  GEOFS_ASSIGN_OR_RETURN(salt_, read_u64(schema::SaltKey()));
  GEOFS_ASSIGN_OR_RETURN(ino_limit_, read_u64(schema::InoLimitKey()));
  // Numbers reserved by the previous run may have been handed out: skip them.
  next_ino_ = ino_limit_;
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> stats, store_->Get(schema::StatsKey()));
  if (!stats) return Status::Corruption("missing statistics record");
  GEOFS_ASSIGN_OR_RETURN(stats_, schema::DecodeStats(*stats));
  GEOFS_ASSIGN_OR_RETURN(InodeRecord root, ReadInode(*store_, schema::kRootIno));
  root_handle_ = HandleOf(root);
  return Status::Ok();
}

void Namespace::Reload() {
  Result<std::optional<std::string>> limit = store_->Get(schema::InoLimitKey());
  Result<std::optional<std::string>> stats = store_->Get(schema::StatsKey());
  if (limit.ok() && *limit && stats.ok() && *stats) {
    Result<uint64_t> l = schema::DecodeU64(**limit);
    Result<NamespaceStats> s = schema::DecodeStats(**stats);
    if (l.ok() && s.ok()) {
      ino_limit_ = *l;
      next_ino_ = std::max(next_ino_, ino_limit_);
      stats_ = *s;
      return;
    }
  }
  GetLogger("meta")->error("cannot re-read namespace counters after a failed write");
}

vfs::Handle Namespace::MakeHandle(uint64_t ino, uint64_t generation) {
  std::array<uint8_t, kHandleBytes> bytes;
  PutBigEndian64(ino, bytes.data());
  PutBigEndian64(generation, bytes.data() + 8);
  return vfs::Handle(bytes);
}

Result<Namespace::HandleParts> Namespace::ParseHandle(const vfs::Handle& h) {
  if (h.size() != kHandleBytes) return Status::BadHandle();
  return HandleParts{GetBigEndian64(h.bytes().data()), GetBigEndian64(h.bytes().data() + 8)};
}

vfs::Capabilities Namespace::Capabilities() { return vfs::Capabilities{}; }

uint64_t Namespace::GenerationOf(uint64_t ino) const { return Mix64(ino ^ salt_); }

vfs::Handle Namespace::HandleOf(const InodeRecord& rec) const {
  return MakeHandle(rec.ino, rec.generation);
}

vfs::Entry Namespace::EntryOf(const InodeRecord& rec) const {
  return vfs::Entry{HandleOf(rec), rec.ToAttr()};
}

Status Namespace::Commit(Txn& txn, std::unique_lock<std::mutex>& lock, bool sync) {
  // A store that a failed write stopped (a full disk) resumes once it has
  // room. This change was prepared against counters that may have moved
  // since (a write whose sync failed may not have survived): it is not
  // applied, and the caller retries it.
  GEOFS_ASSIGN_OR_RETURN(bool resumed, store_->Resume());
  if (resumed) {
    Reload();
    return Status::Unavailable("the namespace store has just resumed after a failed write");
  }
  GEOFS_RETURN_IF_ERROR(txn.Finish());
  uint64_t limit = ino_limit_;
  if (!txn.batch().empty()) {
    if (next_ino_ > ino_limit_) {
      limit = next_ino_ + options_.ino_reserve;
      txn.batch().Put(schema::InoLimitKey(), schema::EncodeU64(limit));
    }
    txn.batch().Put(schema::StatsKey(), schema::EncodeStats(txn.stats()));
    Status written = store_->Write(txn.batch(), /*sync=*/false);
    if (!written.ok()) {
      Reload();
      return written;
    }
    ino_limit_ = limit;
    stats_ = txn.stats();
  }
  lock.unlock();
  if (!sync || t_unsynced) return Status::Ok();
  // Even a change that wrote nothing answers only once what it saw is
  // durable (an EXCLUSIVE replay must not confirm a create still in flight).
  return store_->Sync();
}

Namespace::UnsyncedScope::UnsyncedScope() : previous_(t_unsynced) { t_unsynced = true; }

Namespace::UnsyncedScope::~UnsyncedScope() { t_unsynced = previous_; }

Status Namespace::Sync() { return store_->Sync(); }

Namespace::InodeRecord* Namespace::NewInode(Txn& txn, vfs::FileType type, uint32_t mode,
                                            uint32_t uid, uint32_t gid, uint64_t ino) {
  InodeRecord r;
  r.ino = ino != 0 ? ino : next_ino_++;
  r.type = type;
  r.mode = mode & vfs::kModeMask;
  r.uid = uid;
  r.gid = gid;
  r.generation = GenerationOf(r.ino);
  r.version = 1;
  r.atime = r.mtime = r.ctime = txn.now();
  if (type == vfs::FileType::kDirectory) {
    // Linked from its parent and from its own ".".
    r.nlink = 2;
    r.size = r.used = kDirSize;
    r.next_cookie = schema::kFirstCookie;
  }
  return txn.AddInode(std::move(r));
}

Result<vfs::Attr> Namespace::GetAttr(const vfs::Handle& h) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInodeByHandle(*snap, h));
  return rec.ToAttr();
}

Result<vfs::LookupReply> Namespace::Lookup(const vfs::Credentials& cred, const vfs::Handle& dir,
                                           std::string_view name) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(name));
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord parent, ReadInodeByHandle(*snap, dir));
  const vfs::Attr dir_attr = parent.ToAttr();
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(dir_attr, cred));
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> entry,
                         ReadEntry(*snap, parent.ino, name));
  if (!entry) return Status::NotFound(name);
  Result<InodeRecord> child = ReadInode(*snap, entry->child);
  if (!child.ok()) return Status::Corruption("entry " + std::string(name) + " names no inode");
  return vfs::LookupReply{EntryOf(*child), dir_attr};
}

Result<std::optional<uint64_t>> Namespace::EntryIno(const vfs::Handle& dir, std::string_view name) {
  GEOFS_ASSIGN_OR_RETURN(HandleParts parts, ParseHandle(dir));
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> entry,
                         ReadEntry(*store_, parts.ino, name));
  if (!entry) return std::optional<uint64_t>();
  return std::optional<uint64_t>(entry->child);
}

Result<vfs::LookupReply> Namespace::LookupParent(const vfs::Credentials& cred,
                                                 const vfs::Handle& dir) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInodeByHandle(*snap, dir));
  const vfs::Attr dir_attr = rec.ToAttr();
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(dir_attr, cred));
  GEOFS_ASSIGN_OR_RETURN(InodeRecord parent, ReadInode(*snap, rec.parent));
  return vfs::LookupReply{EntryOf(parent), dir_attr};
}

Result<vfs::AccessReply> Namespace::Access(const vfs::Credentials& cred, const vfs::Handle& h,
                                           uint32_t requested) {
  GEOFS_ASSIGN_OR_RETURN(vfs::Attr attr, GetAttr(h));
  return vfs::AccessReply{vfs::GrantedAccess(attr, cred, requested), attr};
}

Result<vfs::ReadLinkReply> Namespace::ReadLink(const vfs::Handle& h) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInodeByHandle(*snap, h));
  if (rec.type != vfs::FileType::kSymlink) return Status::InvalidArgument("not a symlink");
  return vfs::ReadLinkReply{rec.target, rec.ToAttr()};
}

Result<vfs::DirPage> Namespace::ReadDir(const vfs::Credentials& cred, const vfs::Handle& dir,
                                        const vfs::ReadDirRequest& req) {
  if (req.max_entries == 0) return Status::TooSmall("max_entries is 0");
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInodeByHandle(*snap, dir));
  const vfs::Attr dir_attr = rec.ToAttr();
  GEOFS_RETURN_IF_ERROR(vfs::CheckList(dir_attr, cred));
  if (req.cookie >= rec.next_cookie) return Status::BadCookie();
  const bool with_attrs = req.with_attrs && vfs::HasPermission(dir_attr, cred, vfs::kMayExec);

  vfs::DirPage page;
  page.verifier = rec.generation;
  page.dir_attr = dir_attr;
  auto add = [&](const InodeRecord& n, std::string name, uint64_t cookie) {
    vfs::DirEntry e{n.ino, std::move(name), cookie, std::nullopt};
    if (with_attrs) e.entry = EntryOf(n);
    page.entries.push_back(std::move(e));
  };
  if (req.cookie < schema::kDotCookie) add(rec, ".", schema::kDotCookie);
  // A page that fills up with "." still owes ".." to the next one.
  bool dotdot_pending = req.cookie < schema::kDotDotCookie;
  if (dotdot_pending && page.entries.size() < req.max_entries) {
    GEOFS_ASSIGN_OR_RETURN(InodeRecord parent, ReadInode(*snap, rec.parent));
    add(parent, "..", schema::kDotDotCookie);
    dotdot_pending = false;
  }
  const uint64_t first = std::max(req.cookie + 1, schema::kFirstCookie);
  std::unique_ptr<KvIterator> it = snap->NewIterator(
      schema::CookiePrefix(rec.ino), PrefixSuccessor(schema::CookiePrefix(rec.ino)));
  for (it->Seek(schema::CookieKey(rec.ino, first));
       it->Valid() && page.entries.size() < req.max_entries; it->Next()) {
    uint64_t dir_ino, cookie;
    if (!schema::ParseCookieKey(it->key(), &dir_ino, &cookie)) {
      return Status::Corruption("malformed directory cookie key");
    }
    GEOFS_ASSIGN_OR_RETURN(schema::CookieValue v, schema::DecodeCookie(it->value()));
    if (with_attrs) {
      Result<InodeRecord> child = ReadInode(*snap, v.child);
      if (!child.ok()) return Status::Corruption("entry " + v.name + " names no inode");
      add(*child, std::move(v.name), cookie);
    } else {
      page.entries.push_back(vfs::DirEntry{v.child, std::move(v.name), cookie, std::nullopt});
    }
  }
  GEOFS_RETURN_IF_ERROR(it->status());
  page.eof = !dotdot_pending && !it->Valid();
  return page;
}

Result<ChunkMap> Namespace::GetChunkMap(const vfs::Credentials& cred, const vfs::Handle& h,
                                        uint64_t offset, uint64_t length) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInodeByHandle(*snap, h));
  ChunkMap map;
  map.version = rec.version;
  map.attr = rec.ToAttr();
  GEOFS_RETURN_IF_ERROR(vfs::CheckRead(map.attr, cred));
  // Every extent ends at or below the size, so nothing starts past it.
  if (length == 0 || offset >= rec.size) return map;
  const uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  const std::string prefix = schema::ExtentPrefix(rec.ino);
  std::unique_ptr<KvIterator> it = snap->NewIterator(prefix, PrefixSuccessor(prefix));
  // Extents are keyed by their end: the first whose end is past `offset` is
  // the first that overlaps the range.
  for (it->Seek(schema::ExtentKey(rec.ino, offset + 1)); it->Valid(); it->Next()) {
    uint64_t ino, extent_end;
    if (!schema::ParseExtentKey(it->key(), &ino, &extent_end)) {
      return Status::Corruption("malformed extent key");
    }
    GEOFS_ASSIGN_OR_RETURN(Extent e, schema::DecodeExtent(extent_end, it->value()));
    if (e.offset >= end) break;
    map.extents.push_back(e);
  }
  GEOFS_RETURN_IF_ERROR(it->status());
  return map;
}

Result<NamespaceStats> Namespace::Stats() {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, snap->Get(schema::StatsKey()));
  if (!value) return Status::Corruption("missing statistics record");
  return schema::DecodeStats(*value);
}

}  // namespace geofs::meta
