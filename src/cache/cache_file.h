// The on-disk form of one cached chunk: `<dir>/<2 hex>/<64 hex>`, a 64-byte
// header, a table of block checksums, then the raw bytes.
//
// Header (little-endian): magic "GFCC", u16 version (2), u16 header size (64),
// u64 raw length, the 32-byte chunk id, u32 block size (64 KiB), 8 zero
// bytes, and at byte 60 a u32 CRC32C over the 60 header bytes before it and
// the block table. The table holds one u32 CRC32C per 64 KiB block of the raw
// bytes (the last block may be shorter). A read verifies the header once, when
// the file is opened, and then only the blocks it covers, so a 4 KiB read
// checks 64 KiB and not the whole chunk. The id ties the file to its name.
//
// Version 1 files (one CRC over the whole payload) are not readable by this
// code; the cache deletes them when it opens its directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/chunk_id.h"
#include "geofs/status.h"

namespace geofs::cache {

inline constexpr size_t kFileHeaderSize = 64;
inline constexpr uint64_t kBlockSize = 64 << 10;
// Marks an incomplete file; such files are removed on Open.
inline constexpr std::string_view kTempMarker = ".tmp.";

// `<dir>/<first two hex digits>`.
std::string ChunkSubdir(const std::string& dir, const chunk::ChunkId& id);
std::string ChunkPath(const std::string& dir, const chunk::ChunkId& id);

inline uint64_t BlockCount(uint64_t raw_bytes) { return (raw_bytes + kBlockSize - 1) / kBlockSize; }
// Where the raw bytes start: after the header and the block table.
inline uint64_t DataOffset(uint64_t raw_bytes) {
  return kFileHeaderSize + 4 * BlockCount(raw_bytes);
}
inline uint64_t FileSize(uint64_t raw_bytes) { return DataOffset(raw_bytes) + raw_bytes; }

// The header and block table of a file holding `raw` (DataOffset() bytes).
std::vector<uint8_t> EncodeFilePrefix(const chunk::ChunkId& id, std::span<const uint8_t> raw);

// The raw length recorded in the first kFileHeaderSize bytes of a file of
// `file_size` bytes. kCorruption when the header is not a current-version
// header or the length disagrees with the file size (a torn file). Does not
// check the CRC (see VerifyFilePrefix).
Result<uint64_t> ParseFileHeader(std::span<const uint8_t> header, uint64_t file_size);

// Checks the header and block table (`prefix`, DataOffset() bytes) of a file
// of `file_size` bytes against `id`; returns the block CRCs, or kCorruption
// with the reason.
Result<std::vector<uint32_t>> VerifyFilePrefix(const chunk::ChunkId& id,
                                               std::span<const uint8_t> prefix, uint64_t file_size);

// Checks the raw bytes of the consecutive blocks starting at `first_block`,
// given as `pieces` to be read one after the other (a read may scatter its
// blocks over several buffers), against `block_crcs`. REQUIRES: the bytes
// start on a block boundary and end on one or at the end of the chunk.
Status VerifyBlocks(std::span<const uint32_t> block_crcs, uint64_t first_block,
                    std::span<const std::span<const uint8_t>> pieces);

}  // namespace geofs::cache
