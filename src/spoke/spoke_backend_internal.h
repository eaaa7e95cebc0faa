// Private helpers shared by the SpokeBackend's .cc files.
#pragma once

#include <algorithm>
#include <chrono>

#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "prefetch/access_ring.h"
#include "spoke/chunk_fetcher.h"
#include "spoke/hub_convert.h"
#include "spoke/hub_link.h"

namespace geofs::spoke {

// `clock`'s steady time in nanoseconds, as the access stream counts it.
inline int64_t NowNsOf(const Clock* clock) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock->Now().time_since_epoch())
      .count();
}

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

// A READ on its way to the access stream (docs/prefetch.md): the event,
// completed with its wait and outcome when the READ is answered.
struct ReadTrace {
  ReadTrace(prefetch::AccessRing* ring, Clock* clock, prefetch::AccessEvent event)
      : ring(ring), clock(clock), event(event) {}
  // Copied before the READ's chunks are asked for (std::function copies
  // its callable): the note starts empty.
  ReadTrace(const ReadTrace& other) : ring(other.ring), clock(other.clock), event(other.event) {}

  void Record() {
    event.outcome = note.worst.load(std::memory_order_relaxed);
    const int64_t now = NowNsOf(clock);
    event.wait_us = static_cast<uint32_t>(std::min<int64_t>((now - event.time_ns) / 1000, UINT32_MAX));
    ring->Record(event);
  }

  prefetch::AccessRing* ring;
  Clock* clock;
  prefetch::AccessEvent event;
  ReadNote note;  // filled in by the chunk fetcher
};

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
