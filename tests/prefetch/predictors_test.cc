#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "prefetch/sequential_predictor.h"
#include "prefetch/tree_predictor.h"

namespace geofs::prefetch {
namespace {

constexpr uint64_t kMiB = 1 << 20;

AccessEvent Read(uint64_t ino, uint64_t offset, uint32_t length, int64_t t = 0) {
  AccessEvent e;
  e.op = AccessOp::kRead;
  e.file = {ino, 1};
  e.offset = offset;
  e.length = length;
  e.time_ns = t;
  return e;
}

AccessEvent Lookup(uint64_t dir, uint64_t child, bool is_dir, int64_t t) {
  AccessEvent e;
  e.op = AccessOp::kLookup;
  e.parent = {dir, 1};
  e.file = {child, 1};
  e.is_dir = is_dir;
  e.time_ns = t;
  return e;
}

// The furthest byte predicted for file `ino`.
uint64_t PredictedTo(const std::vector<Want>& wants, uint64_t ino) {
  uint64_t to = 0;
  for (const Want& w : wants) {
    if (w.kind == WantKind::kFileRange && w.target.ino == ino) {
      to = std::max(to, w.offset + w.length);
    }
  }
  return to;
}

TEST(SequentialPredictorTest, AStreamGetsAWindowThatGrows) {
  SequentialPredictor p;
  std::vector<Want> wants;
  p.Observe(Read(5, 0, kMiB), &wants);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].offset, kMiB);
  EXPECT_EQ(wants[0].length, kMiB);  // the initial window
  for (uint64_t off = kMiB; off < 64 * kMiB; off += kMiB) p.Observe(Read(5, off, kMiB), &wants);
  // By 64 MiB read the window has reached its cap: 64 MiB past the reader.
  EXPECT_GE(PredictedTo(wants, 5), 64 * kMiB + 32 * kMiB);
  // Never the same bytes twice.
  std::sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < wants.size(); ++i) {
    EXPECT_GE(wants[i].offset, wants[i - 1].offset + wants[i - 1].length);
  }
}

TEST(SequentialPredictorTest, InterleavedConnectionsStillCountAsOneStream) {
  // 4 connections x 8 READs of 1 MiB in flight: READs arrive shuffled
  // within a window of 32 MiB.
  SequentialPredictor p;
  std::vector<Want> wants;
  std::mt19937 rng(1);
  for (uint64_t base = 0; base < 256 * kMiB; base += 32 * kMiB) {
    std::vector<uint64_t> blocks(32);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (uint64_t b : blocks) p.Observe(Read(9, base + b * kMiB, kMiB), &wants);
  }
  EXPECT_GE(PredictedTo(wants, 9), 256 * kMiB + 32 * kMiB);
}

TEST(SequentialPredictorTest, RandomReadsPredictNothing) {
  SequentialPredictor p;
  std::vector<Want> wants;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 1000; ++i) {
    p.Observe(Read(3, (rng() % 100000) * 10 * kMiB + 4096, 4096), &wants);
  }
  EXPECT_LT(wants.size(), 20u);  // a chance neighbour now and then
}

TEST(SequentialPredictorTest, TwoReadersOfOneFileKeepTheirOwnStreams) {
  SequentialPredictor p;
  std::vector<Want> wants;
  const uint64_t far = 10ull << 30;
  for (uint64_t off = 0; off < 16 * kMiB; off += kMiB) {
    p.Observe(Read(4, off, kMiB), &wants);
    p.Observe(Read(4, far + off, kMiB), &wants);
  }
  bool near_stream = false, far_stream = false;
  for (const Want& w : wants) {
    near_stream |= w.offset >= 16 * kMiB && w.offset < far;
    far_stream |= w.offset >= far + 16 * kMiB;
  }
  EXPECT_TRUE(near_stream);
  EXPECT_TRUE(far_stream);
}

TEST(TreePredictorTest, ThreeFilesOfADirectoryAskForTheDirectory) {
  TreePredictor p;
  std::vector<Want> wants;
  p.Observe(Lookup(100, 1, false, 0), &wants);
  p.Observe(Lookup(100, 2, false, 1), &wants);
  EXPECT_TRUE(wants.empty());
  p.Observe(Lookup(100, 1, false, 2), &wants);  // the same file again counts once
  EXPECT_TRUE(wants.empty());
  p.Observe(Lookup(100, 3, false, 3), &wants);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].kind, WantKind::kDirectory);
  EXPECT_EQ(wants[0].target.ino, 100u);
  // Not again within the same epoch.
  p.Observe(Lookup(100, 4, false, 4), &wants);
  EXPECT_EQ(wants.size(), 1u);
}

TEST(TreePredictorTest, SiblingDirectoriesAskForTheirParentsTree) {
  TreePredictor p;
  std::vector<Want> wants;
  // The job resolves the class directories first (as an image folder
  // loader does), then opens files across them.
  p.Observe(Lookup(1, 10, true, 0), &wants);
  p.Observe(Lookup(1, 11, true, 0), &wants);
  EXPECT_TRUE(wants.empty());
  int64_t t = 1;
  for (uint64_t f = 0; f < 3; ++f) p.Observe(Lookup(10, 1000 + f, false, t++), &wants);
  for (uint64_t f = 0; f < 3; ++f) p.Observe(Lookup(11, 2000 + f, false, t++), &wants);
  ASSERT_EQ(wants.size(), 3u);
  EXPECT_EQ(wants[0].kind, WantKind::kDirectory);
  EXPECT_EQ(wants[1].kind, WantKind::kDirectory);
  EXPECT_EQ(wants[2].kind, WantKind::kTree);
  EXPECT_EQ(wants[2].target.ino, 1u);
}

TEST(TreePredictorTest, FilesOpenedTooFarApartAreNotAnEpoch) {
  TreeOptions options;
  options.window_ns = 1000;
  TreePredictor p(options);
  std::vector<Want> wants;
  for (uint64_t f = 0; f < 10; ++f) {
    p.Observe(Lookup(100, f + 1, false, static_cast<int64_t>(f) * 5000), &wants);
  }
  EXPECT_TRUE(wants.empty());
}

TEST(TreePredictorTest, AListingCountsTowardTheDirectory) {
  TreePredictor p;
  std::vector<Want> wants;
  AccessEvent list;
  list.op = AccessOp::kReadDir;
  list.file = {100, 1};
  p.Observe(list, &wants);
  p.Observe(Lookup(100, 1, false, 1), &wants);
  EXPECT_TRUE(wants.empty());
  p.Observe(Lookup(100, 2, false, 2), &wants);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].kind, WantKind::kDirectory);
}

}  // namespace
}  // namespace geofs::prefetch
