#include "weft/metrics/allocator_metrics.h"

#include <array>
#include <cstddef>
#include <functional>
#include <utility>

namespace weft::metrics {

namespace {

using Read = double (*)(const PooledAllocatorMetrics&);

struct Series {
  bool counter;
  const char* name;
  const char* help;
  Read read;
};

double cached_bytes(const PooledAllocatorMetrics& m) {
  std::size_t bytes = 0;
  for (const PoolThreadCacheMetrics& c : m.thread_caches) bytes += c.cached_bytes;
  return static_cast<double>(bytes);
}

constexpr std::array<Series, 6> kSeries = {{
    {false, "weft_allocator_arenas", "Arenas of the pooled allocator.",
     [](const PooledAllocatorMetrics& m) { return static_cast<double>(m.arenas.size()); }},
    {false, "weft_allocator_used_bytes",
     "Capacity of the pooled allocator's blocks handed out, large buffers included.",
     [](const PooledAllocatorMetrics& m) { return static_cast<double>(m.used_bytes); }},
    {false, "weft_allocator_mapped_bytes",
     "Memory the pooled allocator reserved from the OS: chunks and large mappings.",
     [](const PooledAllocatorMetrics& m) { return static_cast<double>(m.mapped_bytes); }},
    {false, "weft_allocator_cached_bytes", "Capacity of the free blocks the pooled allocator's thread caches hold.",
     cached_bytes},
    {true, "weft_allocator_cache_hits", "Allocations a thread cache of the pooled allocator served.",
     [](const PooledAllocatorMetrics& m) { return static_cast<double>(m.cache_hits); }},
    {true, "weft_allocator_cache_misses", "Allocations that refilled a thread cache from its arena.",
     [](const PooledAllocatorMetrics& m) { return static_cast<double>(m.cache_misses); }},
}};

Family& family(Registry& registry, const Series& s) {
  return s.counter ? registry.counter(s.name, s.help) : registry.gauge(s.name, s.help);
}

}  // namespace

AllocatorMetrics::AllocatorMetrics(PooledByteBufAllocator& allocator, Registry& registry) : registry_(registry) {
  for (const Series& s : kSeries) {
    family(registry, s).set_function({}, [&allocator, read = s.read] { return read(allocator.metrics()); });
  }
}

AllocatorMetrics::~AllocatorMetrics() {
  for (const Series& s : kSeries) family(registry_, s).remove_function({});
}

}  // namespace weft::metrics
