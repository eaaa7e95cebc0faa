// ChunkId: the name of a chunk, the SHA-256 of its raw (uncompressed) bytes.
//
// Object key layout: "chunks/<first two hex digits>/<all 64 hex digits>", so
// chunks spread over 256 fan-out prefixes (directories in the local store,
// key-range partitions in S3) and a key alone identifies its chunk.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "geofs/status.h"

namespace geofs::chunk {

// Prefix of every chunk object key.
inline constexpr std::string_view kChunkKeyPrefix = "chunks/";

class ChunkId {
 public:
  static constexpr size_t kSize = 32;

  ChunkId() = default;  // all zero bytes: the id of no real chunk in practice

  // The SHA-256 of `data`. Thread-safe.
  static ChunkId Of(std::span<const uint8_t> data);
  // From 32 raw bytes; kInvalidArgument for any other length.
  static Result<ChunkId> FromBytes(std::span<const uint8_t> bytes);
  // From 64 hex digits (either case).
  static Result<ChunkId> FromHex(std::string_view hex);
  // From an object key made by ObjectKey().
  static Result<ChunkId> FromObjectKey(std::string_view key);

  std::span<const uint8_t, kSize> bytes() const { return bytes_; }
  std::string ToHex() const;  // lower case
  std::string ObjectKey() const;

  auto operator<=>(const ChunkId&) const = default;

 private:
  std::array<uint8_t, kSize> bytes_{};
};

// For unordered containers: the id is already uniformly distributed.
struct ChunkIdHash {
  size_t operator()(const ChunkId& id) const {
    size_t h;
    std::memcpy(&h, id.bytes().data(), sizeof(h));
    return h;
  }
};

}  // namespace geofs::chunk
