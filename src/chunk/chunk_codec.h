// The stored form of a chunk: a 12-byte header and the payload.
//
//   offset 0  magic "GFSC"
//          4  format version (1)
//          5  compression: 0 none, 1 zstd
//          6  two reserved bytes, zero
//          8  raw (uncompressed) length, little-endian uint32
//         12  payload: the raw bytes, or one zstd frame of them
//
// Encoding keeps the zstd form only when it saves at least `min_saving` of
// the raw size, so incompressible data costs no decompression on reads. A
// chunk larger than `probe_bytes` is probed first: a slice of that size
// from its middle is compressed, and when the slice does not save
// `min_saving` the chunk is stored raw without compressing the rest. So
// incompressible data (media, archives, random samples) costs a small
// compression per chunk instead of a whole one; the price is that a chunk
// whose middle is incompressible but whose rest compresses is stored raw.
// Decoding checks everything it can: header fields, the raw length, and the
// SHA-256 of the result against the chunk's id. Any mismatch is kCorruption
// and no bytes are returned.
//
// Functions are thread-safe (zstd contexts are per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "chunk/chunk_id.h"
#include "chunk/chunker.h"
#include "geofs/buffer.h"
#include "geofs/status.h"

namespace geofs::chunk {

enum class Compression : uint8_t { kNone = 0, kZstd = 1 };

inline constexpr size_t kChunkHeaderSize = 12;

struct ChunkCodecOptions {
  // false: always store raw.
  bool compress = true;
  // zstd's levels; below 1 its fast levels, with Huffman coding of literals
  // kept on (zstd turns it off there by default, which on text costs far
  // more ratio than the speed it gains).
  int zstd_level = 3;
  // Keep the compressed form only if it is at most (1 - min_saving) of the
  // raw size.
  double min_saving = 0.05;
  // Size of the compressibility probe; 0: compress every chunk whole.
  size_t probe_bytes = size_t{64} << 10;

  // OK when zstd_level is a level zstd accepts and min_saving is in [0, 1).
  Status Validate() const;
};

struct EncodedChunk {
  Buffer bytes;  // header + payload
  Compression compression = Compression::kNone;
};

// The stored form of `raw`.
// REQUIRES: options.Validate().ok(), raw.size() <= kMaxChunkSizeLimit.
EncodedChunk EncodeChunk(std::span<const uint8_t> raw, const ChunkCodecOptions& options);

// The stored form as its two pieces, for writers that send or write them
// without joining them: header followed by payload is EncodeChunk's bytes.
// An uncompressed payload is `raw` itself (shares its owner, no copy).
struct EncodedParts {
  Buffer header;  // kChunkHeaderSize bytes
  Buffer payload;
  Compression compression = Compression::kNone;

  size_t size() const { return header.size() + payload.size(); }
};
// REQUIRES: as EncodeChunk.
EncodedParts EncodeChunkParts(const Buffer& raw, const ChunkCodecOptions& options);

// The raw bytes of a stored chunk, verified against `expected`; for an
// uncompressed chunk a slice of `stored` (no copy).
// kCorruption on a bad header, a raw length over `max_raw_size` or not
// matching the payload, undecodable zstd data, or a hash mismatch.
// kNotSupported for a format version newer than this code.
Result<Buffer> DecodeChunk(const Buffer& stored, const ChunkId& expected,
                           size_t max_raw_size = kMaxChunkSizeLimit);

// What a stored chunk's header says, without decoding or verifying the
// payload (stats, fsck listings). kCorruption on a bad header.
struct ChunkHeader {
  Compression compression = Compression::kNone;
  uint32_t raw_size = 0;
};
Result<ChunkHeader> ReadChunkHeader(std::span<const uint8_t> stored);

}  // namespace geofs::chunk
