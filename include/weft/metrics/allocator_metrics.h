#pragma once
/// @file
/// A pooled allocator's state in a registry, read from PooledByteBufAllocator::metrics() when
/// scraped (nothing is counted on the allocation path beyond what the pool keeps anyway):
///   weft_allocator_arenas                     gauge: arenas
///   weft_allocator_used_bytes                 gauge: capacity of the blocks handed out (large buffers too)
///   weft_allocator_mapped_bytes               gauge: memory reserved from the OS (chunks and large mappings)
///   weft_allocator_cached_bytes               gauge: free blocks held by thread caches
///   weft_allocator_cache_hits_total           counter: allocations a thread cache served
///   weft_allocator_cache_misses_total         counter: allocations that refilled a thread cache from its arena

#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// Adds an allocator to a registry while it lives; its destructor removes it. Destroy it before the
/// allocator. One per registry and allocator. Thread-safe to make and destroy.
class AllocatorMetrics {
 public:
  /// Adds `allocator` (the process's pooled allocator by default) to `registry`.
  explicit AllocatorMetrics(PooledByteBufAllocator& allocator = pooled_allocator(),
                            Registry& registry = Registry::global());
  /// Removes the allocator's series from the registry.
  ~AllocatorMetrics();
  /// Not copyable.
  AllocatorMetrics(const AllocatorMetrics&) = delete;
  /// Not copyable.
  AllocatorMetrics& operator=(const AllocatorMetrics&) = delete;

 private:
  Registry& registry_;
};

}  // namespace weft::metrics
