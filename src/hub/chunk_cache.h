// ChunkCache: a bounded LRU of verified raw chunk bytes, so that the 1 MiB
// NFS reads of one 4 MiB chunk fetch and decompress it once, not four times.
//
// Concurrent Gets of the same missing chunk share one fetch (the others wait
// for it). Chunks are immutable and named by their hash, so a cached chunk
// never goes stale.
//
// Thread-safe. The fetch function runs without the cache's lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "chunk/chunk_id.h"
#include "geofs/buffer.h"
#include "geofs/status.h"

namespace geofs::hub {

class ChunkCache {
 public:
  using Fetch = std::function<Result<Buffer>(const chunk::ChunkId& id)>;

  // Holds at most `capacity_bytes` of chunk data (0: caches nothing, but
  // concurrent fetches are still shared).
  explicit ChunkCache(size_t capacity_bytes);

  // The bytes of `id`: cached, or fetched by `fetch` and cached if that
  // succeeds. Errors are returned to every waiter and not cached.
  Result<Buffer> Get(const chunk::ChunkId& id, const Fetch& fetch);
  // Caches bytes the caller already has (e.g. a chunk it just stored).
  // REQUIRES: `raw` are the verified bytes of `id`.
  void Insert(const chunk::ChunkId& id, Buffer raw);

  size_t bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    chunk::ChunkId id;
    Buffer data;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // REQUIRES: mu_ held.
  void InsertLocked(const chunk::ChunkId& id, Buffer raw);

  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;                                                                      // guarded by mu_
  std::unordered_map<chunk::ChunkId, Lru::iterator, chunk::ChunkIdHash> index_;  // guarded by mu_
  std::unordered_map<chunk::ChunkId, std::shared_future<Result<Buffer>>, chunk::ChunkIdHash>
      in_flight_;        // guarded by mu_
  size_t bytes_ = 0;     // guarded by mu_
  uint64_t hits_ = 0;    // guarded by mu_
  uint64_t misses_ = 0;  // guarded by mu_
};

}  // namespace geofs::hub
