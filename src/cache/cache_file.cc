#include "cache/cache_file.h"

#include <cstring>

#include "common/crc32c.h"

namespace geofs::cache {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'F', 'C', 'C'};
constexpr uint16_t kVersion = 1;
constexpr size_t kLengthOffset = 8;
constexpr size_t kIdOffset = 16;
constexpr size_t kCrcOffset = kIdOffset + chunk::ChunkId::kSize;

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

uint32_t FileCrc(const uint8_t* header, std::span<const uint8_t> payload) {
  return Crc32c(Crc32c(0, {header, kCrcOffset}), payload);
}

}  // namespace

std::string ChunkSubdir(const std::string& dir, const chunk::ChunkId& id) {
  return dir + "/" + id.ToHex().substr(0, 2);
}

std::string ChunkPath(const std::string& dir, const chunk::ChunkId& id) {
  std::string hex = id.ToHex();
  return dir + "/" + hex.substr(0, 2) + "/" + hex;
}

void EncodeFileHeader(const chunk::ChunkId& id, std::span<const uint8_t> raw,
                      uint8_t (&out)[kFileHeaderSize]) {
  std::memset(out, 0, sizeof(out));
  std::memcpy(out, kMagic, sizeof(kMagic));
  PutLe(out + 4, kVersion, 2);
  PutLe(out + 6, kFileHeaderSize, 2);
  PutLe(out + kLengthOffset, raw.size(), 8);
  std::memcpy(out + kIdOffset, id.bytes().data(), chunk::ChunkId::kSize);
  PutLe(out + kCrcOffset, FileCrc(out, raw), 4);
}

Status VerifyFile(const chunk::ChunkId& id, std::span<const uint8_t> file) {
  if (file.size() < kFileHeaderSize)
    return Status::Corruption("cache file shorter than its header");
  const uint8_t* h = file.data();
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0) return Status::Corruption("bad magic");
  if (GetLe(h + 4, 2) != kVersion || GetLe(h + 6, 2) != kFileHeaderSize) {
    return Status::Corruption("unknown cache file version");
  }
  if (GetLe(h + kLengthOffset, 8) != file.size() - kFileHeaderSize) {
    return Status::Corruption("length does not match the file size");
  }
  if (std::memcmp(h + kIdOffset, id.bytes().data(), chunk::ChunkId::kSize) != 0) {
    return Status::Corruption("file holds another chunk");
  }
  if (GetLe(h + kCrcOffset, 4) != FileCrc(h, file.subspan(kFileHeaderSize))) {
    return Status::Corruption("checksum mismatch");
  }
  return Status::Ok();
}

}  // namespace geofs::cache
