#include "hub/chunk_cache.h"

namespace geofs::hub {

ChunkCache::ChunkCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

Result<Buffer> ChunkCache::Get(const chunk::ChunkId& id, const Fetch& fetch) {
  std::promise<Result<Buffer>> promise;
  {
    std::unique_lock lock(mu_);
    if (auto it = index_.find(id); it != index_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->data;
    }
    if (auto it = in_flight_.find(id); it != in_flight_.end()) {
      ++hits_;
      std::shared_future<Result<Buffer>> pending = it->second;
      lock.unlock();
      return pending.get();
    }
    ++misses_;
    in_flight_.emplace(id, promise.get_future().share());
  }
  Result<Buffer> fetched = fetch(id);
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(id);
    if (fetched.ok()) InsertLocked(id, *fetched);
  }
  promise.set_value(fetched);
  return fetched;
}

void ChunkCache::Insert(const chunk::ChunkId& id, Buffer raw) {
  std::lock_guard lock(mu_);
  InsertLocked(id, std::move(raw));
}

void ChunkCache::InsertLocked(const chunk::ChunkId& id, Buffer raw) {
  if (raw.size() > capacity_) return;
  if (auto it = index_.find(id); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  bytes_ += raw.size();
  lru_.push_front(Entry{id, std::move(raw)});
  index_.emplace(id, lru_.begin());
  while (bytes_ > capacity_) {
    Entry& victim = lru_.back();
    bytes_ -= victim.data.size();
    index_.erase(victim.id);
    lru_.pop_back();
  }
}

size_t ChunkCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

uint64_t ChunkCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

uint64_t ChunkCache::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace geofs::hub
