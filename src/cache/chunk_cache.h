// ChunkCache: the spoke's persistent cache of chunk contents.
//
// Chunks are immutable and named by the SHA-256 of their raw bytes, so a
// cached chunk never goes stale; the cache only has to stay within its
// capacity, survive restarts, and never serve corrupt bytes. Two tiers:
//  - disk: one file per chunk under `dir`, read and written through
//    io_uring (plain pread/pwrite when io_uring is unavailable), each file
//    carrying a checksum per 64 KiB block; a read reads and verifies only the
//    blocks it covers, through a bounded set of files kept open. A file that
//    fails a check is dropped and reported as a miss, so the caller refetches
//    it;
//  - memory: whole chunks that are hot (just stored, or read often enough to
//    win a place against the coldest one held) as shared Buffers, served
//    without a copy.
// Eviction is scan-resistant (see docs/spoke-cache.md for the policy and why):
// a working set larger than the cache, read repeatedly, keeps a useful hit
// ratio instead of collapsing to zero. Pinned chunks are never evicted.
// After a restart the index is rebuilt from the directory, so every chunk on
// disk is reused.
//
// Thread-safe. Callbacks run on an internal I/O thread or on the calling
// thread (memory hits, misses, and disk hits the page cache held); they must
// not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chunk/chunk_id.h"
#include "geofs/buffer.h"
#include "geofs/status.h"

namespace geofs::cache {

// 1/16 of the physical memory, at least 64 MiB and at most 1 GiB (see
// docs/spoke-cache.md for why).
uint64_t DefaultMemoryTierBytes();

struct ChunkCacheOptions {
  std::string dir;  // created if missing
  // Disk capacity in bytes. 0: the cache may grow until the file system that
  // holds `dir` is 90% full.
  uint64_t capacity_bytes = 0;
  uint64_t memory_bytes = DefaultMemoryTierBytes();  // memory tier; 0: none
  size_t max_open_files = 256;                       // cache files kept open
  bool use_io_uring = true;                          // false: always plain I/O
  // Disk hits whose blocks the page cache holds are read on the calling
  // thread (IoEngine::ReadNow); the rest go through the engine.
  bool inline_reads = true;
};

struct ChunkCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t corrupt_dropped = 0;  // disk files that failed their check
  uint64_t disk_read_bytes = 0;  // chunk bytes read from files for disk hits
  uint64_t inline_reads = 0;     // disk hits read wholly on the calling thread
  uint64_t promotions = 0;       // chunks read whole into memory because hot
  uint64_t open_files = 0;       // cache files held open now
  uint64_t disk_bytes = 0;       // bytes of chunk data on disk now
  uint64_t disk_chunks = 0;
  uint64_t memory_bytes = 0;
  uint64_t pinned_bytes = 0;
  uint64_t capacity_bytes = 0;  // the effective disk capacity
  bool io_uring = false;        // whether io_uring is in use
};

class ChunkCache {
 public:
  using GetCallback = std::function<void(Result<Buffer>)>;
  using PutCallback = std::function<void(Status)>;
  using ReadIntoCallback = std::function<void(Result<size_t>)>;

  static Result<std::unique_ptr<ChunkCache>> Open(const ChunkCacheOptions& options);
  virtual ~ChunkCache() = default;

  // The raw bytes of `id`, or kNotFound when absent (or dropped as corrupt).
  virtual void Get(const chunk::ChunkId& id, GetCallback cb) = 0;
  // Bytes [offset, offset + length) of `id`, cut at the end of the chunk (so
  // shorter than `length`, possibly empty, when the chunk is), or kNotFound
  // as for Get. Reads from disk only the blocks the range covers. The default
  // slices what Get returns.
  virtual void GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length, GetCallback cb);
  // Like GetRange, but copies the bytes to `dest` and answers how many: a
  // disk hit reads the range straight into `dest` (no intermediate buffer,
  // no copy), a memory hit copies it. For a READ assembled from several
  // chunks. REQUIRES: `dest` holds `length` bytes and stays valid until `cb`
  // has run. The default copies what GetRange returns.
  virtual void ReadRangeInto(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                             uint8_t* dest, ReadIntoCallback cb);
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
