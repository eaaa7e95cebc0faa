#include "memory_chunk_cache.h"

namespace geofs::spoke {

void MemoryChunkCache::Get(const chunk::ChunkId& id, GetCallback cb) {
  Result<Buffer> result = Status::NotFound(id.ToHex());
  {
    std::lock_guard lock(mu_);
    auto it = items_.find(id);
    if (it == items_.end()) {
      ++stats_.misses;
    } else {
      ++stats_.memory_hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      result = it->second.raw;
    }
  }
  cb(std::move(result));
}

void MemoryChunkCache::Put(const chunk::ChunkId& id, Buffer raw, PutCallback cb) {
  Status status;
  {
    std::lock_guard lock(mu_);
    if (!items_.contains(id)) {
      if (bytes_ + raw.size() > capacity_) EvictLocked(bytes_ + raw.size() - capacity_);
      if (bytes_ + raw.size() > capacity_) {
        status = Status::NoSpace("memory chunk cache full of pinned chunks");
      } else {
        lru_.push_front(id);
        bytes_ += raw.size();
        ++stats_.inserts;
        items_.emplace(id, Item{std::move(raw), lru_.begin()});
      }
    }
  }
  cb(status);
}

bool MemoryChunkCache::Contains(const chunk::ChunkId& id) const {
  std::lock_guard lock(mu_);
  return items_.contains(id);
}

void MemoryChunkCache::Pin(const chunk::ChunkId& id) {
  std::lock_guard lock(mu_);
  ++pins_[id];
}

void MemoryChunkCache::Unpin(const chunk::ChunkId& id) {
  std::lock_guard lock(mu_);
  auto it = pins_.find(id);
  if (it != pins_.end() && --it->second <= 0) pins_.erase(it);
}

uint64_t MemoryChunkCache::Shrink(uint64_t bytes) {
  std::lock_guard lock(mu_);
  return EvictLocked(bytes);
}

uint64_t MemoryChunkCache::EvictLocked(uint64_t bytes) {
  uint64_t freed = 0;
  for (auto it = lru_.end(); it != lru_.begin() && freed < bytes;) {
    --it;
    if (pins_.contains(*it)) continue;
    auto item = items_.find(*it);
    freed += item->second.raw.size();
    bytes_ -= item->second.raw.size();
    ++stats_.evictions;
    items_.erase(item);
    it = lru_.erase(it);
  }
  return freed;
}

cache::ChunkCacheStats MemoryChunkCache::Stats() const {
  std::lock_guard lock(mu_);
  cache::ChunkCacheStats out = stats_;
  out.memory_bytes = bytes_;
  out.capacity_bytes = capacity_;
  return out;
}

}  // namespace geofs::spoke
