#include "chunk/chunk_codec.h"

// For ZSTD_c_literalCompressionMode (stable in the library since 1.5.0,
// still declared in the experimental section).
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "common/buffer_pool.h"

namespace geofs::chunk {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'F', 'S', 'C'};
constexpr uint8_t kVersion = 1;

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Contexts are reused per thread: creating one costs more than compressing
// a small chunk.
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx(ZSTD_createCCtx());
  return ctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

// The compressibility probe's output: a reused per-thread buffer.
std::vector<uint8_t>& ThreadProbeScratch() {
  thread_local std::vector<uint8_t> scratch;
  return scratch;
}

// A whole chunk is compressed straight into a pooled buffer that the result
// keeps (sliced to its size) until the chunk is stored or sent. Fresh memory
// for every result was page-faulted and zeroed by the kernel as zstd wrote
// it, and a per-thread scratch cost a copy out and its own first touch in
// every thread: a third of geofsctl's page faults on text.
BufferPool& OutputPool() {
  static BufferPool pool(/*max_idle_bytes=*/size_t{64} << 20,
                         /*max_pooled_bytes=*/size_t{16} << 20);
  return pool;
}

void WriteHeader(uint8_t* out, Compression compression, uint32_t raw_size) {
  std::memcpy(out, kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(compression);
  out[6] = 0;
  out[7] = 0;
  for (int i = 0; i < 4; ++i) out[8 + i] = static_cast<uint8_t>(raw_size >> (8 * i));
}

Buffer WithHeader(Compression compression, uint32_t raw_size, std::span<const uint8_t> payload) {
  uint8_t* out;
  Buffer b = Buffer::Allocate(kChunkHeaderSize + payload.size(), &out);
  WriteHeader(out, compression, raw_size);
  if (!payload.empty()) std::memcpy(out + kChunkHeaderSize, payload.data(), payload.size());
  return b;
}

Buffer HeaderOnly(Compression compression, uint32_t raw_size) {
  uint8_t* out;
  Buffer b = Buffer::Allocate(kChunkHeaderSize, &out);
  WriteHeader(out, compression, raw_size);
  return b;
}

Status Corrupt(const ChunkId& id, std::string_view why) {
  return Status::Corruption("chunk " + id.ToHex() + ": " + std::string(why));
}

// Compresses `raw` into `dst` (room for ZSTD_compressBound(raw.size())
// bytes); the compressed size when it saves at least `options.min_saving`,
// else 0.
size_t CompressIfWorthIt(std::span<const uint8_t> raw, const ChunkCodecOptions& options,
                         uint8_t* dst) {
  ZSTD_CCtx* cctx = ThreadCCtx();
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, options.zstd_level);
  if (options.zstd_level < 1) {
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
  }
  const size_t n =
      ZSTD_compress2(cctx, dst, ZSTD_compressBound(raw.size()), raw.data(), raw.size());
  if (ZSTD_isError(n) ||
      static_cast<double>(n) > static_cast<double>(raw.size()) * (1 - options.min_saving)) {
    return 0;
  }
  return n;
}

// Whether `raw` should be compressed at all: true for a small chunk, else
// when a slice of probe_bytes from its middle compresses well enough.
bool WorthCompressing(std::span<const uint8_t> raw, const ChunkCodecOptions& options) {
  if (!options.compress || raw.empty()) return false;
  const size_t probe = options.probe_bytes;
  if (probe == 0 || raw.size() <= probe) return true;
  std::vector<uint8_t>& scratch = ThreadProbeScratch();
  if (scratch.size() < ZSTD_compressBound(probe)) scratch.resize(ZSTD_compressBound(probe));
  return CompressIfWorthIt(raw.subspan((raw.size() - probe) / 2, probe), options, scratch.data()) !=
         0;
}

// The zstd form of `raw`, `room` bytes into a pooled buffer (left for the
// caller to fill), when compression is worth it; else an empty Buffer.
Buffer CompressForStorage(std::span<const uint8_t> raw, const ChunkCodecOptions& options,
                          size_t room, uint8_t** out) {
  if (!WorthCompressing(raw, options)) return {};
  Buffer b = OutputPool().Allocate(room + ZSTD_compressBound(raw.size()), out);
  const size_t n = CompressIfWorthIt(raw, options, *out + room);
  if (n == 0) return {};
  b.Truncate(room + n);
  return b;
}

}  // namespace

