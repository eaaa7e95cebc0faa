// Namespace: operations that create names.
#include "meta/namespace.h"
#include "meta/schema.h"
#include "meta/txn.h"
#include "vfs/access.h"

namespace geofs::meta {

Result<Namespace::InodeRecord*> Namespace::MakeChild(Txn& txn, const vfs::Credentials& cred,
                                                     InodeRecord* dir, std::string_view name,
                                                     vfs::FileType type, const vfs::SetAttrs& attrs,
                                                     uint64_t ino) {
  const vfs::NewOwnership own =
      vfs::NewObjectOwnership(dir->ToAttr(), cred, type, attrs.mode.value_or(0));
  vfs::SetAttrs rest = attrs;
  rest.mode.reset();
  if (type != vfs::FileType::kRegular) rest.size.reset();
  vfs::Attr proto;
  proto.type = type;
  proto.mode = own.mode;
  proto.uid = own.uid;
  proto.gid = own.gid;
  GEOFS_RETURN_IF_ERROR(vfs::CheckSetAttr(proto, rest, cred));
  InodeRecord* n = NewInode(txn, type, own.mode, own.uid, own.gid, ino);
  txn.LinkEntry(dir, name, n);
  GEOFS_RETURN_IF_ERROR(ApplySetAttrs(txn, n, rest, cred));
  dir->mtime = dir->ctime = txn.now();
  return n;
}

Result<vfs::CreateReply> Namespace::CreateNode(const vfs::Credentials& cred,
                                               const vfs::Handle& dir_handle, std::string_view name,
                                               vfs::FileType type, const vfs::SetAttrs& attrs,
                                               const std::function<void(InodeRecord*)>& init) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(name));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * dir, txn.InodeByHandle(dir_handle));
  GEOFS_RETURN_IF_ERROR(vfs::CheckDirWrite(dir->ToAttr(), cred));
  vfs::CreateReply reply;
  reply.dir_wcc.before = vfs::ToWcc(dir->ToAttr());
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> existing,
                         txn.FindEntry(dir->ino, name));
  if (existing) return Status::AlreadyExists(name);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * n, MakeChild(txn, cred, dir, name, type, attrs));
  init(n);
  reply.object = EntryOf(*n);
  reply.dir_wcc.after = dir->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return reply;
}

Result<vfs::CreateReply> Namespace::Create(const vfs::Credentials& cred,
                                           const vfs::Handle& dir_handle, std::string_view name,
                                           const vfs::CreateRequest& req) {
  return CreateAs(cred, dir_handle, name, req, /*reserved_ino=*/0, std::nullopt);
}

Result<vfs::CreateReply> Namespace::CreateReserved(const vfs::Credentials& cred,
                                                   const vfs::Handle& dir_handle,
                                                   std::string_view name,
                                                   const vfs::CreateRequest& req, uint64_t ino,
                                                   std::optional<WallTime> answered_ctime) {
  if (ino == 0) return Status::InvalidArgument("inode number 0 is never reserved");
  if (req.mode == vfs::CreateMode::kExclusive) {
    // The reserved number already makes a replay recognisable.
    return Status::InvalidArgument("an exclusive create cannot use a reserved inode number");
  }
  return CreateAs(cred, dir_handle, name, req, ino, answered_ctime);
}

