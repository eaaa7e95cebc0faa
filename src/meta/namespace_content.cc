// Namespace: attributes and file contents (chunk maps).
#include <map>
#include <set>

#include "meta/namespace.h"
#include "meta/schema.h"
#include "meta/txn.h"
#include "vfs/access.h"

namespace geofs::meta {
namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

// What is left of `e` once [begin, end) and everything from `new_size` on
// are cut away: at most two pieces, each still naming its part of the chunk.
std::vector<Extent> Remaining(const Extent& e, uint64_t begin, uint64_t end, uint64_t new_size) {
  std::vector<Extent> out;
  auto keep = [&](uint64_t from, uint64_t to) {
    from = std::max(from, e.offset);
    to = std::min({to, e.end(), new_size});
    if (from >= to) return;
    Extent piece = e;
    piece.offset = from;
    piece.length = to - from;
    piece.chunk_offset = e.chunk_offset + (from - e.offset);
    out.push_back(piece);
  };
  if (begin < end) {
    keep(e.offset, begin);
    keep(end, e.end());
  } else {
    keep(e.offset, e.end());
  }
  return out;
}

Status ValidateUpdate(const ChunkMapUpdate& u) {
  const uint64_t max_size = Namespace::Capabilities().max_file_size;
  if (u.new_size > max_size) return Status::FileTooLarge();
  const uint64_t range_end = SaturatingAdd(u.offset, u.length);
  uint64_t prev_end = u.offset;
  for (const Extent& e : u.extents) {
    if (e.length == 0) return Status::InvalidArgument("empty extent");
    if (e.length > UINT64_MAX - e.offset) return Status::InvalidArgument("extent overflows");
    if (e.offset < prev_end) {
      return Status::InvalidArgument("extents out of order, overlapping or outside the range");
    }
    if (e.end() > range_end) return Status::InvalidArgument("extent past the range");
    if (e.end() > u.new_size) return Status::InvalidArgument("extent past the new size");
    if (e.chunk_offset > e.chunk_size || e.length > e.chunk_size - e.chunk_offset) {
      return Status::InvalidArgument("extent past the end of its chunk");
    }
    prev_end = e.end();
  }
  return Status::Ok();
}

}  // namespace

Result<vfs::Wcc> Namespace::SetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
                                    const vfs::SetAttrs& attrs,
                                    std::optional<WallTime> guard_ctime) {
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * rec, txn.InodeByHandle(h));
  vfs::Wcc wcc;
  wcc.before = vfs::ToWcc(rec->ToAttr());
  if (guard_ctime && *guard_ctime != rec->ctime) return Status::NotSync();
  GEOFS_RETURN_IF_ERROR(vfs::CheckSetAttr(rec->ToAttr(), attrs, cred));
  GEOFS_RETURN_IF_ERROR(ApplySetAttrs(txn, rec, attrs, cred));
  wcc.after = rec->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return wcc;
}

Status Namespace::ApplySetAttrs(Txn& txn, InodeRecord* rec, const vfs::SetAttrs& req,
                                const vfs::Credentials& cred) {
  const bool times = req.atime_how != vfs::TimeUpdate::kDontChange ||
                     req.mtime_how != vfs::TimeUpdate::kDontChange;
  if (!req.mode && !req.uid && !req.gid && !req.size && !times) return Status::Ok();
  if (req.size && *req.size > Capabilities().max_file_size) return Status::FileTooLarge();
  const WallTime now = txn.now();
  const uint32_t mode = vfs::ModeAfterSetAttr(rec->ToAttr(), req, cred);
  if (rec->type != vfs::FileType::kSymlink) rec->mode = mode;
  if (req.uid) rec->uid = *req.uid;
  if (req.gid) rec->gid = *req.gid;
  if (req.size) {
    if (*req.size != rec->size) {
      GEOFS_RETURN_IF_ERROR(CutExtents(txn, rec, 0, 0, *req.size));
      rec->size = *req.size;
      ++rec->version;
    }
    rec->mtime = now;
  }
  if (req.atime_how != vfs::TimeUpdate::kDontChange) {
    rec->atime = req.atime_how == vfs::TimeUpdate::kServerTime ? now : req.atime;
  }
  if (req.mtime_how != vfs::TimeUpdate::kDontChange) {
    rec->mtime = req.mtime_how == vfs::TimeUpdate::kServerTime ? now : req.mtime;
  }
  if (req.size || times) rec->verifier.reset();
  rec->ctime = now;
  return Status::Ok();
}