Status ChunkCodecOptions::Validate() const {
  if (zstd_level < ZSTD_minCLevel() || zstd_level > ZSTD_maxCLevel()) {
    return Status::InvalidArgument("chunk codec: zstd level " + std::to_string(zstd_level) +
                                   " out of range");
  }
  if (!(min_saving >= 0 && min_saving < 1)) {
    return Status::InvalidArgument("chunk codec: min_saving must be in [0, 1)");
  }
  return Status::Ok();
}

EncodedChunk EncodeChunk(std::span<const uint8_t> raw, const ChunkCodecOptions& options) {
  const auto raw_size = static_cast<uint32_t>(raw.size());
  uint8_t* out;
  if (Buffer b = CompressForStorage(raw, options, kChunkHeaderSize, &out); !b.empty()) {
    WriteHeader(out, Compression::kZstd, raw_size);
    return {std::move(b), Compression::kZstd};
  }
  return {WithHeader(Compression::kNone, raw_size, raw), Compression::kNone};
}

EncodedParts EncodeChunkParts(const Buffer& raw, const ChunkCodecOptions& options) {
  const auto raw_size = static_cast<uint32_t>(raw.size());
  uint8_t* out;
  if (Buffer b = CompressForStorage(raw.span(), options, 0, &out); !b.empty()) {
    return {HeaderOnly(Compression::kZstd, raw_size), std::move(b), Compression::kZstd};
  }
  return {HeaderOnly(Compression::kNone, raw_size), raw, Compression::kNone};
}

Result<ChunkHeader> ReadChunkHeader(std::span<const uint8_t> stored) {
  if (stored.size() < kChunkHeaderSize) return Status::Corruption("chunk shorter than its header");
  if (std::memcmp(stored.data(), kMagic, 4) != 0) return Status::Corruption("bad chunk magic");
  if (stored[4] != kVersion) {
    if (stored[4] > kVersion) {
      return Status::NotSupported("chunk format version " + std::to_string(stored[4]) +
                                  " is newer than this program");
    }
    return Status::Corruption("bad chunk format version");
  }
  if (stored[5] > static_cast<uint8_t>(Compression::kZstd)) {
    return Status::Corruption("unknown chunk compression " + std::to_string(stored[5]));
  }
  if (stored[6] != 0 || stored[7] != 0) return Status::Corruption("bad chunk header");
  uint32_t raw_size = 0;
  for (int i = 0; i < 4; ++i) raw_size |= static_cast<uint32_t>(stored[8 + i]) << (8 * i);
  return ChunkHeader{static_cast<Compression>(stored[5]), raw_size};
}

Result<Buffer> DecodeChunk(const Buffer& stored, const ChunkId& expected, size_t max_raw_size) {
  auto header = ReadChunkHeader(stored.span());
  if (!header.ok()) {
    return Status(header.status().code(),
                  "chunk " + expected.ToHex() + ": " + std::string(header.status().message()));
  }
  if (header->raw_size > max_raw_size) return Corrupt(expected, "raw length over the limit");
  std::span<const uint8_t> payload = stored.span().subspan(kChunkHeaderSize);
  Buffer raw;
  if (header->compression == Compression::kNone) {
    if (payload.size() != header->raw_size) return Corrupt(expected, "length mismatch");
    raw = stored.Slice(kChunkHeaderSize, payload.size());
  } else {
    unsigned long long frame_size = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (frame_size != header->raw_size) return Corrupt(expected, "bad zstd frame header");
    uint8_t* out;
    raw = Buffer::Allocate(header->raw_size, &out);
    size_t n =
        ZSTD_decompressDCtx(ThreadDCtx(), out, header->raw_size, payload.data(), payload.size());
    if (ZSTD_isError(n)) {
      return Corrupt(expected, std::string("zstd: ") + ZSTD_getErrorName(n));
    }
    if (n != header->raw_size) return Corrupt(expected, "length mismatch");
  }
  ChunkId actual = ChunkId::Of(raw.span());
  if (actual != expected) return Corrupt(expected, "content hashes to " + actual.ToHex());
  return raw;
}

}  // namespace geofs::chunk
