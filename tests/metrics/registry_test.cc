#include "weft/metrics/registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/sanitizers.h"

namespace weft::metrics {
namespace {

TEST(MetricsRegistry, PrometheusTextExactly) {
  Registry registry;
  Family& requests = registry.counter("app_requests_total", "Requests \\ served\nby route.", {"route"});
  requests.counter({"/a"}).inc();
  requests.counter({"/b\"x\\y\nz"}).inc(3);
  Family& open = registry.gauge("app_open", "Open things.");
  Gauge g = open.gauge();
  g.add(5);
  g.dec();
  Family& latency = registry.histogram("app_latency_seconds", "Latency.", {"route"}, {0.1, 1});
  Histogram h = latency.histogram({"/a"});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(7);
  EXPECT_EQ(registry.scrape(Format::prometheus),
            "# HELP app_latency_seconds Latency.\n"
            "# TYPE app_latency_seconds histogram\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"0.1\"} 2\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"1.0\"} 3\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 4\n"
            "app_latency_seconds_sum{route=\"/a\"} 7.65\n"
            "app_latency_seconds_count{route=\"/a\"} 4\n"
            "# HELP app_open Open things.\n"
            "# TYPE app_open gauge\n"
            "app_open 4\n"
            "# HELP app_requests_total Requests \\\\ served\\nby route.\n"
            "# TYPE app_requests_total counter\n"
            "app_requests_total{route=\"/a\"} 1\n"
            "app_requests_total{route=\"/b\\\"x\\\\y\\nz\"} 3\n");
}

TEST(MetricsRegistry, OpenMetricsTextExactly) {
  Registry registry;
  registry.counter("app_requests", "Say \"hi\".", {"route"}).counter({"/a"}).inc(2);
  registry.gauge("app_temperature", "Degrees.").set_function({}, [] { return -1.5; });
  registry.histogram("app_size_bytes", "Sizes.", {}, {10}).histogram().observe(3);
  EXPECT_EQ(registry.scrape(Format::openmetrics),
            "# HELP app_requests Say \\\"hi\\\".\n"
            "# TYPE app_requests counter\n"
            "app_requests_total{route=\"/a\"} 2\n"
            "# HELP app_size_bytes Sizes.\n"
            "# TYPE app_size_bytes histogram\n"
            "app_size_bytes_bucket{le=\"10.0\"} 1\n"
            "app_size_bytes_bucket{le=\"+Inf\"} 1\n"
            "app_size_bytes_sum 3\n"
            "app_size_bytes_count 1\n"
            "# HELP app_temperature Degrees.\n"
            "# TYPE app_temperature gauge\n"
            "app_temperature -1.5\n"
            "# EOF\n");
}

TEST(MetricsRegistry, AcceptChoosesTheFormat) {
  EXPECT_EQ(format_for_accept("application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            Format::openmetrics);
  EXPECT_EQ(format_for_accept("text/plain"), Format::prometheus);
  EXPECT_EQ(format_for_accept(""), Format::prometheus);
  EXPECT_EQ(content_type(Format::prometheus), "text/plain; version=0.0.4; charset=utf-8");
}

TEST(MetricsRegistry, CardinalityCapFoldsIntoOverflowAndCountsDrops) {
  Registry registry(2);
  Family& f = registry.counter("app_hits", "Hits.", {"user"});
  f.counter({"a"}).inc();
  f.counter({"b"}).inc();
  f.counter({"c"}).inc(10);
  f.counter({"d"}).inc(100);
  f.counter({"a"}).inc();  // an existing label set is still its own series
  EXPECT_EQ(f.dropped_label_sets(), 2u);
  EXPECT_EQ(registry.scrape(),
            "# HELP app_hits_total Hits.\n"
            "# TYPE app_hits_total counter\n"
            "app_hits_total{user=\"__overflow__\"} 110\n"
            "app_hits_total{user=\"a\"} 2\n"
            "app_hits_total{user=\"b\"} 1\n"
            "# HELP weft_metrics_dropped_label_sets_total Label sets folded into a metric's __overflow__ series (the "
            "series cap was reached).\n"
            "# TYPE weft_metrics_dropped_label_sets_total counter\n"
            "weft_metrics_dropped_label_sets_total{metric=\"app_hits\"} 2\n");
}

TEST(MetricsRegistry, RejectsBadNamesAndMismatches) {
  Registry registry;
  EXPECT_THROW(registry.counter("1abc", "x"), std::invalid_argument);
  EXPECT_THROW(registry.counter("a-b", "x"), std::invalid_argument);
  EXPECT_THROW(registry.gauge("ok", "x", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(registry.histogram("h", "x", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(registry.histogram("h", "x", {}, {2, 1}), std::invalid_argument);
  Family& c = registry.counter("c", "x", {"a"});
  EXPECT_EQ(&registry.counter("c_total", "x", {"a"}), &c);
  EXPECT_THROW(registry.gauge("c", "x", {"a"}), std::invalid_argument);
  EXPECT_THROW(c.counter({"1", "2"}), std::logic_error);
  EXPECT_THROW(c.gauge({"1"}), std::logic_error);
}

// Writers on several threads, each through its own cells, while a scraper reads: every increment
// and observation is in the final sum, and TSan sees no race.
TEST(MetricsRegistry, AggregatesAcrossThreadsWhileScraped) {
#ifdef WEFT_TEST_SANITIZED
  constexpr int kPerThread = 2000;
#else
  constexpr int kPerThread = 20000;
#endif
  constexpr int kThreads = 4;
  Registry registry;
  Counter counter = registry.counter("app_n", "N.").counter();
  Gauge gauge = registry.gauge("app_g", "G.").gauge();
  Histogram histogram = registry.histogram("app_h", "H.", {}, {1}).histogram();
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load(std::memory_order_acquire)) (void)registry.scrape();
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.inc();
        gauge.add(2);
        gauge.dec();
        histogram.observe(i % 2 == 0 ? 0.5 : 2.0);
      }
    });
  }
  for (auto& w : writers) w.join();
  done.store(true, std::memory_order_release);
  scraper.join();
  const std::string text = registry.scrape();
  const int n = kThreads * kPerThread;
  EXPECT_NE(text.find("app_n_total " + std::to_string(n) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_g " + std::to_string(n) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_h_bucket{le=\"1.0\"} " + std::to_string(n / 2) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_h_count " + std::to_string(n) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_h_sum " + std::to_string(n / 2 * 5 / 2) + "\n"), std::string::npos) << text;
}

// A thread's slot, and the counts in its cells, pass to a later thread once it exits.
TEST(MetricsRegistry, CountsSurviveThreadsThatExit) {
  Registry registry;
  Counter counter = registry.counter("app_n", "N.").counter();
  for (int i = 0; i < 300; ++i) {  // more threads over time than there are slots
    std::thread([&] { counter.inc(); }).join();
  }
  EXPECT_EQ(registry.scrape(), "# HELP app_n_total N.\n# TYPE app_n_total counter\napp_n_total 300\n");
}

}  // namespace
}  // namespace weft::metrics

namespace weft::metrics {
namespace {

// A histogram whose counts are read when scraped: its buckets come out cumulative, with its sum and
// count; it goes with remove_function(); it is refused on a family that is not a histogram.
TEST(MetricsRegistry, HistogramFunctionSeriesExactly) {
  Registry registry;
  Family& delay = registry.histogram("app_delay_seconds", "Delay.", {"loop"}, {0.1, 1});
  delay.set_histogram_function({"l0"}, [] { return HistogramValue{{2, 1, 3}, 4.5}; });
  EXPECT_EQ(registry.scrape(),
            "# HELP app_delay_seconds Delay.\n"
            "# TYPE app_delay_seconds histogram\n"
            "app_delay_seconds_bucket{loop=\"l0\",le=\"0.1\"} 2\n"
            "app_delay_seconds_bucket{loop=\"l0\",le=\"1.0\"} 3\n"
            "app_delay_seconds_bucket{loop=\"l0\",le=\"+Inf\"} 6\n"
            "app_delay_seconds_sum{loop=\"l0\"} 4.5\n"
            "app_delay_seconds_count{loop=\"l0\"} 6\n");
  delay.remove_function({"l0"});
  EXPECT_EQ(registry.scrape(), "");
  EXPECT_THROW(registry.gauge("app_g", "G.").set_histogram_function({}, [] { return HistogramValue{}; }),
               std::logic_error);
}

}  // namespace
}  // namespace weft::metrics
