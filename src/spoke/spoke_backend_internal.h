// Private helpers shared by the SpokeBackend's .cc files.
#pragma once

#include "geofs/vfs.h"
#include "spoke/hub_convert.h"
#include "spoke/hub_link.h"

namespace geofs::spoke {

// How long what a reply says may be reused: the lease's end, or already
// over (the time the request was sent) when it came without one.
inline SteadyTime ExpiryOf(const Grant& grant) {
  return grant.leased() ? grant.expiry : grant.sent;
}

// Parses `h` or answers `cb` with kBadHandle and returns nullopt.
template <typename T>
std::optional<FileKey> KeyOr(const vfs::Handle& h, const vfs::Callback<T>& cb) {
  auto key = ParseHandle(h);
  if (!key.ok()) {
    cb(key.status());
    return std::nullopt;
  }
  return *key;
}

struct ChunkMap;
// A chunk map as the hub sends it (GetChunkMap, DescribeDir), checked.
Result<std::shared_ptr<const ChunkMap>> MapFromProto(
    uint64_t version, const v1::Attr& attr,
    const google::protobuf::RepeatedPtrField<v1::Extent>& extents);

// A request message with the caller's credentials filled in.
template <typename Req>
Req WithCred(const vfs::Credentials& cred) {
  Req req;
  ToProto(cred, req.mutable_cred());
  return req;
}

}  // namespace geofs::spoke
