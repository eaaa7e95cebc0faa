#include "chunk/chunk_codec.h"

#include <gtest/gtest.h>

#include "chunk/chunk_test_data.h"

namespace geofs::chunk {
namespace {

Buffer Copy(std::span<const uint8_t> b) { return Buffer::CopyOf(b); }

// Random bytes with a run of zeros: compresses by about `zero_fraction`.
std::vector<uint8_t> PartlyCompressible(size_t n, double zero_fraction) {
  auto data = testdata::Random(n, 77);
  std::fill(data.begin(), data.begin() + static_cast<size_t>(n * zero_fraction), 0);
  return data;
}

TEST(ChunkCodecTest, CompressibleChunksAreStoredCompressed) {
  auto raw = testdata::TextLike(1 << 20, 1);
  EncodedChunk enc = EncodeChunk(raw, {});
  EXPECT_EQ(enc.compression, Compression::kZstd);
  EXPECT_LT(enc.bytes.size(), raw.size() / 2);
  auto header = ReadChunkHeader(enc.bytes.span());
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->compression, Compression::kZstd);
  EXPECT_EQ(header->raw_size, raw.size());
  auto dec = DecodeChunk(enc.bytes, ChunkId::Of(raw));
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), dec->data(), dec->data() + dec->size()));
}

TEST(ChunkCodecTest, IncompressibleChunksAreStoredRaw) {
  auto raw = testdata::Random(1 << 20, 2);
  EncodedChunk enc = EncodeChunk(raw, {});
  EXPECT_EQ(enc.compression, Compression::kNone);
  EXPECT_EQ(enc.bytes.size(), raw.size() + kChunkHeaderSize);
  auto dec = DecodeChunk(enc.bytes, ChunkId::Of(raw));
  ASSERT_TRUE(dec.ok());
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), dec->data(), dec->data() + dec->size()));
  // A raw chunk decodes to a slice of the stored bytes, without a copy.
  EXPECT_EQ(dec->data(), enc.bytes.data() + kChunkHeaderSize);
}

TEST(ChunkCodecTest, MinSavingDecidesWhetherCompressionIsKept) {
  auto raw = PartlyCompressible(1 << 20, 0.10);  // zstd saves about 10%
  // Without the probe: its slice from the middle is all random bytes.
  ChunkCodecOptions keep;
  keep.min_saving = 0.05;
  keep.probe_bytes = 0;
  ChunkCodecOptions skip = keep;
  skip.min_saving = 0.20;
  EXPECT_EQ(EncodeChunk(raw, keep).compression, Compression::kZstd);
  EXPECT_EQ(EncodeChunk(raw, skip).compression, Compression::kNone);
  ChunkCodecOptions off;
  off.compress = false;
  EXPECT_EQ(EncodeChunk(testdata::TextLike(4096, 3), off).compression, Compression::kNone);
  for (const ChunkCodecOptions& o : {keep, skip, off}) {
    auto dec = DecodeChunk(EncodeChunk(raw, o).bytes, ChunkId::Of(raw));
    ASSERT_TRUE(dec.ok());
    EXPECT_EQ(dec->size(), raw.size());
  }
}

TEST(ChunkCodecTest, ProbeOfTheMiddleDecidesForLargeChunks) {
  ChunkCodecOptions probed;
  probed.probe_bytes = 64 << 10;
  ChunkCodecOptions whole = probed;
  whole.probe_bytes = 0;
  // Compressible only outside the middle: the probe sees random bytes.
  std::vector<uint8_t> edges = testdata::TextLike(1 << 20, 5);
  const std::vector<uint8_t> noise = testdata::Random(256 << 10, 6);
  std::copy(noise.begin(), noise.end(), edges.begin() + (384 << 10));
  EXPECT_EQ(EncodeChunk(edges, whole).compression, Compression::kZstd);
  EXPECT_EQ(EncodeChunk(edges, probed).compression, Compression::kNone);
  // Compressible only in the middle: the probe says compress, and the
  // whole chunk's saving decides.
  std::vector<uint8_t> middle = testdata::Random(1 << 20, 7);
  std::fill(middle.begin() + (256 << 10), middle.begin() + (768 << 10), 0);
  EncodedChunk enc = EncodeChunk(middle, probed);
  EXPECT_EQ(enc.compression, Compression::kZstd);
  EXPECT_LT(enc.bytes.size(), middle.size() * 6 / 10);
  // A chunk no larger than the probe is compressed whole.
  auto small = PartlyCompressible(probed.probe_bytes, 0.5);
  EXPECT_EQ(EncodeChunk(small, probed).compression, Compression::kZstd);
  for (const auto* raw : {&edges, &middle, &small}) {
    for (const ChunkCodecOptions& o : {probed, whole}) {
      auto dec = DecodeChunk(EncodeChunk(*raw, o).bytes, ChunkId::Of(*raw));
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      EXPECT_TRUE(std::equal(raw->begin(), raw->end(), dec->data(), dec->data() + dec->size()));
    }
  }
}

