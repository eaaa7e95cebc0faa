// ChunkCache: the spoke's persistent cache of chunk contents.
//
// Chunks are immutable and named by the SHA-256 of their raw bytes, so a
// cached chunk never goes stale; the cache only has to stay within its
// capacity, survive restarts, and never serve corrupt bytes. Two tiers:
//  - disk: one file per chunk under `dir`, read and written through
//    io_uring (plain pread/pwrite when io_uring is unavailable), each file
//    carrying a checksum that is verified on every read; a file that fails it
//    is dropped and reported as a miss, so the caller refetches it;
//  - memory: hot chunks as shared Buffers, served without a copy.
// Eviction is scan-resistant (see docs/spoke-cache.md for the policy and why):
// a working set larger than the cache, read repeatedly, keeps a useful hit
// ratio instead of collapsing to zero. Pinned chunks are never evicted.
// After a restart the index is rebuilt from the directory, so every chunk on
// disk is reused.
//
// Thread-safe. Callbacks run on an internal I/O thread or on the calling
// thread; they must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chunk/chunk_id.h"
#include "geofs/buffer.h"
#include "geofs/status.h"

namespace geofs::cache {

struct ChunkCacheOptions {
  std::string dir;  // created if missing
  // Disk capacity in bytes. 0: the cache may grow until the file system that
  // holds `dir` is 90% full.
  uint64_t capacity_bytes = 0;
  uint64_t memory_bytes = 256ull << 20;  // memory tier
  bool use_io_uring = true;              // false: always plain I/O
};

struct ChunkCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t corrupt_dropped = 0;  // disk files that failed their check
  uint64_t disk_bytes = 0;       // bytes of chunk data on disk now
  uint64_t disk_chunks = 0;
  uint64_t memory_bytes = 0;
  uint64_t pinned_bytes = 0;
  uint64_t capacity_bytes = 0;   // the effective disk capacity
  bool io_uring = false;         // whether io_uring is in use
};

class ChunkCache {
 public:
  using GetCallback = std::function<void(Result<Buffer>)>;
  using PutCallback = std::function<void(Status)>;

  static Result<std::unique_ptr<ChunkCache>> Open(const ChunkCacheOptions& options);
  virtual ~ChunkCache() = default;

  // The raw bytes of `id`, or kNotFound when absent (or dropped as corrupt).
  virtual void Get(const chunk::ChunkId& id, GetCallback cb) = 0;
  // Stores the raw bytes of `id`. REQUIRES: `raw` hash to `id` (the caller
  // verified them). Evicts unpinned chunks to make room; kNoSpace when it
  // cannot (everything pinned, or the file system is full even after
  // evicting). Storing a chunk that is already cached succeeds at once.
  virtual void Put(const chunk::ChunkId& id, Buffer raw, PutCallback cb) = 0;
  virtual bool Contains(const chunk::ChunkId& id) const = 0;

  // Pins are counted: a chunk pinned twice needs two Unpins. Pinning an
  // absent chunk pins it as soon as it is stored.
  virtual void Pin(const chunk::ChunkId& id) = 0;
  virtual void Unpin(const chunk::ChunkId& id) = 0;

  // Evicts unpinned chunks until at least `bytes` are freed or none is left;
  // returns the bytes freed (the spoke calls it when its disk fills up).
  virtual uint64_t Shrink(uint64_t bytes) = 0;

  virtual ChunkCacheStats Stats() const = 0;
};

}  // namespace geofs::cache
