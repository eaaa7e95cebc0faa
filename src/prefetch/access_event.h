// What the spoke tells the prefetcher about each NFS call it serves: one
// fixed-size record per LOOKUP, GETATTR, READDIR(PLUS) and READ, so that
// recording costs the serving path no allocation (access_ring.h).
#pragma once

#include <cstdint>

#include "chunk/chunk_id.h"

namespace geofs::prefetch {

// An object of the hub's namespace: (inode, generation), as in the spoke's
// handles.
struct FileId {
  uint64_t ino = 0;
  uint64_t gen = 0;
  bool operator==(const FileId&) const = default;
  bool valid() const { return ino != 0; }
};

struct FileIdHash {
  size_t operator()(const FileId& f) const { return f.ino * 0x9e3779b97f4a7c15ULL ^ f.gen; }
};

enum class AccessOp : uint8_t { kLookup, kGetAttr, kReadDir, kRead };

// How a READ's chunks were found when it arrived.
enum class AccessOutcome : uint8_t {
  kHit,     // every chunk it needed was in the cache
  kJoined,  // some were on their way already (prefetched or another READ's)
  kMiss,    // some had to be fetched for it
};

struct AccessEvent {
  int64_t time_ns = 0;  // steady clock
  uint32_t uid = 0;     // the caller (AUTH_SYS uid): jobs run as users
  AccessOp op = AccessOp::kRead;
  AccessOutcome outcome = AccessOutcome::kHit;
  FileId file;    // READ, GETATTR: the file; LOOKUP: the child found; READDIR: the directory
  FileId parent;  // LOOKUP: the directory searched; else unset
  uint64_t offset = 0;   // READ
  uint32_t length = 0;   // READ: bytes asked for
  uint32_t wait_us = 0;  // READ: from the call to its answer
  bool is_dir = false;   // LOOKUP: the child found is a directory
};

}  // namespace geofs::prefetch
