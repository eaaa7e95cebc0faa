#include "common/byte_size.h"

#include <gtest/gtest.h>

namespace geofs {
namespace {

TEST(ParseByteSizeTest, UnitsArePowersOf1024) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("512K"), 512u << 10);
  EXPECT_EQ(*ParseByteSize("10M"), 10u << 20);
  EXPECT_EQ(*ParseByteSize("20G"), 20ull << 30);
  EXPECT_EQ(*ParseByteSize("1TiB"), 1ull << 40);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("G").ok());
  EXPECT_FALSE(ParseByteSize("10X").ok());
  EXPECT_FALSE(ParseByteSize("99999999999T").ok());
}

}  // namespace
}  // namespace geofs
