#include "vfs/fd_cache.h"

#include <unistd.h>

#include <functional>
#include <string_view>
#include <vector>

namespace geofs::vfs {

OpenFd::~OpenFd() { ::close(fd_); }

size_t FdCache::HandleHash::operator()(const Handle& h) const {
  auto bytes = h.bytes();
  return std::hash<std::string_view>()(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

FdCache::FdCache(size_t capacity) : capacity_(capacity) {}

std::shared_ptr<const OpenFd> FdCache::Find(const Handle& h) {
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void FdCache::Insert(const Handle& h, std::shared_ptr<const OpenFd> fd) {
  // Evicted descriptors are released after the lock: closing is a syscall.
  std::vector<std::shared_ptr<const OpenFd>> evicted;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(h);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      auto& cached = it->second->second;
      if (cached->access() < fd->access()) evicted.push_back(std::exchange(cached, std::move(fd)));
      return;
    }
    lru_.emplace_front(h, std::move(fd));
    index_.emplace(h, lru_.begin());
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      evicted.push_back(std::move(lru_.back().second));
      lru_.pop_back();
    }
  }
}

void FdCache::Erase(const Handle& h) {
  std::shared_ptr<const OpenFd> evicted;
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  if (it == index_.end()) return;
  evicted = std::move(it->second->second);
  lru_.erase(it->second);
  index_.erase(it);
}

size_t FdCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace geofs::vfs
