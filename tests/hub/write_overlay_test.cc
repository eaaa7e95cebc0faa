#include "hub/write_overlay.h"

#include <gtest/gtest.h>

#include <string>

namespace geofs::hub {
namespace {

std::string Read(const WriteOverlay& o, uint64_t offset, size_t n, char fill = '.') {
  std::string out(n, fill);
  o.ApplyTo(offset, {reinterpret_cast<uint8_t*>(out.data()), out.size()});
  return out;
}

TEST(WriteOverlayTest, NewerWritesReplaceOlderBytes) {
  WriteOverlay o;
  EXPECT_EQ(o.Write(2, Buffer::CopyOf("aaaa")), 1u);
  EXPECT_EQ(o.Write(4, Buffer::CopyOf("bbbb")), 2u);
  EXPECT_EQ(o.Write(0, Buffer::CopyOf("c")), 3u);
  EXPECT_EQ(Read(o, 0, 10), "c.aabbbb..");
  EXPECT_EQ(o.bytes(), 7u);
  EXPECT_EQ(o.end(), 8u);
  EXPECT_EQ(o.last_seq(), 3u);
  // Runs merge adjacent pieces whatever write they came from.
  EXPECT_EQ(o.Runs(), (std::vector<WriteOverlay::Range>{{0, 1}, {2, 8}}));
}

TEST(WriteOverlayTest, WriteInsideAPieceSplitsIt) {
  WriteOverlay o;
  o.Write(0, Buffer::CopyOf("0123456789"));
  o.Write(3, Buffer::CopyOf("xy"));
  EXPECT_EQ(Read(o, 0, 10), "012xy56789");
  EXPECT_EQ(o.bytes(), 10u);
  auto pieces = o.Pieces(2, 6);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].offset, 2u);
  EXPECT_EQ(pieces[0].data.view(), "2");
  EXPECT_EQ(pieces[1].data.view(), "xy");
  EXPECT_EQ(pieces[1].seq, 2u);
  EXPECT_EQ(pieces[2].data.view(), "5");
}

TEST(WriteOverlayTest, ReleaseKeepsNewerWritesAndBytesOutsideTheRange) {
  WriteOverlay o;
  o.Write(0, Buffer::CopyOf("aaaaaaaaaa"));  // seq 1, flushed below
  o.Write(4, Buffer::CopyOf("bb"));          // seq 2, arrived during the flush
  o.Release(2, 8, /*max_seq=*/1);
  EXPECT_EQ(Read(o, 0, 10), "aa..bb..aa");
  EXPECT_EQ(o.bytes(), 6u);
  o.Release(0, 100, 2);
  EXPECT_TRUE(o.empty());
  EXPECT_EQ(o.bytes(), 0u);
  EXPECT_EQ(o.end(), 0u);
}

TEST(WriteOverlayTest, EmptyWriteHoldsNothing) {
  WriteOverlay o;
  o.Write(100, Buffer());
  EXPECT_TRUE(o.empty());
  EXPECT_TRUE(o.Runs().empty());
}

}  // namespace
}  // namespace geofs::hub
