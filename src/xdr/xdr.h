// XDR (RFC 4506) encoding and decoding. Knows no protocol.
//
// Decoder failures are sticky: after the first malformed or out-of-bounds
// read every further read fails, so a caller may decode a whole structure and
// check ok() once. Every length is checked against both a caller-supplied
// maximum and the bytes actually present before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "geofs/buffer.h"
#include "geofs/file_range.h"

namespace geofs::xdr {

inline constexpr size_t Pad4(size_t n) { return (n + 3) & ~size_t{3}; }

class Decoder {
 public:
  explicit Decoder(std::span<const uint8_t> data) : data_(data) {}

  bool ok() const { return ok_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  // Marks the decode failed (for semantic errors found by the caller).
  void Fail() { ok_ = false; }

  bool U32(uint32_t* out);
  bool I32(int32_t* out);
  bool U64(uint64_t* out);
  bool I64(int64_t* out);
  bool Bool(bool* out);  // only 0 and 1 are valid
  // Variable-length opaque of at most max_len bytes; `out` views the input.
  bool Opaque(size_t max_len, std::span<const uint8_t>* out);
  bool FixedOpaque(size_t len, std::span<const uint8_t>* out);
  bool String(size_t max_len, std::string_view* out);
  // Reads an optional-data discriminant (XDR "*" pointer or bool union arm).
  bool Present(bool* present) { return Bool(present); }
  // The undecoded tail (for forwarding arguments). Does not consume.
  std::span<const uint8_t> Rest() const { return data_.subspan(pos_); }

 private:
  bool Take(size_t n, const uint8_t** p);

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Combines lambdas into one overloaded callable, for ForEachSegment.
template <typename... Fns>
struct Overloaded : Fns... {
  using Fns::operator()...;
};
template <typename... Fns>
Overloaded(Fns...) -> Overloaded<Fns...>;

// Builds an XDR byte stream. Bulk payloads added with OpaqueRef are not
// copied: the output is a list of segments for a gather write. Fixed-size
// items are stored straight into the inline buffer (no per-item call into
// std::vector), since replies such as READDIRPLUS pages hold thousands.
// Move-only; a moved-from Encoder is empty.
class Encoder {
 public:
  Encoder() = default;
  Encoder(Encoder&& o) noexcept { *this = std::move(o); }
  Encoder& operator=(Encoder&& o) noexcept;
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void U32(uint32_t v) { StoreBe32(Extend(4), v); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void U64(uint64_t v) {
    uint8_t* p = Extend(8);
    StoreBe32(p, static_cast<uint32_t>(v >> 32));
    StoreBe32(p + 4, static_cast<uint32_t>(v));
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Bool(bool v) { U32(v ? 1 : 0); }
  void Opaque(std::span<const uint8_t> bytes);
  void FixedOpaque(std::span<const uint8_t> bytes);
  void String(std::string_view s);
  // Like Opaque, but the bytes are referenced, not copied.
  void OpaqueRef(Buffer bytes);
  // Like Opaque, with the bytes sent straight from a file (sendfile).
  void OpaqueFileRef(FileRange range);

  // Makes room for `n` more inline bytes at once (for replies whose size
  // is known up front); never needed for correctness.
  void ReserveInline(size_t n);
  // Reserves a 4-byte slot to be filled later with Patch32.
  size_t Reserve32();
  void Patch32(size_t slot, uint32_t v) { StoreBe32(data_.get() + slot, v); }

  // Total encoded size in bytes.
  size_t size() const { return size_ + referenced_bytes_; }

  // Calls fn(std::span<const uint8_t>) for each in-memory segment and
  // fn(const FileRange&) for each file segment, in order.
  template <typename Fn>
  void ForEachSegment(Fn&& fn) const {
    size_t start = 0;
    for (const Ref& ref : refs_) {
      if (ref.at > start) fn(std::span<const uint8_t>(data_.get() + start, ref.at - start));
      if (ref.file.length > 0) {
        fn(static_cast<const FileRange&>(ref.file));
      } else if (!ref.bytes.empty()) {
        fn(ref.bytes.span());
      }
      start = ref.at;
    }
    if (size_ > start) fn(std::span<const uint8_t>(data_.get() + start, size_ - start));
  }
  // The whole stream as one contiguous copy (tests, small messages).
  std::vector<uint8_t> Flatten() const;

 private:
  static void StoreBe32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
  }
  // Appends `n` bytes to the inline buffer; returns where they go.
  uint8_t* Extend(size_t n) {
    if (capacity_ - size_ < n) Grow(n);
    uint8_t* p = data_.get() + size_;
    size_ += n;
    return p;
  }
  void Grow(size_t n);
  void Append(const void* p, size_t n);

  std::unique_ptr<uint8_t[]> data_;  // inline bytes [0, size_) of capacity_
  size_t size_ = 0;
  size_t capacity_ = 0;
  // Referenced bytes (a buffer, or a file range when its length is not 0),
  // each to be sent just before inline byte `at`.
  struct Ref {
    size_t at;
    Buffer bytes;
    FileRange file;
  };
  std::vector<Ref> refs_;
  size_t referenced_bytes_ = 0;
};

}  // namespace geofs::xdr
