#include "rpc/record.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "tools/rpc_client.h"

namespace geofs::rpc {
namespace {

using testing::FrameRecord;

constexpr size_t kMax = 1 << 20;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed = 1) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

std::vector<uint8_t> Bytes(const Record& r) { return {r.bytes.begin(), r.bytes.end()}; }

std::vector<uint8_t> Mark(uint32_t mark) {
  return {static_cast<uint8_t>(mark >> 24), static_cast<uint8_t>(mark >> 16),
          static_cast<uint8_t>(mark >> 8), static_cast<uint8_t>(mark)};
}

TEST(SingleFragmentMarkTest, SetsTheLastFragmentBit) {
  EXPECT_EQ(SingleFragmentMark(0x1234), (std::array<uint8_t, 4>{0x80, 0x00, 0x12, 0x34}));
}

TEST(RecordReaderTest, YieldsEverySingleFragmentRecordFromOneRead) {
  RecordReader reader(kMax);
  std::vector<uint8_t> stream;
  std::vector<std::vector<uint8_t>> sent;
  for (size_t len : {0, 1, 4, 100, 3000}) {
    sent.push_back(Pattern(len, static_cast<uint8_t>(len)));
    auto framed = FrameRecord(sent.back());
    stream.insert(stream.end(), framed.begin(), framed.end());
  }
  std::vector<Record> out;
  ASSERT_TRUE(reader.Feed(stream, &out).ok());
  ASSERT_EQ(out.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(Bytes(out[i]), sent[i]) << i;
  EXPECT_TRUE(reader.AtRecordBoundary());
}

TEST(RecordReaderTest, ReassemblesMultiFragmentRecords) {
  RecordReader reader(kMax);
  std::vector<uint8_t> record = Pattern(100'000);
  std::vector<Record> out;
  for (size_t fragment : {1, 3, 1000, 40'000}) {
    ASSERT_TRUE(reader.Feed(FrameRecord(record, fragment), &out).ok()) << fragment;
    ASSERT_EQ(out.size(), 1u) << fragment;
    EXPECT_EQ(Bytes(out[0]), record) << fragment;
    out.clear();
  }
}

TEST(RecordReaderTest, AcceptsAnyByteSplitOfTheStream) {
  std::vector<uint8_t> a = Pattern(70'000, 3);
  std::vector<uint8_t> b = Pattern(17, 9);
  std::vector<uint8_t> stream = FrameRecord(a, 30'000);
  auto framed_b = FrameRecord(b);
  stream.insert(stream.end(), framed_b.begin(), framed_b.end());

  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    RecordReader reader(kMax, 4096);
    std::vector<Record> out;
    size_t pos = 0;
    while (pos < stream.size()) {
      size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % 9000);
      ASSERT_TRUE(reader.Feed({stream.data() + pos, n}, &out).ok());
      pos += n;
      if (pos < stream.size() && out.size() < 2) {
        EXPECT_FALSE(reader.AtRecordBoundary());
      }
    }
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(Bytes(out[0]), a);
    EXPECT_EQ(Bytes(out[1]), b);
    EXPECT_TRUE(reader.AtRecordBoundary());
  }
}

TEST(RecordReaderTest, ReadsTheBulkOfALargeFragmentInPlace) {
  RecordReader reader(kMax, 4096);
  std::vector<uint8_t> record = Pattern(200'000);
  std::vector<uint8_t> stream = FrameRecord(record);
  std::vector<Record> out;
  size_t pos = 0;
  bool saw_direct_target = false;
  while (pos < stream.size()) {
    std::span<uint8_t> target = reader.ReadTarget();
    ASSERT_FALSE(target.empty());
    if (target.size() > 4096) saw_direct_target = true;  // larger than staging
    size_t n = std::min(target.size(), stream.size() - pos);
    std::memcpy(target.data(), stream.data() + pos, n);
    reader.Commit(n);
    ASSERT_TRUE(reader.Take(SIZE_MAX, &out).ok());
    pos += n;
  }
  EXPECT_TRUE(saw_direct_target);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Bytes(out[0]), record);
}

TEST(RecordReaderTest, TakeStopsAtItsLimitAndKeepsTheRest) {
  RecordReader reader(kMax);
  std::vector<uint8_t> stream;
  for (uint8_t i = 0; i < 5; ++i) {
    auto framed = FrameRecord(std::vector<uint8_t>(8, i));
    stream.insert(stream.end(), framed.begin(), framed.end());
  }
  std::span<uint8_t> target = reader.ReadTarget();
  std::memcpy(target.data(), stream.data(), stream.size());
  reader.Commit(stream.size());
  std::vector<Record> out;
  ASSERT_TRUE(reader.Take(2, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(reader.AtRecordBoundary());
  ASSERT_TRUE(reader.Take(0, &out).ok());
  EXPECT_EQ(out.size(), 2u);
  ASSERT_TRUE(reader.Take(10, &out).ok());
  ASSERT_EQ(out.size(), 5u);
  for (uint8_t i = 0; i < 5; ++i) EXPECT_EQ(out[i].bytes[0], i);
  EXPECT_TRUE(reader.AtRecordBoundary());
}

TEST(RecordReaderTest, RecordsOwnTheirBytesAfterTheReaderMovesOn) {
  RecordReader reader(kMax, 64);
  std::vector<Record> out;
  ASSERT_TRUE(reader.Feed(FrameRecord(Pattern(40, 5)), &out).ok());
  ASSERT_TRUE(reader.Feed(FrameRecord(Pattern(40, 9)), &out).ok());  // reuses staging
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Bytes(out[0]), Pattern(40, 5));
  EXPECT_EQ(Bytes(out[1]), Pattern(40, 9));
}

TEST(RecordReaderTest, AcceptsARecordOfExactlyTheMaximum) {
  RecordReader reader(1000);
  std::vector<Record> out;
  ASSERT_TRUE(reader.Feed(FrameRecord(Pattern(1000), 300), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes.size(), 1000u);
}

TEST(RecordReaderTest, RejectsAFragmentOverTheMaximumAtItsMark) {
  RecordReader reader(1000);
  std::vector<Record> out;
  Status s = reader.Feed(Mark(0x80000000u | 1001), &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // Sticky: the stream cannot be resynchronised.
  EXPECT_FALSE(reader.Feed(FrameRecord(Pattern(10)), &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(RecordReaderTest, RejectsFragmentsThatTogetherExceedTheMaximum) {
  RecordReader reader(1000);
  std::vector<Record> out;
  std::vector<uint8_t> stream = Mark(600);  // not last
  auto body = Pattern(600);
  stream.insert(stream.end(), body.begin(), body.end());
  ASSERT_TRUE(reader.Feed(stream, &out).ok());
  EXPECT_FALSE(reader.Feed(Mark(0x80000000u | 401), &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(RecordReaderTest, RejectsAHugeClaimWithoutAllocatingForIt) {
  struct mallinfo2 before = mallinfo2();
  std::vector<Record> out;
  for (uint32_t mark : {0xFFFFFFFFu, 0x7FFFFFFFu}) {
    RecordReader r(kMax);
    EXPECT_FALSE(r.Feed(Mark(mark), &out).ok());
    struct mallinfo2 after = mallinfo2();
    // Nothing near the claimed size is held (the staging buffer is 64 KiB).
    EXPECT_LT(after.hblkhd + after.uordblks, before.hblkhd + before.uordblks + (4 << 20));
  }
}

TEST(RecordReaderTest, ManyTinyFragmentsCostLinearWork) {
  // 256 KiB in 1-byte fragments: quadratic regrowth would copy ~32 GiB.
  std::vector<uint8_t> record = Pattern(256 << 10);
  RecordReader reader(kMax);
  std::vector<Record> out;
  ASSERT_TRUE(reader.Feed(FrameRecord(record, 1), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Bytes(out[0]), record);
}

TEST(RecordReaderTest, EmptyRecordsAreYielded) {
  RecordReader reader(kMax);
  std::vector<Record> out;
  std::vector<uint8_t> stream = Mark(0);  // an empty non-last fragment
  auto last = Mark(0x80000000u);
  stream.insert(stream.end(), last.begin(), last.end());
  ASSERT_TRUE(reader.Feed(stream, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].bytes.empty());
}

}  // namespace
}  // namespace geofs::rpc
