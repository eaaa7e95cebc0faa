#include "common/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <vector>

namespace geofs {
namespace {

constexpr int kMinShift = 16;  // 64 KiB

int ClassOf(size_t size) {
  return std::countr_zero(std::bit_ceil(std::max<size_t>(size, size_t{1} << kMinShift))) -
         kMinShift;
}

}  // namespace

struct BufferPool::Shelves {
  Shelves(size_t max_idle, int classes) : max_idle_bytes(max_idle), free(classes) {}
  ~Shelves() {
    for (auto& shelf : free)
      for (uint8_t* p : shelf) delete[] p;
  }

  // Puts `p` (of size class `c`) back, or frees it when enough wait already.
  void Return(uint8_t* p, int c) {
    const size_t bytes = size_t{1} << (c + kMinShift);
    {
      std::lock_guard lock(mu);
      if (idle_bytes + bytes <= max_idle_bytes) {
        free[c].push_back(p);
        idle_bytes += bytes;
        return;
      }
    }
    delete[] p;
  }

  const size_t max_idle_bytes;
  mutable std::mutex mu;
  std::vector<std::vector<uint8_t*>> free;  // per size class; guarded by mu
  size_t idle_bytes = 0;                    // guarded by mu
};

BufferPool::BufferPool(size_t max_idle_bytes, size_t max_pooled_bytes)
    : shelves_(std::make_shared<Shelves>(max_idle_bytes, ClassOf(max_pooled_bytes) + 1)) {}

BufferPool::~BufferPool() = default;

Buffer BufferPool::Allocate(size_t size, uint8_t** out) {
  const int c = ClassOf(size);
  if (c >= static_cast<int>(shelves_->free.size())) return Buffer::Allocate(size, out);
  const size_t rounded = size_t{1} << (c + kMinShift);
  uint8_t* p = nullptr;
  {
    std::lock_guard lock(shelves_->mu);
    auto& shelf = shelves_->free[c];
    if (!shelf.empty()) {
      p = shelf.back();
      shelf.pop_back();
      shelves_->idle_bytes -= rounded;
    }
  }
  if (p == nullptr) p = new uint8_t[rounded];
  *out = p;
  // The deleter holds the shelves, so a Buffer may outlive the pool.
  std::shared_ptr<const void> owner(p, [shelves = shelves_, c](const void* q) {
    shelves->Return(static_cast<uint8_t*>(const_cast<void*>(q)), c);
  });
  return Buffer(std::move(owner), p, size);
}

size_t BufferPool::idle_bytes() const {
  std::lock_guard lock(shelves_->mu);
  return shelves_->idle_bytes;
}

}  // namespace geofs
