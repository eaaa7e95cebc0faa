// XDR of the data types NFSv3 procedures share (RFC 1813 section 2.5-2.6),
// and the name rules the front end applies before a backend sees a name.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "nfs3/handle_codec.h"
#include "nfs3/nfs_status.h"
#include "xdr/xdr.h"

namespace geofs::nfs3 {

inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kNfsVersion = 3;

enum class NfsProc : uint32_t {
  kNull = 0,
  kGetattr = 1,
  kSetattr = 2,
  kLookup = 3,
  kAccess = 4,
  kReadlink = 5,
  kRead = 6,
  kWrite = 7,
  kCreate = 8,
  kMkdir = 9,
  kSymlink = 10,
  kMknod = 11,
  kRemove = 12,
  kRmdir = 13,
  kRename = 14,
  kLink = 15,
  kReaddir = 16,
  kReaddirplus = 17,
  kFsstat = 18,
  kFsinfo = 19,
  kPathconf = 20,
  kCommit = 21,
};
inline constexpr uint32_t kNfsProcCount = 22;

inline constexpr size_t kMaxNameBytes = 255;   // what PATHCONF name_max reports
inline constexpr size_t kMaxPathBytes = 4096;  // symlink targets

// Encoded sizes, for READDIR/READDIRPLUS byte budgets.
inline constexpr size_t kFattrBytes = 84;
inline constexpr size_t kPostOpAttrBytes = 4 + kFattrBytes;  // when present
// READDIR3resok / READDIRPLUS3resok without entries: post_op_attr (at most),
// cookieverf, the list's end marker and eof.
inline constexpr size_t kDirReplyFixedBytes = kPostOpAttrBytes + 8 + 4 + 4;
// One entry3 with its list marker: the part of a READDIRPLUS entry that
// counts against dircount.
inline constexpr size_t DirEntryBytes(size_t name_len) {
  return 4 + 8 + 4 + xdr::Pad4(name_len) + 8;
}
inline constexpr size_t kMinDirEntryBytes = DirEntryBytes(1);

// FSINFO properties.
inline constexpr uint32_t kFsfLink = 0x0001;
inline constexpr uint32_t kFsfSymlink = 0x0002;
inline constexpr uint32_t kFsfHomogeneous = 0x0008;
inline constexpr uint32_t kFsfCanSetTime = 0x0010;

// --- Decoding arguments. Each returns false (and fails the decoder) on
// malformed XDR; views point into the argument bytes.

// nfs_fh3: opaque<64>. A longer handle is not valid XDR for nfs_fh3.
bool DecodeFh(xdr::Decoder& d, std::span<const uint8_t>* fh);
// filename3 / nfspath3: any length the message holds; semantic limits are
// applied by CheckName / CheckPath so that they answer NAMETOOLONG.
bool DecodeName(xdr::Decoder& d, std::string_view* name);

struct DirOpArgs {
  std::span<const uint8_t> dir;
  std::string_view name;
};
bool DecodeDirOp(xdr::Decoder& d, DirOpArgs* out);

bool DecodeTime(xdr::Decoder& d, WallTime* t);
// sattr3. Mode bits outside 07777 are dropped.
bool DecodeSattr(xdr::Decoder& d, vfs::SetAttrs* out);

// --- Encoding results. `fsid` is the export's id.

void EncodeTime(xdr::Encoder& e, WallTime t);
void EncodeFattr(xdr::Encoder& e, const vfs::Attr& a, uint64_t fsid);
void EncodePostOpAttr(xdr::Encoder& e, const std::optional<vfs::Attr>& a, uint64_t fsid);
void EncodeWcc(xdr::Encoder& e, const vfs::Wcc& wcc, uint64_t fsid);
void EncodePostOpFh(xdr::Encoder& e, const FileHandle& fh);

// --- Name rules.

// What a name is about to be used for; decides how "." and ".." are treated.
enum class NameUse {
  kLookup,  // "." and ".." are resolved by the caller
  kCreate,  // "." and ".." exist already: NFS3ERR_EXIST (as Linux knfsd)
  kRemove,  // REMOVE, RMDIR, RENAME: "." and ".." cannot go: NFS3ERR_INVAL
};
// kOk, or why `name` cannot be used: longer than 255 bytes -> NAMETOOLONG;
// empty or containing '/' or NUL -> INVAL (it can never be one component).
NfsStat CheckName(std::string_view name, NameUse use);
// Symlink targets: longer than 4096 bytes -> NAMETOOLONG; empty -> NOENT
// (as symlink(2)); containing NUL -> INVAL.
NfsStat CheckPath(std::string_view target);

}  // namespace geofs::nfs3
