#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

namespace geofs {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 and the usual check value.
  EXPECT_EQ(Crc32c(0, Bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(0, Bytes("123456789")), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(Crc32c(0, zeros), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(0, ones), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(0, {}), 0u);
}

TEST(Crc32cTest, HardwareMatchesPortableAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(4096 + 16);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t len : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4096}) {
      std::span<const uint8_t> s(data.data() + offset, len);
      ASSERT_EQ(Crc32c(0, s), Crc32cPortable(0, s)) << offset << " " << len;
    }
  }
}

TEST(Crc32cTest, LongInputsInInterleavedStreamsMatchPortable) {
  std::mt19937 rng(11);
  std::vector<uint8_t> data(64 * 1024 + 3 * 4096 + 16);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset : {0, 3}) {
    for (size_t len : {3 * 4096 - 1, 3 * 4096, 3 * 4096 + 5, 64 * 1024, 64 * 1024 + 3 * 4096}) {
      std::span<const uint8_t> s(data.data() + offset, len);
      ASSERT_EQ(Crc32c(0, s), Crc32cPortable(0, s)) << offset << " " << len;
      ASSERT_EQ(Crc32c(0x12345678, s), Crc32cPortable(0x12345678, s)) << offset << " " << len;
    }
  }
  // A flipped bit in each of the three streams of a group changes the value.
  std::span<uint8_t> block(data.data(), 64 * 1024);
  const uint32_t good = Crc32c(0, block);
  for (size_t at : {size_t{0}, size_t{4096 + 17}, size_t{2 * 4096 + 4095}, block.size() - 1}) {
    block[at] ^= 0x10;
    EXPECT_NE(Crc32c(0, block), good) << at;
    EXPECT_EQ(Crc32c(0, block), Crc32cPortable(0, block)) << at;
    block[at] ^= 0x10;
  }
}

TEST(Crc32cTest, ChainingEqualsOneShot) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  std::span<const uint8_t> all(data);
  uint32_t whole = Crc32c(0, all);
  for (size_t cut : {0, 1, 64, 5001, 9999}) {
    EXPECT_EQ(Crc32c(Crc32c(0, all.first(cut)), all.subspan(cut)), whole);
    EXPECT_EQ(Crc32cPortable(Crc32cPortable(0, all.first(cut)), all.subspan(cut)), whole);
  }
}

}  // namespace
}  // namespace geofs
