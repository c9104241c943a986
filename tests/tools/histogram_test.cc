#include "histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "report.h"

namespace weft::load {
namespace {

// The sample of rank ceil(p/100 * n), the definition the histogram approximates.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double p) {
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()) / 100.0));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// 3 significant digits: the reported value is the top of the exact value's bucket, never below it
// and at most 1/1024 of it above.
void expect_within_precision(std::uint64_t reported, std::uint64_t exact, double p) {
  EXPECT_GE(reported, exact) << "p" << p;
  EXPECT_LE(static_cast<double>(reported - exact), static_cast<double>(exact) / 1000.0) << "p" << p << " exact " << exact;
}

TEST(HistogramTest, PercentilesOfRandomLatenciesMatchExactOnesWithinThreeDigits) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency_ns(std::log(200'000.0), 1.2);  // median 200 us, long tail
  std::vector<std::uint64_t> samples(200'000);
  Histogram h;
  for (auto& s : samples) {
    s = static_cast<std::uint64_t>(latency_ns(rng)) + 1;
    h.record(s);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    expect_within_precision(h.value_at_percentile(p), exact_percentile(samples, p), p);
  }
  EXPECT_EQ(h.count(), samples.size());
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_EQ(h.min(), samples.front());
  double sum = 0;
  for (auto s : samples) sum += static_cast<double>(s);
  EXPECT_NEAR(h.mean(), sum / static_cast<double>(samples.size()), 1e-6 * h.mean());
}

TEST(HistogramTest, UniformValuesOverManyMagnitudesStayWithinPrecision) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> samples;
  Histogram h;
  for (int magnitude = 0; magnitude < 40; ++magnitude) {
    std::uniform_int_distribution<std::uint64_t> d(std::uint64_t{1} << magnitude, (std::uint64_t{2} << magnitude) - 1);
    for (int i = 0; i < 500; ++i) {
      samples.push_back(d(rng));
      h.record(samples.back());
    }
  }
  std::sort(samples.begin(), samples.end());
  for (double p = 0.5; p <= 100.0; p += 0.5) expect_within_precision(h.value_at_percentile(p), exact_percentile(samples, p), p);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (std::uint64_t v = 0; v < 2048; ++v) h.record(v);
  for (std::uint64_t v = 1; v <= 2048; ++v) {
    EXPECT_EQ(h.value_at_percentile(100.0 * static_cast<double>(v) / 2048.0), v - 1);
  }
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::uint64_t> d(1, 50'000'000);
  Histogram a, b, all;
  for (int i = 0; i < 10'000; ++i) {
    const auto v = d(rng);
    (i % 3 == 0 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_EQ(a.min(), all.min());
  for (double p : {50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.value_at_percentile(p), all.value_at_percentile(p));
}

TEST(HistogramTest, EmptyReportsZerosAndHugeValuesClamp) {
  Histogram h;
  EXPECT_EQ(h.value_at_percentile(99), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  h.record(UINT64_MAX);
  EXPECT_EQ(h.max(), Histogram::kHighest);
  EXPECT_EQ(h.value_at_percentile(50), Histogram::kHighest);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
}

}  // namespace
}  // namespace weft::load

namespace weft::load {
namespace {

// 1..1000 µs, one sample each: each line's value is the sample of its rank, the rank is printed beside it.
TEST(LatencyReportTest, TheDistributionListsEachPercentileWithItsRank) {
  Histogram h;
  for (std::uint64_t us = 1; us <= 1000; ++us) h.record(us * 1000);
  const std::string text = latency_distribution_text(h);
  // Values are the top of their sample's bucket (3 significant digits: within 1/1024 above).
  EXPECT_NE(text.find("     50.000%    500.22us           500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("     99.900%    999.42us           999\n"), std::string::npos) << text;
  EXPECT_EQ(h.value_at_percentile(99.9), 999423u);  // the 999th sample's bucket, not the 1,000th
  EXPECT_NE(text.find("    100.000%      1.00ms          1000\n"), std::string::npos) << text;
  EXPECT_EQ(connect_text(Histogram()), "");
}

}  // namespace
}  // namespace weft::load
