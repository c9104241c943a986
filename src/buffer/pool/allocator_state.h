#pragma once
// What a PooledByteBufAllocator holds behind its State pointer: options, arenas, the registry of its
// thread caches and the set of its live mapped (large) buffers.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "arena.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft {

namespace pool {
struct ThreadCache;
}

struct PooledByteBufAllocator::State {
  PooledByteBufAllocator* self = nullptr;
  std::uint64_t id = 0;
  PooledAllocatorOptions options;
  std::vector<std::unique_ptr<pool::Arena>> arenas;
  std::atomic<std::uint64_t> trim_epoch{0};
  std::atomic<std::size_t> large_count{0};
  std::atomic<std::size_t> large_bytes{0};
  // Live mapped buffers, so that destruction can find them (large_mutex). Each is a mapping of its
  // own: the lock and the set sit beside an mmap/munmap.
  std::mutex large_mutex;
  std::unordered_set<ByteBufStorage*> large_blocks;
  pool::ThreadCache* caches = nullptr;  // registry (registry mutex)
  // Hits and misses of the caches that left the registry (their thread exited): metrics() adds
  // them, so that the totals only go up. Registry mutex.
  std::uint64_t retired_hits = 0;
  std::uint64_t retired_misses = 0;

  pool::Arena& arena_for_uncached_thread() {
    const std::size_t h = std::hash<std::thread::id>{}(std::this_thread::get_id());
    return *arenas[h % arenas.size()];
  }
};

}  // namespace weft
