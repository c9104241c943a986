// A pooled allocator's arenas, bytes and thread-cache hits in a registry, read when scraped.
#include "weft/metrics/allocator_metrics.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/buffer/byte_buf.h"

namespace weft::metrics {
namespace {

double allocator_sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");  // a sample line, not the HELP line
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

// Bytes in use show while buffers live; a thread cache's hits and misses count, and stay counted
// once its thread has exited (the counters never go down); the series go with the AllocatorMetrics.
TEST(AllocatorMetrics, ReportsArenasBytesAndCacheHitsThatOnlyGoUp) {
  PooledAllocatorOptions options;
  options.arenas = 2;
  PooledByteBufAllocator allocator(options);
  Registry registry;
  {
    AllocatorMetrics metrics(allocator, registry);
    std::string text = registry.scrape();
    EXPECT_EQ(allocator_sample(text, "weft_allocator_arenas"), 2) << text;
    EXPECT_EQ(allocator_sample(text, "weft_allocator_used_bytes"), 0) << text;
    EXPECT_EQ(allocator_sample(text, "weft_allocator_cache_hits_total"), 0) << text;

    std::optional<ByteBuf> held;
    std::thread worker([&] {
      // The first allocation refills the cache (a miss); the ones after its release are hits.
      for (int i = 0; i < 10; ++i) allocator.buffer(1000);
      held.emplace(allocator.buffer(4000));
    });
    worker.join();  // the worker's cache leaves with its thread
    text = registry.scrape();
    EXPECT_GE(allocator_sample(text, "weft_allocator_used_bytes"), 4000) << text;
    EXPECT_GE(allocator_sample(text, "weft_allocator_mapped_bytes"),
              allocator_sample(text, "weft_allocator_used_bytes"))
        << text;
    EXPECT_GE(allocator_sample(text, "weft_allocator_cache_hits_total"), 9) << text;
    EXPECT_GE(allocator_sample(text, "weft_allocator_cache_misses_total"), 2) << text;  // a class each
    const double hits = allocator_sample(text, "weft_allocator_cache_hits_total");
    held.reset();
    for (int i = 0; i < 3; ++i) allocator.buffer(1000);
    text = registry.scrape();
    EXPECT_GE(allocator_sample(text, "weft_allocator_cache_hits_total"), hits + 2) << text;
  }
  EXPECT_EQ(registry.scrape().find("weft_allocator_"), std::string::npos);
}

}  // namespace
}  // namespace weft::metrics