TEST(ChunkCodecTest, LevelsAndEmptyChunks) {
  auto raw = testdata::TextLike(64 << 10, 4);
  ChunkCodecOptions fast;
  fast.zstd_level = 1;
  ChunkCodecOptions strong;
  strong.zstd_level = 19;
  size_t fast_size = EncodeChunk(raw, fast).bytes.size();
  size_t strong_size = EncodeChunk(raw, strong).bytes.size();
  EXPECT_LT(strong_size, fast_size);
  EXPECT_TRUE(DecodeChunk(EncodeChunk(raw, strong).bytes, ChunkId::Of(raw)).ok());

  EncodedChunk empty = EncodeChunk({}, {});
  EXPECT_EQ(empty.bytes.size(), kChunkHeaderSize);
  auto dec = DecodeChunk(empty.bytes, ChunkId::Of({}));
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->size(), 0u);
}

// Joins the two pieces of EncodeChunkParts.
Buffer Joined(const EncodedParts& parts) {
  std::vector<uint8_t> all(parts.header.data(), parts.header.data() + parts.header.size());
  all.insert(all.end(), parts.payload.data(), parts.payload.data() + parts.payload.size());
  return Buffer::CopyOf(std::span<const uint8_t>(all));
}

TEST(ChunkCodecTest, PartsJoinToTheStoredForm) {
  for (const auto& raw :
       {testdata::TextLike(1 << 20, 5), testdata::Random(1 << 20, 6), std::vector<uint8_t>{}}) {
    const Buffer in = Copy(raw);
    const EncodedParts parts = EncodeChunkParts(in, {});
    const EncodedChunk whole = EncodeChunk(raw, {});
    EXPECT_EQ(parts.compression, whole.compression);
    EXPECT_EQ(parts.header.size(), kChunkHeaderSize);
    EXPECT_EQ(parts.size(), whole.bytes.size());
    const Buffer joined = Joined(parts);
    EXPECT_TRUE(std::equal(joined.data(), joined.data() + joined.size(), whole.bytes.data()));
    EXPECT_TRUE(DecodeChunk(joined, ChunkId::Of(raw)).ok());
  }
  // Stored raw: the payload is the input itself, not a copy.
  const Buffer random = Copy(testdata::Random(1 << 20, 7));
  const EncodedParts raw_parts = EncodeChunkParts(random, {});
  EXPECT_EQ(raw_parts.compression, Compression::kNone);
  EXPECT_EQ(raw_parts.payload.data(), random.data());
}

TEST(ChunkCodecTest, FastLevelsKeepCodingLiterals) {
  // Letters from a 16-symbol alphabet in random order: next to no repeats
  // for LZ matching, so only entropy coding of literals (4 of 8 bits per
  // byte) makes the chunk smaller.
  auto raw = testdata::Random(1 << 20, 8);
  for (uint8_t& b : raw) b = 'a' + (b & 15);
  ChunkCodecOptions fast;
  fast.zstd_level = -3;
  ASSERT_TRUE(fast.Validate().ok());
  EncodedChunk enc = EncodeChunk(raw, fast);
  ASSERT_EQ(enc.compression, Compression::kZstd);
  EXPECT_LT(enc.bytes.size(), raw.size() * 6 / 10);
  auto dec = DecodeChunk(enc.bytes, ChunkId::Of(raw));
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), dec->data(), dec->data() + dec->size()));
}

