#pragma once
// Memory for coroutine frames: per-thread free lists by size class, so that starting and finishing
// a coroutine on an event loop does not touch the general heap once the lists are warm.
//
// Blocks are plain heap blocks of their class size, so one freed on another thread than the one
// that allocated it simply joins that thread's list. Each list keeps at most kMaxCachedBytesPerClass;
// beyond that, and for frames above kMaxPooledSize, blocks go back to the heap. A thread's lists
// are freed when it exits.

#include <cstddef>
#include <cstdint>

namespace weft::frame_pool {

inline constexpr std::size_t kGranule = 64;
inline constexpr std::size_t kMaxPooledSize = 4096;
inline constexpr std::size_t kMaxCachedBytesPerClass = 64 * 1024;

// Thread-safe (each thread uses its own lists).
void* allocate(std::size_t size);
void deallocate(void* block, std::size_t size) noexcept;

// This thread's counters since it started.
struct Stats {
  std::uint64_t hits = 0;      // allocations served from a free list
  std::uint64_t misses = 0;    // allocations that went to the heap (cold list or oversize frame)
  std::size_t cached_bytes = 0;
};
Stats thread_stats() noexcept;

// A promise type derives from this to take its frames from the pool.
struct PooledFrame {
  static void* operator new(std::size_t size) { return allocate(size); }
  static void operator delete(void* block, std::size_t size) noexcept { deallocate(block, size); }
};

}  // namespace weft::frame_pool
