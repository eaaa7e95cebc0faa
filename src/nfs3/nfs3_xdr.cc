#include "nfs3/nfs3_xdr.h"

#include <algorithm>
#include <limits>

namespace geofs::nfs3 {
namespace {

enum TimeHow : uint32_t { kDontChange = 0, kSetToServerTime = 1, kSetToClientTime = 2 };

bool DecodeOptionalU32(xdr::Decoder& d, std::optional<uint32_t>* out) {
  bool set;
  if (!d.Bool(&set)) return false;
  if (set) {
    uint32_t v;
    if (!d.U32(&v)) return false;
    *out = v;
  }
  return true;
}

bool DecodeSetTime(xdr::Decoder& d, vfs::TimeUpdate* how, WallTime* t) {
  uint32_t v;
  if (!d.U32(&v)) return false;
  switch (v) {
    case kDontChange:
      *how = vfs::TimeUpdate::kDontChange;
      return true;
    case kSetToServerTime:
      *how = vfs::TimeUpdate::kServerTime;
      return true;
    case kSetToClientTime:
      *how = vfs::TimeUpdate::kClientTime;
      return DecodeTime(d, t);
    default:
      d.Fail();
      return false;
  }
}

}  // namespace

bool DecodeFh(xdr::Decoder& d, std::span<const uint8_t>* fh) { return d.Opaque(kMaxFhBytes, fh); }

bool DecodeName(xdr::Decoder& d, std::string_view* name) {
  return d.String(std::numeric_limits<uint32_t>::max(), name);
}

bool DecodeDirOp(xdr::Decoder& d, DirOpArgs* out) {
  return DecodeFh(d, &out->dir) && DecodeName(d, &out->name);
}

bool DecodeTime(xdr::Decoder& d, WallTime* t) {
  uint32_t sec, nsec;
  if (!d.U32(&sec) || !d.U32(&nsec)) return false;
  t->sec = sec;
  t->nsec = nsec;
  return true;
}

bool DecodeSattr(xdr::Decoder& d, vfs::SetAttrs* out) {
  if (!DecodeOptionalU32(d, &out->mode)) return false;
  if (out->mode) *out->mode &= 07777;
  if (!DecodeOptionalU32(d, &out->uid) || !DecodeOptionalU32(d, &out->gid)) return false;
  bool set_size;
  if (!d.Bool(&set_size)) return false;
  if (set_size) {
    uint64_t size;
    if (!d.U64(&size)) return false;
    out->size = size;
  }
  return DecodeSetTime(d, &out->atime_how, &out->atime) &&
         DecodeSetTime(d, &out->mtime_how, &out->mtime);
}

void EncodeTime(xdr::Encoder& e, WallTime t) {
  // nfstime3 seconds are unsigned 32-bit: clamp what does not fit.
  int64_t sec = std::clamp<int64_t>(t.sec, 0, std::numeric_limits<uint32_t>::max());
  e.U32(static_cast<uint32_t>(sec));
  e.U32(t.nsec);
}

void EncodeFattr(xdr::Encoder& e, const vfs::Attr& a, uint64_t fsid) {
  e.U32(static_cast<uint32_t>(a.type));
  e.U32(a.mode & 07777);
  e.U32(a.nlink);
  e.U32(a.uid);
  e.U32(a.gid);
  e.U64(a.size);
  e.U64(a.used);
  e.U32(a.rdev_major);
  e.U32(a.rdev_minor);
  e.U64(fsid);
  e.U64(a.fileid);
  EncodeTime(e, a.atime);
  EncodeTime(e, a.mtime);
  EncodeTime(e, a.ctime);
}

void EncodePostOpAttr(xdr::Encoder& e, const std::optional<vfs::Attr>& a, uint64_t fsid) {
  e.Bool(a.has_value());
  if (a) EncodeFattr(e, *a, fsid);
}

void EncodeWcc(xdr::Encoder& e, const vfs::Wcc& wcc, uint64_t fsid) {
  e.Bool(wcc.before.has_value());
  if (wcc.before) {
    e.U64(wcc.before->size);
    EncodeTime(e, wcc.before->mtime);
    EncodeTime(e, wcc.before->ctime);
  }
  EncodePostOpAttr(e, wcc.after, fsid);
}

void EncodePostOpFh(xdr::Encoder& e, const FileHandle& fh) {
  e.Bool(true);
  e.Opaque(fh.bytes());
}

NfsStat CheckName(std::string_view name, NameUse use) {
  if (name.size() > kMaxNameBytes) return NfsStat::kNameTooLong;
  if (name.empty() || name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return NfsStat::kInval;
  }
  if (name == "." || name == "..") {
    switch (use) {
      case NameUse::kLookup:
        return NfsStat::kOk;
      case NameUse::kCreate:
        return NfsStat::kExist;
      case NameUse::kRemove:
        return NfsStat::kInval;
    }
  }
  return NfsStat::kOk;
}

NfsStat CheckPath(std::string_view target) {
  if (target.size() > kMaxPathBytes) return NfsStat::kNameTooLong;
  if (target.empty()) return NfsStat::kNoEnt;
  if (target.find('\0') != std::string_view::npos) return NfsStat::kInval;
  return NfsStat::kOk;
}

}  // namespace geofs::nfs3
