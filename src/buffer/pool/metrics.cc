// PooledByteBufAllocator::metrics() (Netty's PoolArenaMetric and PoolThreadCache counters) and the
// one-line text of a snapshot.

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <mutex>
#include <string>

#include "allocator_state.h"
#include "arena.h"
#include "size_classes.h"
#include "thread_cache.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft {

PooledAllocatorMetrics PooledByteBufAllocator::metrics() const {
  PooledAllocatorMetrics m;
  for (auto& a : state_->arenas) {
    PoolArenaMetrics am;
    std::lock_guard<std::mutex> lock(a->mutex);
    am.index = a->index;
    am.threads = a->threads.load(std::memory_order_relaxed);
    am.chunks = a->chunk_count;
    am.empty_chunks = a->empty_chunks;
    am.runs = a->runs;
    am.mapped_bytes = a->chunk_count * kChunkSize;
    am.used_bytes = a->used_bytes;
    am.allocations = a->allocations;
    am.frees = a->frees;
    m.mapped_bytes += am.mapped_bytes;
    m.used_bytes += am.used_bytes;
    m.arenas.push_back(am);
  }
  {
    std::lock_guard<std::mutex> lock(pool::registry_mutex());
    m.cache_hits = state_->retired_hits;
    m.cache_misses = state_->retired_misses;
    for (pool::ThreadCache* tc = state_->caches; tc != nullptr; tc = tc->reg_next) {
      PoolThreadCacheMetrics cm;
      cm.arena = tc->arena->index;
      for (std::size_t cls = 0; cls < pool::kCachedClasses; ++cls) {
        const std::size_t n = tc->bins[cls].count();
        cm.cached_buffers += n;
        cm.cached_bytes += n * pool::kClassInfo[cls].capacity;
      }
      cm.hits = tc->hits();
      cm.misses = tc->misses.load(std::memory_order_relaxed);
      m.cache_hits += cm.hits;
      m.cache_misses += cm.misses;
      m.thread_caches.push_back(cm);
    }
  }
  m.large_buffers = state_->large_count.load(std::memory_order_relaxed);
  m.large_bytes = state_->large_bytes.load(std::memory_order_relaxed);
  m.mapped_bytes += m.large_bytes;
  m.used_bytes += m.large_bytes;
  return m;
}

std::string PooledAllocatorMetrics::to_string() const {
  std::size_t cached = 0;
  std::uint64_t hits = 0, misses = 0;
  for (const auto& c : thread_caches) {
    cached += c.cached_bytes;
    hits += c.hits;
    misses += c.misses;
  }
  std::string out;
  auto it = std::back_inserter(out);
  it = fmt::format_to(it, "pooled used={} mapped={} large={}/{} arenas={} caches={} cached={} hits={} misses={}",
                      used_bytes, mapped_bytes, large_buffers, large_bytes, arenas.size(), thread_caches.size(), cached,
                      hits, misses);
  for (const auto& a : arenas) {
    it = fmt::format_to(it, " | arena{} threads={} chunks={} empty={} runs={} used={} allocs={} frees={}", a.index,
                        a.threads, a.chunks, a.empty_chunks, a.runs, a.used_bytes, a.allocations, a.frees);
  }
  for (std::size_t i = 0; i < thread_caches.size(); ++i) {
    const auto& c = thread_caches[i];
    it = fmt::format_to(it, " | cache{} arena={} buffers={} bytes={} hits={} misses={}", i, c.arena, c.cached_buffers,
                        c.cached_bytes, c.hits, c.misses);
  }
  return out;
}

}  // namespace weft