Result<vfs::CreateReply> Namespace::CreateAs(const vfs::Credentials& cred,
                                             const vfs::Handle& dir_handle, std::string_view name,
                                             const vfs::CreateRequest& req, uint64_t reserved_ino,
                                             std::optional<WallTime> answered_ctime) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(name));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * dir, txn.InodeByHandle(dir_handle));
  GEOFS_RETURN_IF_ERROR(vfs::CheckSearch(dir->ToAttr(), cred));
  vfs::CreateReply reply;
  reply.dir_wcc.before = vfs::ToWcc(dir->ToAttr());
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> existing,
                         txn.FindEntry(dir->ino, name));
  InodeRecord* file;
  if (existing && reserved_ino != 0) {
    if (existing->child != reserved_ino) {
      return Status::AlreadyExists("the name is taken by inode " + std::to_string(existing->child) +
                                   ", not reserved inode " + std::to_string(reserved_ino));
    }
    // A replay: the create went through before.
    GEOFS_ASSIGN_OR_RETURN(file, txn.Inode(existing->child));
  } else if (existing) {
    GEOFS_ASSIGN_OR_RETURN(file, txn.Inode(existing->child));
    GEOFS_RETURN_IF_ERROR(OpenExisting(txn, cred, file, req));
  } else {
    GEOFS_RETURN_IF_ERROR(vfs::CheckDirWrite(dir->ToAttr(), cred));
    if (reserved_ino != 0) GEOFS_RETURN_IF_ERROR(UseReservedIno(txn, reserved_ino));
    if (req.mode == vfs::CreateMode::kExclusive) {
      GEOFS_ASSIGN_OR_RETURN(
          file, MakeChild(txn, cred, dir, name, vfs::FileType::kRegular, vfs::SetAttrs{}));
      file->verifier = req.verifier;
    } else {
      GEOFS_ASSIGN_OR_RETURN(
          file, MakeChild(txn, cred, dir, name, vfs::FileType::kRegular, req.attrs, reserved_ino));
      if (answered_ctime) file->ctime = *answered_ctime;
    }
  }
  reply.object = EntryOf(*file);
  reply.dir_wcc.after = dir->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return reply;
}

Result<Namespace::InodeReservation> Namespace::ReserveInodes(uint32_t count) {
  if (count == 0 || count > kMaxReservation) {
    return Status::InvalidArgument("a reservation of " + std::to_string(count) +
                                   " inode numbers (1.." + std::to_string(kMaxReservation) + ")");
  }
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  InodeReservation r;
  r.first = next_ino_;
  const uint64_t end = r.first + count;
  txn.batch().Put(schema::ReservedKey(end), schema::EncodeReservedStart(r.first));
  // Commit writes the raised counter limit in the same batch.
  next_ino_ = end;
  r.generations.reserve(count);
  for (uint64_t ino = r.first; ino < end; ++ino) r.generations.push_back(GenerationOf(ino));
  if (Status s = Commit(txn, lock); !s.ok()) return s;
  return r;
}

Status Namespace::UseReservedIno(Txn& txn, uint64_t ino) {
  const auto refused = [ino] {
    return Status::InvalidArgument("inode " + std::to_string(ino) +
                                   " is not a reserved number that is still unused");
  };
  if (ino == UINT64_MAX) return refused();
  std::unique_ptr<KvIterator> it = txn.store()->NewIterator(schema::ReservedKey(ino + 1),
                                                            schema::TagLimit(schema::kReservedTag));
  it->Seek(schema::ReservedKey(ino + 1));
  if (!it->Valid()) {
    GEOFS_RETURN_IF_ERROR(it->status());
    return refused();
  }
  uint64_t end = 0;
  if (!schema::ParseReservedKey(it->key(), &end)) return Status::Corruption("bad reservation key");
  GEOFS_ASSIGN_OR_RETURN(uint64_t start, schema::DecodeReservedStart(end, it->value()));
  if (ino < start) return refused();
  // The run splits around `ino`: [start, ino) and [ino + 1, end).
  if (start < ino) txn.batch().Put(schema::ReservedKey(ino), schema::EncodeReservedStart(start));
  if (ino + 1 < end) {
    txn.batch().Put(schema::ReservedKey(end), schema::EncodeReservedStart(ino + 1));
  } else {
    txn.batch().Delete(schema::ReservedKey(end));
  }
  return Status::Ok();
}

