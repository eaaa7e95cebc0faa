// Value types of the namespace API (namespace.h) that the rest of the hub
// shares: chunk identities, extents, chunk maps, statistics.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "geofs/clock.h"
#include "geofs/vfs.h"

namespace geofs::meta {

// A chunk's name: the SHA-256 of its uncompressed bytes.
using ChunkId = std::array<uint8_t, 32>;

// Lower-case hex of `id` (64 characters), for messages.
std::string ChunkIdHex(const ChunkId& id);

// A run of file bytes [offset, offset + length) stored as bytes
// [chunk_offset, chunk_offset + length) of one chunk. File bytes that no
// extent covers are holes and read as zeros (sparse files).
//
// Invariants (checked by CommitChunkMap, verified by Fsck): length > 0;
// chunk_offset + length <= chunk_size; every chunk id has one chunk_size.
struct Extent {
  uint64_t offset = 0;
  uint64_t length = 0;
  ChunkId chunk{};
  uint64_t chunk_offset = 0;
  uint64_t chunk_size = 0;  // the whole chunk's size, whatever part is used

  uint64_t end() const { return offset + length; }
  bool operator==(const Extent&) const = default;
};

// The extents of one version of a file that overlap an asked range.
struct ChunkMap {
  uint64_t version = 0;  // the file's content version these extents belong to
  vfs::Attr attr;        // the file's attributes at that version
  // Ordered by offset, non-overlapping, whole (not clipped to the range).
  std::vector<Extent> extents;
};

// A replacement of the extents of [offset, offset + length) of a file, made
// against the version the writer read.
struct ChunkMapUpdate {
  uint64_t expected_version = 0;
  uint64_t offset = 0;
  // UINT64_MAX-saturated: offset + length past the end means "to the end of
  // the file and beyond", so offset 0 with length UINT64_MAX replaces the
  // whole chunk map.
  uint64_t length = UINT64_MAX;
  // New extents, all inside the range and below new_size, ordered and
  // non-overlapping. Parts of the range they leave uncovered become holes.
  std::vector<Extent> extents;
  // The file's size afterwards. Extents (old ones outside the range too)
  // past it are trimmed away.
  uint64_t new_size = 0;
  // The file's mtime afterwards; server time if unset.
  std::optional<WallTime> mtime;
};

struct CommitReply {
  uint64_t version = 0;  // the file's new version
  vfs::Wcc wcc;
};

// A chunk the namespace knows. Chunks with refs == 0 are garbage once their
// grace period has passed (see Namespace::CollectGarbage).
struct ChunkInfo {
  ChunkId id{};
  uint64_t size = 0;
  // Bytes of its stored form in the object store; 0: not recorded yet (a
  // chunk registered but not yet stored, or known since before stored sizes
  // were recorded).
  uint64_t stored_size = 0;
  uint64_t refs = 0;            // number of extents, in all files, naming it
  WallTime unreferenced_since;  // when refs last became 0 (or it was registered)
  bool collecting = false;      // GC has started deleting it from the object store
};

struct ChunkRef {
  ChunkId id{};
  uint64_t size = 0;
};

// The size of a chunk's stored form, as the object store holds it.
struct StoredChunkSize {
  ChunkId id{};
  uint64_t stored_size = 0;
};

// Counters kept exact in every write batch, so reading them costs one Get.
struct NamespaceStats {
  uint64_t inodes = 0;
  uint64_t directories = 0;
  uint64_t files = 0;  // regular files
  uint64_t symlinks = 0;
  uint64_t specials = 0;       // devices, sockets, fifos
  uint64_t logical_bytes = 0;  // sum of regular files' sizes (each inode once)
  uint64_t extents = 0;
  uint64_t chunks = 0;               // chunks with refs > 0
  uint64_t referenced_bytes = 0;     // sum of their sizes
  uint64_t unreferenced_chunks = 0;  // chunks with refs == 0 awaiting GC
  uint64_t unreferenced_bytes = 0;
  // Over every chunk known (referenced or not): the object store's bytes
  // for those whose stored size is recorded, and how many have none.
  uint64_t stored_bytes = 0;
  uint64_t unsized_chunks = 0;

  bool operator==(const NamespaceStats&) const = default;
};

}  // namespace geofs::meta
