#include "cache/block_crc.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cache/cache_file.h"
#include "common/crc32c.h"

namespace geofs::cache {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(BlockCrcTest, MatchesCrc32cForWholeAndPartialBlocks) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{kBlockSize - 1},
                      size_t{kBlockSize}}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      auto data = RandomBytes(size, seed);
      EXPECT_EQ(BlockCrc(data), Crc32c(0, data)) << "size " << size << " seed " << seed;
      EXPECT_EQ(BlockCrc(data), Crc32cPortable(0, data)) << "size " << size;
    }
  }
}

TEST(BlockCrcTest, MatchesAtUnalignedAddressesAndDetectsEveryThird) {
  auto data = RandomBytes(kBlockSize + 8, 9);
  for (size_t shift = 0; shift < 8; ++shift) {
    std::span<const uint8_t> block(data.data() + shift, kBlockSize);
    EXPECT_EQ(BlockCrc(block), Crc32c(0, block)) << "shift " << shift;
  }
  // A flipped bit in each of the three streams (start, middle, end) changes it.
  std::span<uint8_t> block(data.data(), kBlockSize);
  const uint32_t good = BlockCrc(block);
  for (size_t at : {size_t{0}, size_t{kBlockSize / 2}, size_t{kBlockSize - 1}}) {
    block[at] ^= 0x10;
    EXPECT_NE(BlockCrc(block), good) << "at " << at;
    EXPECT_EQ(BlockCrc(block), Crc32c(0, block)) << "at " << at;
    block[at] ^= 0x10;
  }
}

}  // namespace
}  // namespace geofs::cache