Status Namespace::OpenExisting(Txn& txn, const vfs::Credentials& cred, InodeRecord* file,
                               const vfs::CreateRequest& req) {
  switch (req.mode) {
    case vfs::CreateMode::kGuarded:
      return Status::AlreadyExists();
    case vfs::CreateMode::kExclusive:
      if (file->verifier == req.verifier) return Status::Ok();
      return Status::AlreadyExists("exclusive create with a different verifier");
    case vfs::CreateMode::kUnchecked:
      break;
  }
  if (file->type != vfs::FileType::kRegular) return Status::AlreadyExists();
  if (!req.attrs.size) return Status::Ok();
  vfs::SetAttrs size_only;
  size_only.size = req.attrs.size;
  GEOFS_RETURN_IF_ERROR(vfs::CheckSetAttr(file->ToAttr(), size_only, cred));
  return ApplySetAttrs(txn, file, size_only, cred);
}

Result<vfs::CreateReply> Namespace::Mkdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                                          std::string_view name, const vfs::SetAttrs& attrs) {
  return CreateNode(cred, dir, name, vfs::FileType::kDirectory, attrs, [](InodeRecord*) {});
}

Result<vfs::CreateReply> Namespace::Symlink(const vfs::Credentials& cred, const vfs::Handle& dir,
                                            std::string_view name, std::string_view target,
                                            const vfs::SetAttrs& attrs) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateSymlinkTarget(target));
  vfs::SetAttrs no_mode = attrs;
  no_mode.mode = 0777;  // symlink permissions are never consulted
  return CreateNode(cred, dir, name, vfs::FileType::kSymlink, no_mode, [&](InodeRecord* n) {
    n->target = std::string(target);
    n->size = n->used = target.size();
  });
}

Result<vfs::CreateReply> Namespace::Mknod(const vfs::Credentials& cred, const vfs::Handle& dir,
                                          std::string_view name, const vfs::MknodRequest& req) {
  switch (req.type) {
    case vfs::FileType::kCharDevice:
    case vfs::FileType::kBlockDevice:
      if (!vfs::IsRoot(cred)) return Status::NotPermitted("only root may create devices");
      break;
    case vfs::FileType::kSocket:
    case vfs::FileType::kFifo:
      break;
    default:
      return Status::InvalidArgument("mknod of an unsupported type");
  }
  return CreateNode(cred, dir, name, req.type, req.attrs, [&](InodeRecord* n) {
    if (req.type == vfs::FileType::kCharDevice || req.type == vfs::FileType::kBlockDevice) {
      n->rdev_major = req.rdev_major;
      n->rdev_minor = req.rdev_minor;
    }
  });
}

Result<vfs::LinkReply> Namespace::Link(const vfs::Credentials& cred, const vfs::Handle& file_handle,
                                       const vfs::Handle& dir_handle, std::string_view name) {
  GEOFS_RETURN_IF_ERROR(vfs::ValidateName(name));
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * file, txn.InodeByHandle(file_handle));
  GEOFS_ASSIGN_OR_RETURN(InodeRecord * dir, txn.InodeByHandle(dir_handle));
  vfs::LinkReply reply;
  reply.dir_wcc.before = vfs::ToWcc(dir->ToAttr());
  if (file->is_dir()) return Status::IsDirectory("cannot link a directory");
  GEOFS_RETURN_IF_ERROR(vfs::CheckDirWrite(dir->ToAttr(), cred));
  GEOFS_ASSIGN_OR_RETURN(std::optional<schema::DirentValue> existing,
                         txn.FindEntry(dir->ino, name));
  if (existing) return Status::AlreadyExists(name);
  if (file->nlink >= Capabilities().link_max) return Status::TooManyLinks();
  txn.LinkEntry(dir, name, file);
  file->ctime = txn.now();
  dir->mtime = dir->ctime = txn.now();
  reply.file_attr = file->ToAttr();
  reply.dir_wcc.after = dir->ToAttr();
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return reply;
}

}  // namespace geofs::meta
