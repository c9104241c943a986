#include "histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace weft::load {

namespace {

// Bucket b holds values [2^(b+10), 2^(b+11)) in steps of 2^b; bucket 0 also holds [0, 2^10).
int bucket_of(std::uint64_t value, std::uint64_t sub_bucket_mask) noexcept {
  return 63 - std::countl_zero(value | sub_bucket_mask) - 10;
}

}  // namespace

Histogram::Histogram() : counts_(index_of(kHighest) + 1, 0) {}

std::size_t Histogram::index_of(std::uint64_t value) noexcept {
  const int bucket = bucket_of(value, kSubBucketCount - 1);
  const std::uint64_t sub = value >> bucket;  // in [1024, 2048) for bucket > 0, [0, 2048) for bucket 0
  return (static_cast<std::size_t>(bucket + 1) << kSubBucketHalfMagnitude) + (sub - kSubBucketHalfCount);
}

std::uint64_t Histogram::highest_equivalent(std::size_t index) noexcept {
  std::size_t bucket = (index >> kSubBucketHalfMagnitude);
  std::uint64_t sub = (index & (kSubBucketHalfCount - 1)) + kSubBucketHalfCount;
  if (bucket == 0) {  // the lower half of bucket 0: exact values 0..1023
    return index;
  }
  bucket -= 1;
  const std::uint64_t lowest = sub << bucket;
  return lowest + (std::uint64_t{1} << bucket) - 1;
}

void Histogram::record(std::uint64_t value, std::uint64_t count) noexcept {
  value = std::min(value, kHighest);
  counts_[index_of(value)] += count;
  total_ += count;
  sum_ += static_cast<double>(value) * static_cast<double>(count);
  max_ = std::max(max_, value);
  min_ = std::min(min_, value);
}

void Histogram::merge(const Histogram& other) noexcept {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

void Histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  sum_ = 0;
  max_ = 0;
  min_ = UINT64_MAX;
}

std::uint64_t Histogram::rank_at(double percentile, std::uint64_t count) noexcept {
  percentile = std::clamp(percentile, 0.0, 100.0);
  // Multiplied before divided: 99.9 / 100 is a hair above 0.999 in binary, and 1,000 times it would
  // round up to rank 1,000.
  const auto rank = static_cast<std::uint64_t>(std::ceil(percentile * static_cast<double>(count) / 100.0));
  return std::clamp<std::uint64_t>(rank, 1, std::max<std::uint64_t>(count, 1));
}

std::uint64_t Histogram::value_at_percentile(double percentile) const noexcept {
  if (total_ == 0) return 0;
  const std::uint64_t rank = rank_at(percentile, total_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(highest_equivalent(i), max_);
  }
  return max_;
}

}  // namespace weft::load
