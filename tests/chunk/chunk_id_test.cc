#include "chunk/chunk_id.h"

#include <gtest/gtest.h>

#include <string_view>
#include <unordered_set>

namespace geofs::chunk {
namespace {

std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(ChunkIdTest, IsTheSha256OfTheBytes) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(ChunkId::Of(AsBytes("abc")).ToHex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ChunkId::Of({}).ToHex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(
      ChunkId::Of(AsBytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).ToHex(),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ChunkIdTest, HexRoundTripsAndRejectsGarbage) {
  ChunkId id = ChunkId::Of(AsBytes("hello"));
  auto back = ChunkId::FromHex(id.ToHex());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  std::string upper = id.ToHex();
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(*ChunkId::FromHex(upper), id);
  EXPECT_FALSE(ChunkId::FromHex("").ok());
  EXPECT_FALSE(ChunkId::FromHex(id.ToHex().substr(1)).ok());
  EXPECT_FALSE(ChunkId::FromHex(id.ToHex() + "0").ok());
  EXPECT_FALSE(ChunkId::FromHex(std::string(63, '0') + "g").ok());

  auto from_bytes = ChunkId::FromBytes(id.bytes());
  ASSERT_TRUE(from_bytes.ok());
  EXPECT_EQ(*from_bytes, id);
  EXPECT_EQ(ChunkId::FromBytes(id.bytes().first(31)).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChunkIdTest, ObjectKeysFanOutByTheFirstByte) {
  ChunkId id = ChunkId::Of(AsBytes("abc"));
  EXPECT_EQ(id.ObjectKey(),
            "chunks/ba/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto back = ChunkId::FromObjectKey(id.ObjectKey());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  std::string hex = id.ToHex();
  for (std::string bad :
       {"chunks/bb/" + hex, "chunk/ba/" + hex, "chunks/ba" + hex, "chunks/ba/" + hex + "x",
        "chunks/ba/" + hex.substr(2), std::string("chunks/")}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ChunkId::FromObjectKey(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ChunkIdTest, OrdersAndHashes) {
  ChunkId a = ChunkId::Of(AsBytes("a"));
  ChunkId b = ChunkId::Of(AsBytes("b"));
  EXPECT_NE(a, b);
  EXPECT_EQ(a < b, a.ToHex() < b.ToHex());
  std::unordered_set<ChunkId, ChunkIdHash> set{a, b, a};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(ChunkId().ToHex(), std::string(64, '0'));
}

}  // namespace
}  // namespace geofs::chunk
