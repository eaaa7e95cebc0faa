#include "meta/txn.h"

#include "meta/namespace.h"

namespace geofs::meta {
namespace {

using schema::InodeRecord;

// Counters move by signed deltas; unsigned wrap-around makes that exact.
void Add(uint64_t& field, int64_t delta) { field += static_cast<uint64_t>(delta); }

}  // namespace

void AccountInode(NamespaceStats& s, const InodeRecord& r, int64_t sign) {
  Add(s.inodes, sign);
  switch (r.type) {
    case vfs::FileType::kDirectory:
      Add(s.directories, sign);
      break;
    case vfs::FileType::kRegular:
      Add(s.files, sign);
      Add(s.logical_bytes, sign * static_cast<int64_t>(r.size));
      break;
    case vfs::FileType::kSymlink:
      Add(s.symlinks, sign);
      break;
    default:
      Add(s.specials, sign);
      break;
  }
}

Result<InodeRecord> ReadInode(KvReader& reader, uint64_t ino) {
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, reader.Get(schema::InodeKey(ino)));
  if (!value) return Status::NotFound("no inode " + std::to_string(ino));
  return schema::DecodeInode(ino, *value);
}

Result<InodeRecord> ReadInodeByHandle(KvReader& reader, const vfs::Handle& h) {
  GEOFS_ASSIGN_OR_RETURN(Namespace::HandleParts parts, Namespace::ParseHandle(h));
  Result<InodeRecord> rec = ReadInode(reader, parts.ino);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) return Status::Stale();
    return rec.status();
  }
  if (rec->generation != parts.generation) return Status::Stale();
  return rec;
}

Result<std::optional<schema::DirentValue>> ReadEntry(KvReader& reader, uint64_t dir,
                                                     std::string_view name) {
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value,
                         reader.Get(schema::DirentKey(dir, name)));
  if (!value) return std::optional<schema::DirentValue>();
  GEOFS_ASSIGN_OR_RETURN(schema::DirentValue entry, schema::DecodeDirent(*value));
  return std::optional<schema::DirentValue>(entry);
}

Txn::Txn(KvStore* store, WallTime now, const NamespaceStats& stats)
    : store_(store), now_(now), stats_(stats) {}

Result<InodeRecord*> Txn::Inode(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) {
    GEOFS_ASSIGN_OR_RETURN(InodeRecord rec, ReadInode(*store_, ino));
    it = inodes_.emplace(ino, Slot{rec, rec}).first;
  }
  if (!it->second.current) return Status::NotFound("inode " + std::to_string(ino) + " removed");
  return &*it->second.current;
}

Result<InodeRecord*> Txn::InodeByHandle(const vfs::Handle& h) {
  GEOFS_ASSIGN_OR_RETURN(Namespace::HandleParts parts, Namespace::ParseHandle(h));
  Result<InodeRecord*> rec = Inode(parts.ino);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) return Status::Stale();
    return rec.status();
  }
  if ((*rec)->generation != parts.generation) return Status::Stale();
  return rec;
}

InodeRecord* Txn::AddInode(InodeRecord rec) {
  const uint64_t ino = rec.ino;
  Slot& slot = inodes_[ino];
  slot.current = std::move(rec);
  return &*slot.current;
}

void Txn::RemoveInode(uint64_t ino) { inodes_[ino].current.reset(); }

Result<std::optional<schema::DirentValue>> Txn::FindEntry(uint64_t dir, std::string_view name) {
  return ReadEntry(*store_, dir, name);
}

void Txn::LinkEntry(InodeRecord* dir, std::string_view name, InodeRecord* child) {
  const uint64_t cookie = dir->next_cookie++;
  ++dir->entries;
  batch_.Put(schema::DirentKey(dir->ino, name),
             schema::EncodeDirent({child->ino, child->type, cookie}));
  batch_.Put(schema::CookieKey(dir->ino, cookie),
             schema::EncodeCookie({child->ino, child->type, std::string(name)}));
  if (child->is_dir()) {
    ++dir->nlink;
    child->parent = dir->ino;
  } else {
    ++child->nlink;
  }
}

