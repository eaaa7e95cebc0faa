#include "cache/eviction_policy.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace geofs::cache {
namespace {

using chunk::ChunkId;

constexpr uint64_t kChunk = 1000;

ChunkId Id(int i) {
  std::string s = "chunk " + std::to_string(i);
  return ChunkId::Of({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

// A cache of `capacity` same-size chunks driven the way the spoke drives
// ChunkCache: look up, and on a miss make room and insert.
class Simulator {
 public:
  explicit Simulator(int capacity) : capacity_(capacity), policy_(capacity * kChunk) {}

  bool Access(const ChunkId& id) {
    policy_.RecordAccess(id);
    if (resident_.count(id) != 0) {
      policy_.Touch(id);
      return true;
    }
    while (static_cast<int>(resident_.size()) >= capacity_) {
      auto victim = policy_.Victim(kChunk);
      if (!victim) return false;
      policy_.Remove(*victim);
      resident_.erase(*victim);
    }
    policy_.Insert(id, kChunk, false);
    resident_.insert(id);
    return false;
  }

  // Hit ratio of one pass over ids [first, first + n).
  double Pass(int first, int n) {
    int hits = 0;
    for (int i = first; i < first + n; ++i) hits += Access(Id(i));
    return static_cast<double>(hits) / n;
  }

  EvictionPolicy& policy() { return policy_; }
  bool Resident(const ChunkId& id) const { return resident_.count(id) != 0; }
  size_t size() const { return resident_.size(); }

 private:
  int capacity_;
  EvictionPolicy policy_;
  std::set<ChunkId> resident_;
};

TEST(EvictionPolicyTest, CyclicScanTwiceTheCacheKeepsHitting) {
  Simulator sim(100);
  EXPECT_EQ(sim.Pass(0, 200), 0.0);
  for (int pass = 2; pass <= 5; ++pass) {
    double ratio = sim.Pass(0, 200);
    EXPECT_GE(ratio, 0.30) << "pass " << pass;
  }
  EXPECT_EQ(sim.size(), 100u);
}

TEST(EvictionPolicyTest, HotSetSurvivesAOneTimeScan) {
  Simulator sim(100);
  for (int round = 0; round < 3; ++round) sim.Pass(0, 40);
  EXPECT_EQ(sim.Pass(0, 40), 1.0);
  EXPECT_EQ(sim.Pass(1000, 1000), 0.0);  // every scanned chunk is new
  EXPECT_EQ(sim.Pass(0, 40), 1.0);
}

TEST(EvictionPolicyTest, NewWorkingSetTakesOverOnceItIsReused) {
  Simulator sim(100);
  for (int round = 0; round < 3; ++round) sim.Pass(0, 100);
  // A new working set of the same size, used repeatedly, must eventually win
  // against the old one (whose popularity fades as the sketch ages).
  double last = 0;
  for (int round = 0; round < 40; ++round) last = sim.Pass(5000, 100);
  EXPECT_GE(last, 0.8);
}

TEST(EvictionPolicyTest, RecentlyInsertedChunksStayInTheWindow) {
  // Readahead stores chunks before they are read: the window (10% of the
  // capacity) keeps the latest ones even when they lose every admission test.
  Simulator sim(100);
  for (int round = 0; round < 2; ++round) sim.Pass(0, 100);
  sim.Pass(1000, 5);
  for (int i = 0; i < 5; ++i) {
    auto victim = sim.policy().Victim(kChunk);
    ASSERT_TRUE(victim.has_value());
    for (int j = 1000; j < 1005; ++j) EXPECT_NE(*victim, Id(j));
    sim.policy().Remove(*victim);
  }
  EXPECT_EQ(sim.Pass(1000, 5), 1.0);
}

TEST(EvictionPolicyTest, PinnedEntriesAreNeverVictims) {
  EvictionPolicy policy(4 * kChunk);
  for (int i = 0; i < 4; ++i) policy.Insert(Id(i), kChunk, /*pinned=*/i < 2);
  policy.SetPinned(Id(2), true);
  std::set<ChunkId> victims;
  while (auto v = policy.Victim(kChunk)) {
    victims.insert(*v);
    policy.Remove(*v);
  }
  EXPECT_EQ(victims, std::set<ChunkId>{Id(3)});
  policy.SetPinned(Id(0), false);
  auto v = policy.Victim(kChunk);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, Id(0));
}

TEST(EvictionPolicyTest, EmptyPolicyHasNoVictim) {
  EvictionPolicy policy(10 * kChunk);
  EXPECT_FALSE(policy.Victim(kChunk).has_value());
  policy.Insert(Id(1), kChunk, false);
  policy.Remove(Id(1));
  EXPECT_FALSE(policy.Contains(Id(1)));
  EXPECT_FALSE(policy.Victim(kChunk).has_value());
}

TEST(FrequencySketchTest, CountsAndAges) {
  FrequencySketch sketch(1000);
  for (int i = 0; i < 5; ++i) sketch.Increment(Id(1));
  sketch.Increment(Id(2));
  EXPECT_EQ(sketch.Estimate(Id(1)), 5u);
  EXPECT_EQ(sketch.Estimate(Id(2)), 1u);
  EXPECT_EQ(sketch.Estimate(Id(3)), 0u);
  for (int i = 0; i < 100; ++i) sketch.Increment(Id(1));
  EXPECT_EQ(sketch.Estimate(Id(1)), 15u);  // saturates
  // 10 x expected entries (at least 4096) samples halve every counter.
  for (int i = 0; i < 41000; ++i) sketch.Increment(Id(10 + i % 3000));
  EXPECT_LE(sketch.Estimate(Id(1)), 7u);
}

}  // namespace
}  // namespace geofs::cache
