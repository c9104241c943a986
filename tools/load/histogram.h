#pragma once
// A log-linear latency histogram in the manner of HdrHistogram: values are kept with 3 significant
// decimal digits (relative error below 1/1024) from 1 to kHighest, in fixed memory (about 280 KiB).
// Values above kHighest are clamped to it. Not thread-safe: one histogram per thread, merged at the end.

#include <cstdint>
#include <vector>

namespace weft::load {

class Histogram {
 public:
  static constexpr std::uint64_t kHighest = std::uint64_t{1} << 43;  // ~2.4 hours in nanoseconds

  Histogram();

  // Adds `count` samples of `value` (0 counts as 1's bucket; above kHighest clamps).
  void record(std::uint64_t value, std::uint64_t count = 1) noexcept;
  // Adds every sample of `other`.
  void merge(const Histogram& other) noexcept;
  void reset() noexcept;

  std::uint64_t count() const noexcept { return total_; }
  // Exact largest and smallest recorded values (0 when empty).
  std::uint64_t max() const noexcept { return max_; }
  std::uint64_t min() const noexcept { return total_ == 0 ? 0 : min_; }
  // Exact mean of the recorded values (0 when empty).
  double mean() const noexcept { return total_ == 0 ? 0.0 : sum_ / static_cast<double>(total_); }
  // The value at `percentile` (0..100]: the highest value equivalent (within the precision) to the
  // sample of rank ceil(percentile/100 * count), never above max(). 0 when empty.
  std::uint64_t value_at_percentile(double percentile) const noexcept;
  // The rank of the sample at `percentile` among `count`: ceil(percentile/100 * count), at least 1,
  // computed so that exact percentiles stay exact (99.9% of 1,000 is rank 999, not 1,000).
  static std::uint64_t rank_at(double percentile, std::uint64_t count) noexcept;

 private:
  static constexpr int kSubBucketHalfMagnitude = 10;  // 2048 sub-buckets: 3 significant digits
  static constexpr std::uint64_t kSubBucketCount = std::uint64_t{1} << (kSubBucketHalfMagnitude + 1);
  static constexpr std::uint64_t kSubBucketHalfCount = kSubBucketCount / 2;

  static std::size_t index_of(std::uint64_t value) noexcept;
  static std::uint64_t highest_equivalent(std::size_t index) noexcept;

  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  double sum_ = 0;  // exact enough for a mean: 53 bits
};

}  // namespace weft::load
