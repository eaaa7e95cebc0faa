// XDR (RFC 4506) encoding and decoding. Knows no protocol.
//
// Decoder failures are sticky: after the first malformed or out-of-bounds
// read every further read fails, so a caller may decode a whole structure and
// check ok() once. Every length is checked against both a caller-supplied
// maximum and the bytes actually present before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "geofs/buffer.h"

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

// Builds an XDR byte stream. Bulk payloads added with OpaqueRef are not
// copied: the output is a list of segments for a gather write.
class Encoder {
 public:
  Encoder() { inline_.reserve(512); }

  void U32(uint32_t v);
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void U64(uint64_t v);
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Bool(bool v) { U32(v ? 1 : 0); }
  void Opaque(std::span<const uint8_t> bytes);
  void FixedOpaque(std::span<const uint8_t> bytes);
  void String(std::string_view s);
  // Like Opaque, but the bytes are referenced, not copied.
  void OpaqueRef(Buffer bytes);

  // Reserves a 4-byte slot to be filled later with Patch32.
  size_t Reserve32();
  void Patch32(size_t slot, uint32_t v);

  // Total encoded size in bytes.
  size_t size() const { return inline_.size() + referenced_bytes_; }

  // Calls fn(std::span<const uint8_t>) for each segment in order.
  template <typename Fn>
  void ForEachSegment(Fn&& fn) const {
    size_t start = 0;
    for (const auto& [at, buf] : refs_) {
      if (at > start) fn(std::span<const uint8_t>(inline_.data() + start, at - start));
      if (!buf.empty()) fn(buf.span());
      start = at;
    }
    if (inline_.size() > start) {
      fn(std::span<const uint8_t>(inline_.data() + start, inline_.size() - start));
    }
  }
  // The whole stream as one contiguous copy (tests, small messages).
  std::vector<uint8_t> Flatten() const;

 private:
  void Append(const void* p, size_t n);

  std::vector<uint8_t> inline_;
  // Referenced buffers, each to be sent just before inline_[at].
  std::vector<std::pair<size_t, Buffer>> refs_;
  size_t referenced_bytes_ = 0;
};

}  // namespace geofs::xdr
