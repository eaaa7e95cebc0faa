#include "spoke/hub_convert.h"

#include <array>
#include <string>

#include "hub/proto_convert.h"

namespace geofs::spoke {
namespace {

void PutBigEndian64(uint64_t v, uint8_t* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

uint64_t GetBigEndian64(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return v;
}

}  // namespace

vfs::Handle MakeHandle(const FileKey& key) {
  std::array<uint8_t, kHandleBytes> bytes;
  PutBigEndian64(key.ino, bytes.data());
  PutBigEndian64(key.gen, bytes.data() + 8);
  return vfs::Handle(bytes);
}

Result<FileKey> ParseHandle(const vfs::Handle& h) {
  if (h.size() != kHandleBytes) return Status::BadHandle("not a spoke handle");
  return FileKey{GetBigEndian64(h.bytes().data()), GetBigEndian64(h.bytes().data() + 8)};
}

v1::FileRef ToProto(const FileKey& key) {
  v1::FileRef ref;
  ref.set_ino(key.ino);
  ref.set_gen(key.gen);
  return ref;
}

FileKey FromProto(const v1::FileRef& ref) { return FileKey{ref.ino(), ref.gen()}; }

void ToProto(const vfs::Credentials& cred, v1::Credentials* out) {
  out->set_uid(cred.uid);
  out->set_gid(cred.gid);
  for (uint32_t g : cred.groups) out->add_groups(g);
}

void ToProto(const vfs::SetAttrs& a, v1::SetAttrs* out) {
  if (a.mode) out->set_mode(*a.mode);
  if (a.uid) out->set_uid(*a.uid);
  if (a.gid) out->set_gid(*a.gid);
  if (a.size) out->set_size(*a.size);
  out->set_atime_how(static_cast<v1::TimeUpdate>(a.atime_how));
  out->set_mtime_how(static_cast<v1::TimeUpdate>(a.mtime_how));
  if (a.atime_how == vfs::TimeUpdate::kClientTime) *out->mutable_atime() = hub::ToProto(a.atime);
  if (a.mtime_how == vfs::TimeUpdate::kClientTime) *out->mutable_mtime() = hub::ToProto(a.mtime);
}

Result<vfs::Attr> FromProto(const v1::Attr& a) {
  auto type = hub::FromProto(a.type());
  if (!type.ok()) return Status::IoError("hub sent " + type.status().ToString());
  vfs::Attr out;
  out.type = *type;
  out.mode = a.mode();
  out.nlink = a.nlink();
  out.uid = a.uid();
  out.gid = a.gid();
  out.size = a.size();
  out.used = a.used();
  out.rdev_major = a.rdev_major();
  out.rdev_minor = a.rdev_minor();
  out.fileid = a.fileid();
  out.atime = hub::FromProto(a.atime());
  out.mtime = hub::FromProto(a.mtime());
  out.ctime = hub::FromProto(a.ctime());
  return out;
}

Result<vfs::Wcc> FromProto(const v1::Wcc& w) {
  vfs::Wcc out;
  if (w.has_before()) {
    out.before = vfs::WccAttr{w.before().size(), hub::FromProto(w.before().mtime()),
                              hub::FromProto(w.before().ctime())};
  }
  GEOFS_ASSIGN_OR_RETURN(out.after, OptionalAttr(w.has_after(), w.after()));
  return out;
}

Result<vfs::Entry> FromProto(const v1::Entry& e) {
  vfs::Entry out;
  out.handle = MakeHandle(FromProto(e.ref()));
  GEOFS_ASSIGN_OR_RETURN(out.attr, FromProto(e.attr()));
  return out;
}

Result<std::optional<vfs::Attr>> OptionalAttr(bool present, const v1::Attr& attr) {
  if (!present) return std::optional<vfs::Attr>();
  GEOFS_ASSIGN_OR_RETURN(vfs::Attr a, FromProto(attr));
  return std::optional<vfs::Attr>(a);
}

}  // namespace geofs::spoke
