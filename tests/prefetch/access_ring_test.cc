#include "prefetch/access_ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace geofs::prefetch {
namespace {

AccessEvent ReadOf(uint64_t ino, uint64_t offset) {
  AccessEvent e;
  e.op = AccessOp::kRead;
  e.file = {ino, 1};
  e.offset = offset;
  e.length = 4096;
  return e;
}

TEST(AccessRingTest, DrainsInOrderOnce) {
  AccessRing ring(8);
  for (uint64_t i = 0; i < 5; ++i) ring.Record(ReadOf(7, i * 4096));
  std::vector<AccessEvent> got;
  EXPECT_EQ(ring.Drain(&got), 5u);
  ASSERT_EQ(got.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(got[i].offset, i * 4096);
  got.clear();
  EXPECT_EQ(ring.Drain(&got), 0u);
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(AccessRingTest, AReaderLappedLosesTheOldestAndCountsThem) {
  AccessRing ring(8);
  for (uint64_t i = 0; i < 20; ++i) ring.Record(ReadOf(7, i));
  std::vector<AccessEvent> got;
  ring.Drain(&got);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got.front().offset, 12u);  // the newest eight
  EXPECT_EQ(got.back().offset, 19u);
  EXPECT_EQ(ring.dropped(), 12u);
}

TEST(AccessRingTest, ManyWritersNoEventLostOrTorn) {
  AccessRing ring(1 << 16);
  constexpr int kThreads = 4, kEach = 10000;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        AccessEvent e = ReadOf(static_cast<uint64_t>(t + 1), static_cast<uint64_t>(i));
        e.length = static_cast<uint32_t>(i);  // offset == length: a torn copy would differ
        ring.Record(e);
      }
    });
  }
  std::vector<AccessEvent> got;
  while (got.size() < static_cast<size_t>(kThreads * kEach)) {
    ring.Drain(&got);
    if (ring.recorded() == static_cast<uint64_t>(kThreads * kEach) && ring.Drain(&got) == 0 &&
        got.size() + ring.dropped() >= static_cast<size_t>(kThreads * kEach)) {
      break;
    }
  }
  for (std::thread& w : writers) w.join();
  ring.Drain(&got);
  EXPECT_EQ(got.size(), static_cast<size_t>(kThreads * kEach));
  std::vector<int> next(kThreads + 1, 0);
  for (const AccessEvent& e : got) {
    ASSERT_EQ(e.offset, e.length);
    // Each writer's events come out in its own order.
    EXPECT_EQ(e.offset, static_cast<uint64_t>(next[e.file.ino]++));
  }
}

}  // namespace
}  // namespace geofs::prefetch
