// Conversions between the hub API's messages and the vfs types that the
// spoke needs (the hub's proto_convert.h covers the other direction).
#pragma once

#include <cstdint>
#include <optional>

#include "geofs/status.h"
#include "geofs/vfs.h"
#include "hub.pb.h"
#include "spoke/write_journal.h"

namespace geofs::spoke {

// A spoke handle is the hub's (inode, generation) as 16 big-endian bytes.
inline constexpr size_t kHandleBytes = 16;

vfs::Handle MakeHandle(const FileKey& key);
// kBadHandle unless `h` is kHandleBytes long.
Result<FileKey> ParseHandle(const vfs::Handle& h);

v1::FileRef ToProto(const FileKey& key);
FileKey FromProto(const v1::FileRef& ref);

void ToProto(const vfs::Credentials& cred, v1::Credentials* out);
void ToProto(const vfs::SetAttrs& attrs, v1::SetAttrs* out);

// The hub only sends types it knows; an unknown one is kIoError (a protocol
// mismatch, not the caller's fault).
Result<vfs::Attr> FromProto(const v1::Attr& attr);
// Absent parts (no before, no after) stay absent.
Result<vfs::Wcc> FromProto(const v1::Wcc& wcc);
Result<vfs::Entry> FromProto(const v1::Entry& entry);
// An attribute message the hub may leave out (has_attr() false): nullopt.
Result<std::optional<vfs::Attr>> OptionalAttr(bool present, const v1::Attr& attr);

}  // namespace geofs::spoke
