// A fixed-size log-linear latency histogram (HdrHistogram-style).
//
// Values below 128 ns are kept exactly; above that each power-of-two range is
// split into 64 equal buckets, so a reported percentile is at most 1/64
// (about 1.6%) above the true value. Values beyond kMaxTrackableNs are clamped.
#pragma once

#include <array>
#include <cstdint>

namespace geofs::bench {

// Not thread-safe: each load thread owns one and they are merged afterwards.
class LatencyHistogram {
 public:
  static constexpr uint64_t kMaxTrackableNs = uint64_t{1} << 37;  // ~137 s

  void Record(uint64_t ns);
  void Merge(const LatencyHistogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_) / count_; }

  // The smallest recorded bucket bound v such that a fraction >= q of the
  // samples are <= v. REQUIRES: 0 <= q <= 1. Returns 0 when empty.
  uint64_t Percentile(double q) const;

 private:
  static constexpr int kSubBucketBits = 6;                    // 64 buckets per octave
  static constexpr int kLinearLimit = 2 << kSubBucketBits;    // 128: exact below this
  static constexpr int kOctaves = 37 - (kSubBucketBits + 1);  // octaves up to 2^37
  static constexpr int kBuckets = kLinearLimit + kOctaves * (1 << kSubBucketBits);

  static int BucketOf(uint64_t ns);
  static uint64_t UpperBoundOf(int bucket);

  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ns_ = 0;
  uint64_t max_ns_ = 0;
};

}  // namespace geofs::bench
