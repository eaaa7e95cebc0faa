// The on-disk form of one cached chunk: `<dir>/<2 hex>/<64 hex>`, a 64-byte
// header followed by the raw bytes.
//
// Header (little-endian): magic "GFCC", u16 version, u16 header size,
// u64 raw length, the 32-byte chunk id, u32 CRC32C over the header bytes
// before it and then the payload, 12 zero bytes. The CRC covers the payload,
// so a torn or flipped file fails on every read; the id ties the file to its
// name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "chunk/chunk_id.h"
#include "geofs/status.h"

namespace geofs::cache {

inline constexpr size_t kFileHeaderSize = 64;
// Marks an incomplete file; such files are removed on Open.
inline constexpr std::string_view kTempMarker = ".tmp.";

// `<dir>/<first two hex digits>`.
std::string ChunkSubdir(const std::string& dir, const chunk::ChunkId& id);
std::string ChunkPath(const std::string& dir, const chunk::ChunkId& id);

// Writes the header of a file holding `raw` into `out`.
void EncodeFileHeader(const chunk::ChunkId& id, std::span<const uint8_t> raw,
                      uint8_t (&out)[kFileHeaderSize]);

// Checks a whole file image (header and payload) against `id`; kCorruption
// with the reason when anything is off.
Status VerifyFile(const chunk::ChunkId& id, std::span<const uint8_t> file);

}  // namespace geofs::cache
