#include "chunk/chunk_id.h"

#include <openssl/evp.h>

#include <cstdlib>

namespace geofs::chunk {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// SHA-256 fetched once: an implicit fetch on every digest costs a lookup in
// OpenSSL 3's provider tables. EVP_MD objects are safe to share across threads.
const EVP_MD* Sha256() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

}  // namespace

ChunkId ChunkId::Of(std::span<const uint8_t> data) {
  ChunkId id;
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), id.bytes_.data(), &len, Sha256(), nullptr) != 1 ||
      len != kSize) {
    // Only a broken OpenSSL installation gets here; a wrong id would be
    // silent data corruption, so stop.
    std::abort();
  }
  return id;
}

Result<ChunkId> ChunkId::FromBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() != kSize) {
    return Status::InvalidArgument("chunk id of " + std::to_string(bytes.size()) +
                                   " bytes (expected 32)");
  }
  ChunkId id;
  std::memcpy(id.bytes_.data(), bytes.data(), kSize);
  return id;
}

Result<ChunkId> ChunkId::FromHex(std::string_view hex) {
  auto bad = [&] {
    return Status::InvalidArgument("chunk id '" + std::string(hex.substr(0, 80)) +
                                   "' is not 64 hex digits");
  };
  if (hex.size() != 2 * kSize) return bad();
  ChunkId id;
  for (size_t i = 0; i < kSize; ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return bad();
    id.bytes_[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return id;
}

Result<ChunkId> ChunkId::FromObjectKey(std::string_view key) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(key.substr(0, 120)) +
                                   "' is not a chunk object key");
  };
  // chunks/ab/ab...
  if (!key.starts_with(kChunkKeyPrefix)) return bad();
  std::string_view rest = key.substr(kChunkKeyPrefix.size());
  if (rest.size() != 3 + 2 * kSize || rest[2] != '/') return bad();
  auto id = FromHex(rest.substr(3));
  if (!id.ok() || id->ToHex().compare(0, 2, rest.substr(0, 2)) != 0) return bad();
  return id;
}

std::string ChunkId::ToHex() const {
  std::string out(2 * kSize, '0');
  for (size_t i = 0; i < kSize; ++i) {
    out[2 * i] = kHexDigits[bytes_[i] >> 4];
    out[2 * i + 1] = kHexDigits[bytes_[i] & 15];
  }
  return out;
}

std::string ChunkId::ObjectKey() const {
  std::string hex = ToHex();
  std::string key(kChunkKeyPrefix);
  key.append(hex, 0, 2);
  key += '/';
  key += hex;
  return key;
}

}  // namespace geofs::chunk
