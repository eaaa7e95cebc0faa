// Namespace: operations that remove or move names.
#include "meta/namespace.h"
#include "meta/schema.h"
#include "meta/txn.h"
#include "vfs/access.h"

namespace geofs::meta {
namespace {

// No valid tree is deeper; a longer walk up means a cycle of parents.
constexpr int kMaxDepth = 1 << 20;

// The inode an entry names; its absence is corruption, not ENOENT.
Result<schema::InodeRecord*> EntryTarget(Txn& txn, const schema::DirentValue& entry) {
  Result<schema::InodeRecord*> rec = txn.Inode(entry.child);
  if (!rec.ok() && rec.status().code() == StatusCode::kNotFound) {
    return Status::Corruption("entry names missing inode " + std::to_string(entry.child));
  }
  return rec;
}

}  // namespace

Result<vfs::Wcc> Namespace::Remove(const vfs::Credentials& cred, const vfs::Handle& dir,
                                   std::string_view name) {
  return RemoveName(cred, dir, name, /*want_dir=*/false);
}

Result<vfs::Wcc> Namespace::Rmdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                                  std::string_view name) {
  return RemoveName(cred, dir, name, /*want_dir=*/true);
}

Result<vfs::Wcc> Namespace::RemoveName(const vfs::Credentials& cred, const vfs::Handle& dir_handle,
                                       std::string_view name, bool want_dir) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(name));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * dir, txn.InodeByHandle(dir_handle));
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(dir->ToAttr(), cred));
  vfs::Wcc wcc;
  wcc.before = vfs::ToWcc(dir->ToAttr());
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> entry, txn.FindEntry(dir->ino, name));
  if (!entry) return Status::NotFound(name);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * victim, EntryTarget(txn, *entry));
  GEOFS_RETURN_IF_ERROR(vfs::CheckDelete(dir->ToAttr(), victim->ToAttr(), cred));
  if (want_dir && !victim->is_dir()) return Status::NotDirectory(name);
  if (!want_dir && victim->is_dir()) return Status::IsDirectory(name);
  if (want_dir && victim->entries > 0) return Status::NotEmpty(name);
  txn.UnlinkEntry(dir, name, entry->cookie, victim);
  GEOFS_RETURN_IF_ERROR(ReleaseInode(txn, victim));
  dir->mtime = dir->ctime = txn.now();
  wcc.after = dir->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return wcc;
}

Status Namespace::ReleaseInode(Txn& txn, InodeRecord* victim) {
  if (!victim->is_dir() && victim->nlink > 0) {
    victim->ctime = txn.now();
    return Status::Ok();
  }
  if (victim->type == vfs::FileType::kRegular) {
    const std::string prefix = schema::ExtentPrefix(victim->ino);
    std::unique_ptr<KvIterator> it = txn.store()->NewIterator(prefix, PrefixSuccessor(prefix));
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      uint64_t ino, end;
      if (!schema::ParseExtentKey(it->key(), &ino, &end)) {
        return Status::Corruption("malformed extent key");
      }
      GEOFS_ASSIGN_OR_RETURN(Extent e, schema::DecodeExtent(end, it->value()));
      txn.DeleteExtent(victim, e);
    }
    GEOFS_RETURN_IF_ERROR(it->status());
  }
  txn.RemoveInode(victim->ino);
  return Status::Ok();
}

Result<bool> Namespace::IsSelfOrAncestor(Txn& txn, uint64_t ancestor, uint64_t dir) {
  uint64_t cur = dir;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    if (cur == ancestor) return true;
    if (cur == schema::kRootIno) return false;
    GEOFS_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(cur));
    cur = rec->parent;
  }
  return Status::Corruption("directory parents form a cycle");
}

Result<vfs::RenameReply> Namespace::Rename(const vfs::Credentials& cred,
                                           const vfs::Handle& from_handle,
                                           std::string_view from_name, const vfs::Handle& to_handle,
                                           std::string_view to_name) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(from_name));
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(to_name));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  // The same directory twice yields the same staged record.
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * from, txn.InodeByHandle(from_handle));
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * to, txn.InodeByHandle(to_handle));
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(from->ToAttr(), cred));
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(to->ToAttr(), cred));
  vfs::RenameReply reply;
  reply.from_dir_wcc.before = vfs::ToWcc(from->ToAttr());
  reply.to_dir_wcc.before = vfs::ToWcc(to->ToAttr());

  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> src_entry,
                         txn.FindEntry(from->ino, from_name));
  if (!src_entry) return Status::NotFound(from_name);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * src, EntryTarget(txn, *src_entry));
  GEOFS_RETURN_IF_ERROR(vfs::CheckDelete(from->ToAttr(), src->ToAttr(), cred));
  GEOFS_RETURN_IF_ERROR(vfs::CheckDirWrite(to->ToAttr(), cred));
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> dst_entry,
                         txn.FindEntry(to->ino, to_name));
  InodeRecord* dst = nullptr;
  if (dst_entry) {
    GEOFS_ASSIGN_OR_RETURN(dst, EntryTarget(txn, *dst_entry));
    GEOFS_RETURN_IF_ERROR(vfs::CheckDelete(to->ToAttr(), dst->ToAttr(), cred));
  }
  // Moving a directory rewrites its "..".
  if (src->is_dir() && from != to && !vfs::HasPermission(src->ToAttr(), cred, vfs::kMayWrite)) {
    return Status::AccessDenied("moving a directory needs write permission on it");
  }
  // Two names of one object: POSIX says do nothing.
  if (dst != src) {
    if (src->is_dir()) {
      GEOFS_ASSIGN_OR_RETURN(bool into_itself, IsSelfOrAncestor(txn, src->ino, to->ino));
      if (into_itself) return Status::InvalidArgument("cannot move a directory into itself");
    }
    if (dst) {
      if (src->is_dir() && !dst->is_dir()) return Status::NotDirectory(to_name);
      if (!src->is_dir() && dst->is_dir()) return Status::IsDirectory(to_name);
      if (dst->is_dir() && dst->entries > 0) return Status::NotEmpty(to_name);
      txn.UnlinkEntry(to, to_name, dst_entry->cookie, dst);
      GEOFS_RETURN_IF_ERROR(ReleaseInode(txn, dst));
    }
    txn.UnlinkEntry(from, from_name, src_entry->cookie, src);
    txn.LinkEntry(to, to_name, src);
    src->ctime = txn.now();
    from->mtime = from->ctime = txn.now();
    to->mtime = to->ctime = txn.now();
  }
  reply.from_dir_wcc.after = from->ToAttr();
  reply.to_dir_wcc.after = to->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return reply;
}

}  // namespace geofs::meta