void Txn::UnlinkEntry(InodeRecord* dir, std::string_view name, uint64_t cookie,
                      InodeRecord* child) {
  batch_.Delete(schema::DirentKey(dir->ino, name));
  batch_.Delete(schema::CookieKey(dir->ino, cookie));
  --dir->entries;
  if (child->is_dir()) {
    --dir->nlink;
  } else {
    --child->nlink;
  }
}

void Txn::PutExtent(InodeRecord* file, const Extent& e) {
  batch_.Put(schema::ExtentKey(file->ino, e.end()), schema::EncodeExtent(e));
  file->used += e.length;
  ++stats_.extents;
  RefDelta& d = refs_[e.chunk];
  ++d.delta;
  d.size = e.chunk_size;
}

void Txn::DeleteExtent(InodeRecord* file, const Extent& e) {
  batch_.Delete(schema::ExtentKey(file->ino, e.end()));
  file->used -= e.length;
  --stats_.extents;
  RefDelta& d = refs_[e.chunk];
  --d.delta;
  d.size = e.chunk_size;
}

Status Txn::Finish() {
  for (auto& [ino, slot] : inodes_) {
    if (slot.original == slot.current) continue;
    if (slot.original) AccountInode(stats_, *slot.original, -1);
    if (slot.current) {
      AccountInode(stats_, *slot.current, +1);
      batch_.Put(schema::InodeKey(ino), schema::EncodeInode(*slot.current));
    } else {
      batch_.Delete(schema::InodeKey(ino));
    }
  }
  for (const auto& [id, delta] : refs_) {
    if (delta.delta != 0) GEOFS_RETURN_IF_ERROR(ApplyRefDelta(id, delta));
  }
  return Status::Ok();
}

Status Txn::ApplyRefDelta(const ChunkId& id, const RefDelta& d) {
  const std::string key = schema::ChunkKey(id);
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, store_->Get(key));
  if (!value) {
    if (d.delta > 0) return Status::InvalidArgument("chunk " + ChunkIdHex(id) + " not registered");
    return Status::Corruption("extent names unknown chunk " + ChunkIdHex(id));
  }
  GEOFS_ASSIGN_OR_RETURN(ChunkInfo c, schema::DecodeChunk(id, *value));
  if (d.size != c.size) {
    return Status::InvalidArgument("chunk " + ChunkIdHex(id) + " has size " +
                                   std::to_string(c.size) + ", not " + std::to_string(d.size));
  }
  if (d.delta > 0 && c.collecting) {
    return Status::Unavailable("chunk " + ChunkIdHex(id) + " is being garbage-collected");
  }
  const int64_t refs = static_cast<int64_t>(c.refs) + d.delta;
  if (refs < 0) return Status::Corruption("refcount of chunk " + ChunkIdHex(id) + " below 0");
  const int64_t size = static_cast<int64_t>(c.size);
  if (c.refs == 0 && refs > 0) {
    batch_.Delete(schema::GcKey(c.unreferenced_since, id));
    Add(stats_.unreferenced_chunks, -1);
    Add(stats_.unreferenced_bytes, -size);
    Add(stats_.chunks, 1);
    Add(stats_.referenced_bytes, size);
  } else if (c.refs > 0 && refs == 0) {
    c.unreferenced_since = now_;
    batch_.Put(schema::GcKey(now_, id), {});
    Add(stats_.chunks, -1);
    Add(stats_.referenced_bytes, -size);
    Add(stats_.unreferenced_chunks, 1);
    Add(stats_.unreferenced_bytes, size);
  }
  c.refs = static_cast<uint64_t>(refs);
  batch_.Put(key, schema::EncodeChunk(c));
  return Status::Ok();
}

}  // namespace geofs::meta
