// Buffer: an immutable view of bytes that shares ownership of their storage.
//
// It lets file data travel from a backend (a pread buffer, a cached chunk, a
// slice of a received RPC record) to the socket without copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace geofs {

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<const void> owner, const uint8_t* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  // A fresh, writable allocation of `size` bytes (contents uninitialised);
  // `*out` points at it so the caller can fill it before sharing the Buffer.
  static Buffer Allocate(size_t size, uint8_t** out) {
    std::shared_ptr<uint8_t[]> storage(new uint8_t[size == 0 ? 1 : size]);
    *out = storage.get();
    return Buffer(std::shared_ptr<const void>(storage, storage.get()), storage.get(), size);
  }
  static Buffer CopyOf(std::span<const uint8_t> bytes) {
    uint8_t* p;
    Buffer b = Allocate(bytes.size(), &p);
    if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
    return b;
  }
  static Buffer CopyOf(std::string_view s) {
    return CopyOf(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  }

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<const uint8_t> span() const { return {data_, size_}; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }

  // A sub-range sharing the same storage. REQUIRES: offset + len <= size().
  Buffer Slice(size_t offset, size_t len) const { return Buffer(owner_, data_ + offset, len); }
  // Shrinks the visible size. REQUIRES: len <= size().
  void Truncate(size_t len) { size_ = len; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace geofs
