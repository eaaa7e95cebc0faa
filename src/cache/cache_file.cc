#include "cache/cache_file.h"

#include <algorithm>
#include <cstring>

#include "common/crc32c.h"

namespace geofs::cache {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'F', 'C', 'C'};
constexpr uint16_t kVersion = 2;
constexpr size_t kLengthOffset = 8;
constexpr size_t kIdOffset = 16;
constexpr size_t kBlockSizeOffset = kIdOffset + chunk::ChunkId::kSize;
constexpr size_t kCrcOffset = 60;

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Over the header bytes before the CRC and the block table after it.
uint32_t PrefixCrc(std::span<const uint8_t> prefix) {
  return Crc32c(Crc32c(0, prefix.first(kCrcOffset)), prefix.subspan(kFileHeaderSize));
}

}  // namespace

std::string ChunkSubdir(const std::string& dir, const chunk::ChunkId& id) {
  return dir + "/" + id.ToHex().substr(0, 2);
}

std::string ChunkPath(const std::string& dir, const chunk::ChunkId& id) {
  std::string hex = id.ToHex();
  return dir + "/" + hex.substr(0, 2) + "/" + hex;
}

std::vector<uint8_t> EncodeFilePrefix(const chunk::ChunkId& id, std::span<const uint8_t> raw) {
  std::vector<uint8_t> out(DataOffset(raw.size()), 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  PutLe(&out[4], kVersion, 2);
  PutLe(&out[6], kFileHeaderSize, 2);
  PutLe(&out[kLengthOffset], raw.size(), 8);
  std::memcpy(&out[kIdOffset], id.bytes().data(), chunk::ChunkId::kSize);
  PutLe(&out[kBlockSizeOffset], kBlockSize, 4);
  for (uint64_t b = 0; b < BlockCount(raw.size()); ++b) {
    uint64_t begin = b * kBlockSize;
    PutLe(&out[kFileHeaderSize + 4 * b],
          Crc32c(0, raw.subspan(begin, std::min<uint64_t>(kBlockSize, raw.size() - begin))), 4);
  }
  PutLe(&out[kCrcOffset], PrefixCrc(out), 4);
  return out;
}

Result<uint64_t> ParseFileHeader(std::span<const uint8_t> header, uint64_t file_size) {
  if (header.size() < kFileHeaderSize || file_size < kFileHeaderSize) {
    return Status::Corruption("cache file shorter than its header");
  }
  const uint8_t* h = header.data();
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0) return Status::Corruption("bad magic");
  if (GetLe(h + 4, 2) != kVersion || GetLe(h + 6, 2) != kFileHeaderSize ||
      GetLe(h + kBlockSizeOffset, 4) != kBlockSize) {
    return Status::Corruption("unknown cache file version");
  }
  uint64_t raw_bytes = GetLe(h + kLengthOffset, 8);
  // Bounded first so that FileSize() cannot overflow.
  if (raw_bytes > file_size || FileSize(raw_bytes) != file_size) {
    return Status::Corruption("length does not match the file size");
  }
  return raw_bytes;
}

Result<std::vector<uint32_t>> VerifyFilePrefix(const chunk::ChunkId& id,
                                               std::span<const uint8_t> prefix,
                                               uint64_t file_size) {
  GEOFS_ASSIGN_OR_RETURN(uint64_t raw_bytes, ParseFileHeader(prefix, file_size));
  if (prefix.size() != DataOffset(raw_bytes)) {
    return Status::Corruption("block table does not match the length");
  }
  const uint8_t* h = prefix.data();
  if (std::memcmp(h + kIdOffset, id.bytes().data(), chunk::ChunkId::kSize) != 0) {
    return Status::Corruption("file holds another chunk");
  }
  if (GetLe(h + kCrcOffset, 4) != PrefixCrc(prefix)) {
    return Status::Corruption("header checksum mismatch");
  }
  std::vector<uint32_t> crcs(BlockCount(raw_bytes));
  for (size_t b = 0; b < crcs.size(); ++b) {
    crcs[b] = static_cast<uint32_t>(GetLe(h + kFileHeaderSize + 4 * b, 4));
  }
  return crcs;
}

Status VerifyBlocks(std::span<const uint32_t> block_crcs, uint64_t first_block,
                    std::span<const std::span<const uint8_t>> pieces) {
  size_t piece = 0;
  size_t at = 0;  // within pieces[piece]
  auto next_piece = [&] {
    while (piece < pieces.size() && at == pieces[piece].size()) {
      ++piece;
      at = 0;
    }
  };
  next_piece();
  for (uint64_t b = first_block; piece < pieces.size(); ++b) {
    if (b >= block_crcs.size()) return Status::Corruption("read past the last block");
    uint32_t crc = 0;
    uint64_t left = kBlockSize;
    while (left > 0 && piece < pieces.size()) {
      size_t n = std::min<uint64_t>(left, pieces[piece].size() - at);
      auto part = pieces[piece].subspan(at, n);
      crc = Crc32c(crc, part);
      left -= n;
      at += n;
      next_piece();
    }
    if (crc != block_crcs[b]) {
      return Status::Corruption("checksum mismatch in block " + std::to_string(b));
    }
  }
  return Status::Ok();
}

}  // namespace geofs::cache
