#include "import_floor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "tools/temp_dir.h"

namespace geofs::bench {
namespace {

namespace fs = std::filesystem;

class ImportFloorTest : public ::testing::Test {
 protected:
  static void Write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  static std::string RandomBytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  }
  static std::string Text(size_t n) {
    std::string s;
    for (int i = 0; s.size() < n; ++i)
      s += "{\"id\": " + std::to_string(i) + ", \"text\": \"lorem ipsum\"}\n";
    s.resize(n);
    return s;
  }

  testutil::TempDir dir_;
  const fs::path root_ = dir_.path();
};

TEST_F(ImportFloorTest, CountsEveryChunkButEncodesAndVerifiesEachOnce) {
  const std::string a = RandomBytes(3 << 20, 1);
  Write(root_ / "v1/a.bin", a);
  Write(root_ / "v1/sub/copy-of-a.bin", a);                   // whole duplicate within the import
  Write(root_ / "v1/b.bin", RandomBytes(100 << 10, 2));       // one short chunk
  Write(root_ / "v2/a.bin", a);                               // a later import of the same file
  fs::create_symlink(root_ / "v1/a.bin", root_ / "v1/link");  // not followed

  chunk::ChunkCodecOptions codec;
  auto one = MeasureImportFloor({(root_ / "v1").string()}, codec);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  const uint64_t chunks_of_a = one->new_chunks - 1;  // b is one chunk
  EXPECT_GE(chunks_of_a, 1u);
  EXPECT_EQ(one->files, 3u);
  EXPECT_EQ(one->bytes, 2 * a.size() + (100 << 10));
  EXPECT_EQ(one->chunks, 2 * chunks_of_a + 1);
  // Random bytes are stored raw: header and payload of each new chunk.
  EXPECT_EQ(one->stored_bytes, a.size() + (100 << 10) + one->new_chunks * chunk::kChunkHeaderSize);
  EXPECT_GT(one->name, 0);
  EXPECT_GT(one->verify, 0);
  EXPECT_NEAR(one->TotalCpu(), one->read + one->chunk + one->name + one->encode + one->verify,
              1e-12);

  // v2 after v1, as imports into one hub: its chunks are all known.
  auto both = MeasureImportFloor({(root_ / "v1").string(), (root_ / "v2").string()}, codec);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->files, 4u);
  EXPECT_EQ(both->chunks, one->chunks + chunks_of_a);
  EXPECT_EQ(both->new_chunks, one->new_chunks);
}

TEST_F(ImportFloorTest, CompressibleChunksAreMeasuredInStoredForm) {
  const std::string text = Text(2 << 20);
  Write(root_ / "t/shard.jsonl", text);
  chunk::ChunkCodecOptions codec;
  codec.zstd_level = 1;
  auto compressed = MeasureImportFloor({(root_ / "t").string()}, codec);
  ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
  EXPECT_LT(compressed->stored_bytes, text.size() / 4);

  codec.compress = false;
  auto raw = MeasureImportFloor({(root_ / "t").string()}, codec);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->stored_bytes, text.size() + raw->new_chunks * chunk::kChunkHeaderSize);
}

TEST_F(ImportFloorTest, AMissingSourceIsAnErrorNamingIt) {
  auto r = MeasureImportFloor({(root_ / "nope").string()}, chunk::ChunkCodecOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("nope"), std::string::npos) << r.status().ToString();
}

TEST_F(ImportFloorTest, BadCodecOptionsAreRefused) {
  chunk::ChunkCodecOptions codec;
  codec.min_saving = 2;
  auto r = MeasureImportFloor({root_.string()}, codec);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geofs::bench
