#include "xdr/xdr.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace geofs::xdr {
namespace {

uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

constexpr uint8_t kZeros[4] = {0, 0, 0, 0};

}  // namespace

bool Decoder::Take(size_t n, const uint8_t** p) {
  if (!ok_ || n > remaining()) {
    ok_ = false;
    return false;
  }
  *p = data_.data() + pos_;
  pos_ += n;
  return true;
}

bool Decoder::U32(uint32_t* out) {
  const uint8_t* p;
  if (!Take(4, &p)) return false;
  *out = LoadBe32(p);
  return true;
}

bool Decoder::I32(int32_t* out) {
  uint32_t v;
  if (!U32(&v)) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

bool Decoder::U64(uint64_t* out) {
  const uint8_t* p;
  if (!Take(8, &p)) return false;
  *out = (uint64_t{LoadBe32(p)} << 32) | LoadBe32(p + 4);
  return true;
}

bool Decoder::I64(int64_t* out) {
  uint64_t v;
  if (!U64(&v)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

bool Decoder::Bool(bool* out) {
  uint32_t v;
  if (!U32(&v)) return false;
  if (v > 1) {
    ok_ = false;
    return false;
  }
  *out = v == 1;
  return true;
}

bool Decoder::FixedOpaque(size_t len, std::span<const uint8_t>* out) {
  const uint8_t* p;
  // Check the padded length against what is present before taking anything.
  if (len > remaining() || Pad4(len) > remaining()) {
    ok_ = false;
    return false;
  }
  if (!Take(Pad4(len), &p)) return false;
  *out = {p, len};
  return true;
}

bool Decoder::Opaque(size_t max_len, std::span<const uint8_t>* out) {
  uint32_t len;
  if (!U32(&len)) return false;
  if (len > max_len) {
    ok_ = false;
    return false;
  }
  return FixedOpaque(len, out);
}

bool Decoder::String(size_t max_len, std::string_view* out) {
  std::span<const uint8_t> bytes;
  if (!Opaque(max_len, &bytes)) return false;
  *out = {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  return true;
}

Encoder& Encoder::operator=(Encoder&& o) noexcept {
  data_ = std::move(o.data_);
  size_ = std::exchange(o.size_, 0);
  capacity_ = std::exchange(o.capacity_, 0);
  refs_ = std::move(o.refs_);
  o.refs_.clear();
  referenced_bytes_ = std::exchange(o.referenced_bytes_, 0);
  return *this;
}

void Encoder::Grow(size_t n) {
  constexpr size_t kFirstCapacity = 512;
  const size_t capacity = std::max({kFirstCapacity, capacity_ * 2, size_ + n});
  auto data = std::make_unique_for_overwrite<uint8_t[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

void Encoder::ReserveInline(size_t n) {
  if (capacity_ - size_ < n) Grow(n);
}

void Encoder::Append(const void* p, size_t n) {
  if (n > 0) std::memcpy(Extend(n), p, n);
}

void Encoder::FixedOpaque(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) Append(bytes.data(), bytes.size());
  Append(kZeros, Pad4(bytes.size()) - bytes.size());
}

void Encoder::Opaque(std::span<const uint8_t> bytes) {
  U32(static_cast<uint32_t>(bytes.size()));
  FixedOpaque(bytes);
}

void Encoder::String(std::string_view s) {
  Opaque({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

void Encoder::OpaqueRef(Buffer bytes) {
  U32(static_cast<uint32_t>(bytes.size()));
  size_t pad = Pad4(bytes.size()) - bytes.size();
  referenced_bytes_ += bytes.size();
  refs_.push_back(Ref{size_, std::move(bytes), {}});
  Append(kZeros, pad);
}

void Encoder::OpaqueFileRef(FileRange range) {
  U32(static_cast<uint32_t>(range.length));
  size_t pad = Pad4(range.length) - range.length;
  referenced_bytes_ += range.length;
  refs_.push_back(Ref{size_, {}, std::move(range)});
  Append(kZeros, pad);
}

size_t Encoder::Reserve32() {
  size_t slot = size_;
  Append(kZeros, 4);
  return slot;
}

std::vector<uint8_t> Encoder::Flatten() const {
  std::vector<uint8_t> out;
  out.reserve(size());
  ForEachSegment(Overloaded{
      [&](std::span<const uint8_t> s) { out.insert(out.end(), s.begin(), s.end()); },
      [&](const FileRange& f) { AppendFileRange(f, out); }});
  return out;
}

}  // namespace geofs::xdr
