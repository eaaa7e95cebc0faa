// BufferPool: reusable storage for short-lived buffers (the spoke's blocks
// read from cache files and READ replies assembled from several chunks; the
// importer's read blocks; compressed chunks on their way to the store or
// the wire).
//
// A fresh allocation of a few hundred KiB or more is often new memory to the
// process (glibc maps it, or grows and trims an arena around it), so its
// pages fault in one by one as the read fills them: tens of faults per
// 1 MiB READ. Reused storage is already mapped.
//
// Sizes are rounded up to a power of two from 64 KiB; up to
// `max_pooled_bytes` (rounded up likewise; 4 MiB by default) is pooled,
// larger requests are plain allocations. A buffer goes back to its
// pool when the last Buffer sharing it is destroyed (it may outlive the
// pool); at most `max_idle_bytes` wait there, the rest is freed. Do not pool
// what is kept for long (the rounding may waste up to half of it).
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "geofs/buffer.h"

namespace geofs {

class BufferPool {
 public:
  explicit BufferPool(size_t max_idle_bytes = 64 << 20, size_t max_pooled_bytes = 4 << 20);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Like Buffer::Allocate: `size` writable bytes (contents undefined) at
  // `*out`, to fill before sharing the Buffer.
  Buffer Allocate(size_t size, uint8_t** out);

  // Idle bytes held now (tests).
  size_t idle_bytes() const;

 private:
  struct Shelves;
  std::shared_ptr<Shelves> shelves_;
};

}  // namespace geofs
