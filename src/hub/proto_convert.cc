#include "hub/proto_convert.h"

#include <string>

namespace geofs::hub {

v1::Time ToProto(const WallTime& t) {
  v1::Time out;
  out.set_sec(t.sec);
  out.set_nsec(t.nsec);
  return out;
}

WallTime FromProto(const v1::Time& t) { return WallTime{t.sec(), t.nsec()}; }

v1::FileType ToProto(vfs::FileType type) { return static_cast<v1::FileType>(type); }

Result<vfs::FileType> FromProto(v1::FileType type) {
  // The enum values match vfs::FileType (which matches NFS's ftype3).
  if (type < v1::REGULAR || type > v1::FIFO) {
    return Status::InvalidArgument("unknown file type " + std::to_string(type));
  }
  return static_cast<vfs::FileType>(type);
}

void ToProto(const vfs::Attr& a, v1::Attr* out) {
  out->set_type(ToProto(a.type));
  out->set_mode(a.mode);
  out->set_nlink(a.nlink);
  out->set_uid(a.uid);
  out->set_gid(a.gid);
  out->set_size(a.size);
  out->set_used(a.used);
  out->set_rdev_major(a.rdev_major);
  out->set_rdev_minor(a.rdev_minor);
  out->set_fileid(a.fileid);
  *out->mutable_atime() = ToProto(a.atime);
  *out->mutable_mtime() = ToProto(a.mtime);
  *out->mutable_ctime() = ToProto(a.ctime);
}

void ToProto(const vfs::Wcc& wcc, v1::Wcc* out) {
  if (wcc.before) {
    v1::WccAttr* before = out->mutable_before();
    before->set_size(wcc.before->size);
    *before->mutable_mtime() = ToProto(wcc.before->mtime);
    *before->mutable_ctime() = ToProto(wcc.before->ctime);
  }
  if (wcc.after) ToProto(*wcc.after, out->mutable_after());
}

namespace {

Result<vfs::TimeUpdate> FromProto(v1::TimeUpdate how) {
  switch (how) {
    case v1::DONT_CHANGE:
      return vfs::TimeUpdate::kDontChange;
    case v1::SERVER_TIME:
      return vfs::TimeUpdate::kServerTime;
    case v1::CLIENT_TIME:
      return vfs::TimeUpdate::kClientTime;
    default:
      return Status::InvalidArgument("unknown time update " + std::to_string(how));
  }
}

}  // namespace

Result<vfs::SetAttrs> FromProto(const v1::SetAttrs& a) {
  vfs::SetAttrs out;
  if (a.has_mode()) out.mode = a.mode();
  if (a.has_uid()) out.uid = a.uid();
  if (a.has_gid()) out.gid = a.gid();
  if (a.has_size()) out.size = a.size();
  GEOFS_ASSIGN_OR_RETURN(out.atime_how, FromProto(a.atime_how()));
  GEOFS_ASSIGN_OR_RETURN(out.mtime_how, FromProto(a.mtime_how()));
  out.atime = FromProto(a.atime());
  out.mtime = FromProto(a.mtime());
  return out;
}

Result<vfs::Credentials> FromProto(const v1::Credentials& cred) {
  if (static_cast<size_t>(cred.groups_size()) > vfs::kMaxGroups) {
    return Status::InvalidArgument("credentials carry " + std::to_string(cred.groups_size()) +
                                   " groups; at most " + std::to_string(vfs::kMaxGroups));
  }
  vfs::Credentials out;
  out.uid = cred.uid();
  out.gid = cred.gid();
  out.groups.assign(cred.groups().begin(), cred.groups().end());
  return out;
}

}  // namespace geofs::hub
