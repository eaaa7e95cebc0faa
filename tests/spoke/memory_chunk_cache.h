// MemoryChunkCache: a ChunkCache in memory only, least recently used first
// out: a test double for the disk cache (src/cache). Nothing survives a
// restart.
//
// Thread-safe; callbacks run on the calling thread.
#pragma once

#include <list>
#include <mutex>
#include <unordered_map>

#include "cache/chunk_cache.h"

namespace geofs::spoke {

class MemoryChunkCache : public cache::ChunkCache {
 public:
  explicit MemoryChunkCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  void Get(const chunk::ChunkId& id, GetCallback cb) override;
  void Put(const chunk::ChunkId& id, Buffer raw, PutCallback cb) override;
  bool Contains(const chunk::ChunkId& id) const override;
  void Pin(const chunk::ChunkId& id) override;
  void Unpin(const chunk::ChunkId& id) override;
  uint64_t Shrink(uint64_t bytes) override;
  cache::ChunkCacheStats Stats() const override;

 private:
  struct Item {
    Buffer raw;
    std::list<chunk::ChunkId>::iterator lru;
  };
  // Evicts unpinned chunks, oldest first, until `bytes` are free or none is
  // left; returns the bytes freed. REQUIRES: mu_ held.
  uint64_t EvictLocked(uint64_t bytes);

  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<chunk::ChunkId, Item, chunk::ChunkIdHash> items_;  // guarded by mu_
  std::list<chunk::ChunkId> lru_;  // guarded by mu_: most recent first
  std::unordered_map<chunk::ChunkId, int, chunk::ChunkIdHash> pins_;  // guarded by mu_
  uint64_t bytes_ = 0;                                                // guarded by mu_
  mutable cache::ChunkCacheStats stats_;                              // guarded by mu_
};

}  // namespace geofs::spoke
