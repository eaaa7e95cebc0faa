#include "latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace geofs::bench {

int LatencyHistogram::BucketOf(uint64_t ns) {
  ns = std::min(ns, kMaxTrackableNs - 1);
  if (ns < kLinearLimit) return static_cast<int>(ns);
  const int msb = std::bit_width(ns) - 1;  // >= kSubBucketBits + 1
  const int shift = msb - kSubBucketBits;  // >= 1
  const int sub = static_cast<int>(ns >> shift) - (1 << kSubBucketBits);
  return kLinearLimit + (shift - 1) * (1 << kSubBucketBits) + sub;
}

uint64_t LatencyHistogram::UpperBoundOf(int bucket) {
  if (bucket < kLinearLimit) return static_cast<uint64_t>(bucket);
  const int k = bucket - kLinearLimit;
  const int shift = k / (1 << kSubBucketBits) + 1;
  const uint64_t sub = static_cast<uint64_t>(k % (1 << kSubBucketBits));
  const uint64_t lower = ((uint64_t{1} << kSubBucketBits) + sub) << shift;
  return lower + (uint64_t{1} << shift) - 1;
}

void LatencyHistogram::Record(uint64_t ns) {
  ++counts_[BucketOf(ns)];
  ++count_;
  sum_ns_ += ns;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

void LatencyHistogram::Clear() { *this = LatencyHistogram(); }

uint64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  // Rank of the sample that the percentile names, 1-based.
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * count_)));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(UpperBoundOf(i), max_ns_);
  }
  return max_ns_;
}

}  // namespace geofs::bench
