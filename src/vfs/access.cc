#include "vfs/access.h"

namespace geofs::vfs {
namespace {

bool IsOwner(const Attr& attr, const Credentials& cred) { return cred.uid == attr.uid; }

// The rwx bits (0-7) of the caller's class.
uint32_t ClassBits(const Attr& attr, const Credentials& cred) {
  if (IsOwner(attr, cred)) return (attr.mode >> 6) & 7;
  if (cred.InGroup(attr.gid)) return (attr.mode >> 3) & 7;
  return attr.mode & 7;
}

Status CheckHoldsData(const Attr& attr) {
  if (attr.type == FileType::kDirectory) return Status::IsDirectory();
  if (attr.type != FileType::kRegular) return Status::InvalidArgument("not a regular file");
  return Status::Ok();
}

uint32_t DropSetIdBits(uint32_t mode) {
  mode &= ~kModeSetUid;
  // Setgid without group execute marks mandatory locking, not privilege.
  if (mode & kModeGroupExec) mode &= ~kModeSetGid;
  return mode;
}

}  // namespace

bool HasPermission(const Attr& attr, const Credentials& cred, uint32_t may) {
  if (IsRoot(cred)) {
    if (!(may & kMayExec)) return true;
    return attr.type == FileType::kDirectory || (attr.mode & kModeAnyExec) != 0;
  }
  return (ClassBits(attr, cred) & may) == may;
}

uint32_t GrantedAccess(const Attr& attr, const Credentials& cred, uint32_t requested) {
  const bool r = HasPermission(attr, cred, kMayRead);
  const bool w = HasPermission(attr, cred, kMayWrite);
  const bool x = HasPermission(attr, cred, kMayExec);
  uint32_t granted = 0;
  if (r) granted |= kAccessRead;
  if (attr.type == FileType::kDirectory) {
    if (x) granted |= kAccessLookup | kAccessExecute;
    if (w && x) granted |= kAccessModify | kAccessExtend | kAccessDelete;
  } else {
    if (w) granted |= kAccessModify | kAccessExtend;
    if (x) granted |= kAccessExecute;
  }
  return granted & requested;
}

Status CheckSearch(const Attr& dir, const Credentials& cred) {
  if (dir.type != FileType::kDirectory) return Status::NotDirectory();
  if (!HasPermission(dir, cred, kMayExec)) return Status::AccessDenied("no search permission");
  return Status::Ok();
}

Status CheckList(const Attr& dir, const Credentials& cred) {
  if (dir.type != FileType::kDirectory) return Status::NotDirectory();
  if (!HasPermission(dir, cred, kMayRead)) return Status::AccessDenied("no read permission");
  return Status::Ok();
}

Status CheckDirWrite(const Attr& dir, const Credentials& cred) {
  if (dir.type != FileType::kDirectory) return Status::NotDirectory();
  if (!HasPermission(dir, cred, kMayWrite | kMayExec)) {
    return Status::AccessDenied("no write permission on directory");
  }
  return Status::Ok();
}

Status CheckDelete(const Attr& dir, const Attr& victim, const Credentials& cred) {
  GEOFS_RETURN_IF_ERROR(CheckDirWrite(dir, cred));
  if ((dir.mode & kModeSticky) && !IsRoot(cred) && !IsOwner(dir, cred) && !IsOwner(victim, cred)) {
    return Status::NotPermitted("sticky directory");
  }
  return Status::Ok();
}

Status CheckRead(const Attr& file, const Credentials& cred) {
  GEOFS_RETURN_IF_ERROR(CheckHoldsData(file));
  if (IsOwner(file, cred) || HasPermission(file, cred, kMayRead) ||
      HasPermission(file, cred, kMayExec)) {
    return Status::Ok();
  }
  return Status::AccessDenied("no read permission");
}

Status CheckWrite(const Attr& file, const Credentials& cred) {
  GEOFS_RETURN_IF_ERROR(CheckHoldsData(file));
  if (IsOwner(file, cred) || HasPermission(file, cred, kMayWrite)) return Status::Ok();
  return Status::AccessDenied("no write permission");
}

Status CheckSetAttr(const Attr& cur, const SetAttrs& req, const Credentials& cred) {
  const bool privileged = IsRoot(cred) || IsOwner(cur, cred);
  if (req.mode && !privileged) return Status::NotPermitted("only the owner may chmod");
  if (req.uid && !IsRoot(cred) && (*req.uid != cur.uid || !IsOwner(cur, cred))) {
    return Status::NotPermitted("only root may chown");
  }
  if (req.gid && !IsRoot(cred) &&
      (!IsOwner(cur, cred) || (*req.gid != cur.gid && !cred.InGroup(*req.gid)))) {
    return Status::NotPermitted("chgrp needs ownership and group membership");
  }
  if (req.atime_how == TimeUpdate::kClientTime || req.mtime_how == TimeUpdate::kClientTime) {
    if (!privileged) return Status::NotPermitted("only the owner may set times");
  } else if (req.atime_how == TimeUpdate::kServerTime || req.mtime_how == TimeUpdate::kServerTime) {
    if (!privileged && !HasPermission(cur, cred, kMayWrite)) {
      return Status::AccessDenied("touch needs write permission");
    }
  }
  if (req.size) GEOFS_RETURN_IF_ERROR(CheckWrite(cur, cred));
  return Status::Ok();
}

uint32_t ModeAfterSetAttr(const Attr& cur, const SetAttrs& req, const Credentials& cred) {
  uint32_t mode = (req.mode ? *req.mode : cur.mode) & kModeMask;
  if (IsRoot(cred) || cur.type == FileType::kDirectory) return mode;
  const uint32_t gid = req.gid ? *req.gid : cur.gid;
  if (req.mode && !cred.InGroup(gid)) mode &= ~kModeSetGid;
  const bool owner_changes = (req.uid && *req.uid != cur.uid) || (req.gid && *req.gid != cur.gid);
  if (owner_changes || req.size) mode = DropSetIdBits(mode);
  return mode;
}

uint32_t ModeAfterWrite(const Attr& cur, const Credentials& cred) {
  if (IsRoot(cred) || cur.type != FileType::kRegular) return cur.mode & kModeMask;
  return DropSetIdBits(cur.mode & kModeMask);
}

NewOwnership NewObjectOwnership(const Attr& dir, const Credentials& cred, FileType type,
                                uint32_t mode) {
  NewOwnership out;
  out.uid = cred.uid;
  out.mode = mode & kModeMask;
  if (dir.mode & kModeSetGid) {
    out.gid = dir.gid;
    if (type == FileType::kDirectory) out.mode |= kModeSetGid;
  } else {
    out.gid = cred.gid;
  }
  if (type != FileType::kDirectory && (out.mode & kModeSetGid) && !IsRoot(cred) &&
      !cred.InGroup(out.gid)) {
    out.mode &= ~kModeSetGid;
  }
  return out;
}

Status ValidateName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") {
    return Status::InvalidArgument("reserved or empty name");
  }
  if (name.size() > kMaxNameBytes) return Status::NameTooLong();
  if (name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return Status::InvalidArgument("name contains '/' or NUL");
  }
  return Status::Ok();
}

Status ValidateSymlinkTarget(std::string_view target) {
  if (target.empty()) return Status::InvalidArgument("empty symlink target");
  if (target.size() > kMaxPathBytes) return Status::NameTooLong("symlink target");
  if (target.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("symlink target contains NUL");
  }
  return Status::Ok();
}

}  // namespace geofs::vfs
