#include "xdr/xdr.h"

#include <gtest/gtest.h>

namespace geofs::xdr {
namespace {

TEST(XdrTest, RoundTripsScalarsStringsAndOpaques) {
  Encoder e;
  e.U32(7);
  e.I32(-2);
  e.U64(0x0102030405060708ull);
  e.Bool(true);
  e.String("abcde");
  const uint8_t fixed[3] = {9, 8, 7};
  e.FixedOpaque(fixed);
  std::vector<uint8_t> wire = e.Flatten();
  ASSERT_EQ(wire.size(), 4 + 4 + 8 + 4 + (4 + 8) + 4);

  Decoder d(wire);
  uint32_t u;
  int32_t i;
  uint64_t l;
  bool b;
  std::string_view s;
  std::span<const uint8_t> f;
  ASSERT_TRUE(d.U32(&u) && d.I32(&i) && d.U64(&l) && d.Bool(&b) && d.String(10, &s) &&
              d.FixedOpaque(3, &f));
  EXPECT_EQ(u, 7u);
  EXPECT_EQ(i, -2);
  EXPECT_EQ(l, 0x0102030405060708ull);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "abcde");
  EXPECT_EQ(f[2], 7);
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(XdrTest, RejectsLengthsOverTheLimitOrBeyondTheData) {
  Encoder e;
  e.U32(0xFFFFFFFF);  // a 4 GiB opaque length with nothing behind it
  auto wire = e.Flatten();
  Decoder d(wire);
  std::span<const uint8_t> out;
  EXPECT_FALSE(d.Opaque(SIZE_MAX, &out));
  EXPECT_FALSE(d.ok());

  Encoder e2;
  e2.String("toolong");
  auto wire2 = e2.Flatten();
  Decoder d2(wire2);
  std::string_view s;
  EXPECT_FALSE(d2.String(3, &s));
}

TEST(XdrTest, FailuresAreSticky) {
  const uint8_t two[2] = {0, 1};
  Decoder d(two);
  uint32_t v;
  EXPECT_FALSE(d.U32(&v));
  EXPECT_FALSE(d.ok());
  const uint8_t bad_bool[4] = {0, 0, 0, 2};
  Decoder d2(bad_bool);
  bool b;
  EXPECT_FALSE(d2.Bool(&b));
}

TEST(XdrTest, OpaqueRefIsGatheredWithoutCopyAndPadded) {
  Encoder e;
  e.U32(1);
  e.OpaqueRef(Buffer::CopyOf(std::string_view("hello")));
  e.U32(2);
  EXPECT_EQ(e.size(), 4 + 4 + 5 + 3 + 4u);
  int segments = 0;
  e.ForEachSegment([&](const auto&) { ++segments; });
  EXPECT_EQ(segments, 3);
  auto flat = e.Flatten();
  Decoder d(flat);
  uint32_t a, b;
  std::span<const uint8_t> data;
  ASSERT_TRUE(d.U32(&a) && d.Opaque(100, &data) && d.U32(&b));
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), "hello");
  EXPECT_EQ(b, 2u);
}

TEST(XdrTest, ReservedSlotsArePatched) {
  Encoder e;
  size_t slot = e.Reserve32();
  e.U32(5);
  e.Patch32(slot, 42);
  auto flat = e.Flatten();
  Decoder d(flat);
  uint32_t v;
  ASSERT_TRUE(d.U32(&v));
  EXPECT_EQ(v, 42u);
}

TEST(XdrTest, GrowsAcrossManyItemsAndMovesOutWhole) {
  Encoder e;
  e.ReserveInline(16);
  size_t slot = e.Reserve32();
  constexpr uint32_t kItems = 20000;  // far beyond the first allocation
  for (uint32_t i = 0; i < kItems; ++i) {
    e.U64(uint64_t{i} << 32 | i);
    e.String(i % 2 ? "odd" : "even!");
    if (i == kItems / 2) e.OpaqueRef(Buffer::CopyOf(std::string_view("middle")));
  }
  e.Patch32(slot, kItems);
  Encoder moved = std::move(e);
  EXPECT_EQ(e.size(), 0u) << "a moved-from encoder is empty";
  e.U32(7);
  EXPECT_EQ(e.Flatten().size(), 4u) << "and usable again";
  auto flat = moved.Flatten();
  EXPECT_EQ(flat.size(), moved.size());
  Decoder d(flat);
  uint32_t n;
  ASSERT_TRUE(d.U32(&n));
  ASSERT_EQ(n, kItems);
  for (uint32_t i = 0; i < kItems; ++i) {
    uint64_t v;
    std::string_view s;
    ASSERT_TRUE(d.U64(&v) && d.String(8, &s)) << i;
    EXPECT_EQ(v, uint64_t{i} << 32 | i);
    EXPECT_EQ(s, i % 2 ? "odd" : "even!");
    if (i == kItems / 2) {
      std::span<const uint8_t> mid;
      ASSERT_TRUE(d.Opaque(16, &mid));
      EXPECT_EQ(mid.size(), 6u);
    }
  }
  EXPECT_EQ(d.remaining(), 0u);
}

}  // namespace
}  // namespace geofs::xdr
