#include "latency_histogram.h"

#include <gtest/gtest.h>

namespace geofs::bench {
namespace {

TEST(LatencyHistogramTest, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.mean_ns(), 0.0);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 100; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.0), 0u);
  EXPECT_EQ(h.Percentile(0.5), 49u);
  EXPECT_EQ(h.Percentile(0.99), 98u);
  EXPECT_EQ(h.Percentile(1.0), 99u);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 49.5);
}

TEST(LatencyHistogramTest, LargeValuesWithinOneSixtyFourth) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 1'000'000; ++v) h.Record(v * 1000);  // 1 us .. 1 s
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double truth = q * 1'000'000 * 1000;
    const double got = static_cast<double>(h.Percentile(q));
    EXPECT_GE(got, truth * (1 - 1e-6)) << q;
    EXPECT_LE(got, truth * (1 + 1.0 / 64)) << q;
  }
  EXPECT_EQ(h.Percentile(1.0), 1'000'000'000u);
  EXPECT_EQ(h.max_ns(), 1'000'000'000u);
}

TEST(LatencyHistogramTest, BucketBoundariesAreContiguous) {
  // Every value must land in a bucket whose upper bound is >= the value and
  // whose neighbour below ends before it.
  LatencyHistogram h;
  for (uint64_t v : {127u, 128u, 129u, 255u, 256u, 257u, 511u, 512u}) {
    LatencyHistogram one;
    one.Record(v);
    EXPECT_GE(one.Percentile(1.0), v);
    EXPECT_LE(one.Percentile(0.5), v + v / 64) << v;
  }
}

TEST(LatencyHistogramTest, HugeValuesAreClamped) {
  LatencyHistogram h;
  h.Record(~uint64_t{0});
  EXPECT_EQ(h.count(), 1u);
  EXPECT_LE(h.Percentile(1.0), ~uint64_t{0});
  EXPECT_GE(h.Percentile(1.0), LatencyHistogram::kMaxTrackableNs / 2);
}

TEST(LatencyHistogramTest, MergeAddsCountsAndKeepsMax) {
  LatencyHistogram a, b;
  for (int i = 0; i < 10; ++i) a.Record(10);
  for (int i = 0; i < 30; ++i) b.Record(5000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 40u);
  EXPECT_EQ(a.Percentile(0.25), 10u);
  EXPECT_GE(a.Percentile(0.26), 5000u);
  EXPECT_EQ(a.max_ns(), 5000u);
  a.Clear();
  EXPECT_EQ(a.count(), 0u);
}

}  // namespace
}  // namespace geofs::bench
