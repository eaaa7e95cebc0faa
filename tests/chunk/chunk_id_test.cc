#include "chunk/chunk_id.h"

#include <gtest/gtest.h>

#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

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

TEST(ChunkIdTest, HashesLongInputsAcrossItsStepsLikeOneDigest) {
  // FIPS 180-2's long vector: a million 'a's, far past the few-KiB steps
  // ChunkId::Of hashes in, ending mid-step.
  const std::string million(1000000, 'a');
  EXPECT_EQ(ChunkId::Of(AsBytes(million)).ToHex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths on either side of step boundaries (digests from Python's
  // hashlib over the same bytes).
  const std::pair<size_t, std::string_view> expected[] = {
      {4095, "c1057ef5f1dfcc2594e10d571b499e61188bf7e156a815ffc66cd4dea1f003f2"},
      {4096, "edc9983a5f8a590052203d12c58e8d367f7c694a8746b7b9ef87bcc8f5af9e9f"},
      {4097, "265eb02ffd0a68c82b2c2280e8dbb61681034b21c3386c29cc046215d0fd0fa4"},
      {8191, "087015040fbd5471993bf57ec8e2e21dd7fe9d1f04f1c8e9d2e515e40a225fbb"},
      {8192, "dd249668926165f61677420f82a9c14ba1ffefeaf4387861f275a13c6aa7491e"},
      {8193, "3238b82084e608e2314ee55f0ca8895ecc95225d14eb0a6ca22a4346f5540c34"},
      {12295, "84a11c3598c45c54dfb5cd7c0826dd2192ebcb70d73e6f0bb01a7a82af0afe5d"},
  };
  std::vector<uint8_t> bytes(12295);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  for (const auto& [n, hex] : expected) {
    EXPECT_EQ(ChunkId::Of(std::span(bytes).first(n)).ToHex(), hex) << n;
  }
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