TEST(ChunkCodecTest, OptionsAreValidated) {
  EXPECT_TRUE(ChunkCodecOptions().Validate().ok());
  ChunkCodecOptions o;
  o.zstd_level = 100;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  o = {};
  o.min_saving = 1.0;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  o.min_saving = -0.1;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
}

// Whatever byte of a stored chunk is damaged, decoding never returns bytes
// other than the original ones.
void ExpectEveryByteFlipIsCaught(std::span<const uint8_t> raw, const ChunkCodecOptions& o,
                                 Compression expected_kind) {
  ChunkId id = ChunkId::Of(raw);
  EncodedChunk enc = EncodeChunk(raw, o);
  ASSERT_EQ(enc.compression, expected_kind);
  std::vector<uint8_t> stored(enc.bytes.data(), enc.bytes.data() + enc.bytes.size());
  int detected = 0;
  for (size_t i = 0; i < stored.size(); ++i) {
    std::vector<uint8_t> bad = stored;
    bad[i] ^= 0x01;
    auto dec = DecodeChunk(Copy(bad), id);
    if (dec.ok()) {
      // Only harmless if the bytes are exactly right.
      ASSERT_TRUE(std::equal(raw.begin(), raw.end(), dec->data(), dec->data() + dec->size()) &&
                  dec->size() == raw.size())
          << "flip at " << i << " returned wrong data";
    } else {
      ASSERT_TRUE(dec.status().code() == StatusCode::kCorruption ||
                  dec.status().code() == StatusCode::kNotSupported)
          << i << ": " << dec.status().ToString();
      ++detected;
    }
  }
  // The header and nearly all payload bytes matter.
  EXPECT_GE(detected, static_cast<int>(stored.size()) * 9 / 10);
}

TEST(ChunkCodecTest, CorruptionIsDetectedNeverReturned) {
  ExpectEveryByteFlipIsCaught(testdata::TextLike(8 << 10, 5), {}, Compression::kZstd);
  ExpectEveryByteFlipIsCaught(testdata::Random(2 << 10, 6), {}, Compression::kNone);
}

TEST(ChunkCodecTest, MalformedStoredFormsAreCorruption) {
  auto raw = testdata::TextLike(64 << 10, 7);
  ChunkId id = ChunkId::Of(raw);
  Buffer good = EncodeChunk(raw, {}).bytes;
  auto mutate = [&](auto change) {
    std::vector<uint8_t> b(good.data(), good.data() + good.size());
    change(b);
    return DecodeChunk(Copy(b), id).status();
  };
  auto truncated = DecodeChunk(good.Slice(0, good.size() - 1), id).status();
  EXPECT_EQ(truncated.code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeChunk(good.Slice(0, 5), id).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(mutate([](auto& b) { b[0] = 'X'; }).code(), StatusCode::kCorruption);
  EXPECT_EQ(mutate([](auto& b) { b[4] = 2; }).code(), StatusCode::kNotSupported);
  EXPECT_EQ(mutate([](auto& b) { b[4] = 0; }).code(), StatusCode::kCorruption);
  EXPECT_EQ(mutate([](auto& b) { b[5] = 7; }).code(), StatusCode::kCorruption);
  EXPECT_EQ(mutate([](auto& b) { b[6] = 1; }).code(), StatusCode::kCorruption);
  // A length field claiming 1 GiB is refused before any allocation.
  EXPECT_EQ(mutate([](auto& b) { b[11] = 0x40; }).code(), StatusCode::kCorruption);
  auto junk = mutate([](auto& b) { b.push_back(0); });
  EXPECT_EQ(junk.code(), StatusCode::kCorruption);
  // Right bytes, wrong name.
  Status wrong_id = DecodeChunk(good, ChunkId::Of(testdata::TextLike(10, 8))).status();
  EXPECT_EQ(wrong_id.code(), StatusCode::kCorruption);
  EXPECT_NE(wrong_id.message().find("hashes to " + id.ToHex()), std::string_view::npos)
      << wrong_id.ToString();
  // A small max_raw_size guards callers that expect small chunks.
  EXPECT_EQ(DecodeChunk(good, id, 1000).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace geofs::chunk