Status Namespace::CutExtents(Txn& txn, InodeRecord* file, uint64_t begin, uint64_t end,
                             uint64_t new_size) {
  // Two bounded scans (the range, and the tail past new_size) so that a
  // small update of a huge file touches only the extents it cuts.
  std::map<uint64_t, Extent> affected;  // by end offset
  const std::string prefix = schema::ExtentPrefix(file->ino);
  std::unique_ptr<KvIterator> it = txn.store()->NewIterator(prefix, PrefixSuccessor(prefix));
  auto scan = [&](uint64_t from, uint64_t to) -> Status {
    for (it->Seek(schema::ExtentKey(file->ino, from + 1)); it->Valid(); it->Next()) {
      uint64_t ino, extent_end;
      if (!schema::ParseExtentKey(it->key(), &ino, &extent_end)) {
        return Status::Corruption("malformed extent key");
      }
      GEOFS_ASSIGN_OR_RETURN(Extent e, schema::DecodeExtent(extent_end, it->value()));
      if (e.offset >= to) break;
      affected.emplace(extent_end, e);
    }
    return it->status();
  };
  if (begin < end) GEOFS_RETURN_IF_ERROR(scan(begin, end));
  if (new_size < file->size) {
    GEOFS_RETURN_IF_ERROR(scan(new_size, UINT64_MAX));
  }
  it.reset();
  for (const auto& [extent_end, e] : affected) {
    std::vector<Extent> rest = Remaining(e, begin, end, new_size);
    if (rest.size() == 1 && rest[0] == e) continue;
    txn.DeleteExtent(file, e);
    for (const Extent& piece : rest) txn.PutExtent(file, piece);
  }
  return Status::Ok();
}

Result<CommitReply> Namespace::CommitChunkMap(const vfs::Credentials& cred, const vfs::Handle& h,
                                              const ChunkMapUpdate& update) {
  GEOFS_RETURN_IF_ERROR(ValidateUpdate(update));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * file, txn.InodeByHandle(h));
  CommitReply reply;
  reply.wcc.before = vfs::ToWcc(file->ToAttr());
  GEOFS_RETURN_IF_ERROR(vfs::CheckWrite(file->ToAttr(), cred));
  if (file->version != update.expected_version) {
    return Status::Aborted("file version is " + std::to_string(file->version) + ", not " +
                           std::to_string(update.expected_version));
  }
  // Every chunk named must be registered, not being collected, and of its
  // recorded size (Txn::Finish checks only chunks whose refcount moves).
  std::set<ChunkId> checked;
  for (const Extent& e : update.extents) {
    if (!checked.insert(e.chunk).second) continue;
    GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value,
                           store_->Get(schema::ChunkKey(e.chunk)));
    if (!value) return Status::InvalidArgument("chunk " + ChunkIdHex(e.chunk) + " not registered");
    GEOFS_ASSIGN_OR_RETURN(ChunkInfo c, schema::DecodeChunk(e.chunk, *value));
    if (c.collecting) {
      return Status::Unavailable("chunk " + ChunkIdHex(e.chunk) + " is being garbage-collected");
    }
    if (c.size != e.chunk_size) {
      return Status::InvalidArgument("chunk " + ChunkIdHex(e.chunk) + " has size " +
                                     std::to_string(c.size));
    }
  }
  const uint64_t range_end = SaturatingAdd(update.offset, update.length);
  GEOFS_RETURN_IF_ERROR(CutExtents(txn, file, update.offset, range_end, update.new_size));
  for (const Extent& e : update.extents) txn.PutExtent(file, e);
  file->size = update.new_size;
  ++file->version;
  file->mode = vfs::ModeAfterWrite(file->ToAttr(), cred);
  file->mtime = update.mtime.value_or(txn.now());
  file->ctime = txn.now();
  file->verifier.reset();
  reply.version = file->version;
  reply.wcc.after = file->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return reply;
}

}  // namespace geofs::meta
