#pragma once
/// @file
/// Memory for coroutine frames: per-thread free lists by size class, so that starting and finishing
/// a coroutine on an event loop does not touch the general heap once the lists are warm.
///
/// Blocks are plain heap blocks of their class size, so one freed on another thread than the one
/// that allocated it simply joins that thread's list. Each list keeps at most kMaxCachedBytesPerClass,
/// and a thread's lists kMaxCachedBytesPerThread together; beyond that, and for frames above
/// kMaxPooledSize, blocks go back to the heap. A thread's lists
/// are freed when it exits.

#include <cstddef>
#include <cstdint>

namespace weft::frame_pool {

/// Size classes are multiples of this many bytes.
inline constexpr std::size_t kGranule = 64;
/// Frames larger than this come from the heap directly. (A gRPC call's coroutine that holds the
/// request's head takes about 4.8 KiB.)
inline constexpr std::size_t kMaxPooledSize = 8192;
/// The most bytes one thread's list of one class keeps. A loop with a few hundred requests in
/// flight frees and takes their frames in bursts of that size: a list shorter than a burst sends
/// the rest to the heap (a proxy's 256 connections missed 3 frames per request at 64 KiB).
inline constexpr std::size_t kMaxCachedBytesPerClass = 512 * 1024;
/// The most bytes all of one thread's lists keep together.
inline constexpr std::size_t kMaxCachedBytesPerThread = 8 * 1024 * 1024;

/// Thread-safe (each thread uses its own lists). A block of at least `size` bytes.
void* allocate(std::size_t size);
/// Thread-safe (each thread uses its own lists). Returns a block allocated with `size`.
void deallocate(void* block, std::size_t size) noexcept;

/// This thread's counters since it started.
struct Stats {
  std::uint64_t hits = 0;      ///< allocations served from a free list
  std::uint64_t misses = 0;    ///< allocations that went to the heap (cold list or oversize frame)
  std::size_t cached_bytes = 0;  ///< bytes held in this thread's free lists
};
/// Thread-safe. The calling thread's counters.
Stats thread_stats() noexcept;

/// A standard allocator over the pool, for objects and containers made and freed per request or
/// per stream (std::allocate_shared, a vector that holds a few entries): they stay off the general
/// heap once the lists are warm. Thread-safe as allocate() and deallocate().
template <class T>
struct Allocator {
  /// What it allocates.
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "frame_pool blocks have operator new's alignment");
  /// Stateless: every instance shares this thread's lists.
  Allocator() noexcept = default;
  /// Rebinding (std::allocate_shared allocates its control block with the object).
  template <class U>
  Allocator(const Allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  /// Room for `n` objects: a pooled block, or the heap's beyond kMaxPooledSize.
  T* allocate(std::size_t n) { return static_cast<T*>(frame_pool::allocate(n * sizeof(T))); }
  /// Gives back what allocate(n) returned.
  void deallocate(T* p, std::size_t n) noexcept { frame_pool::deallocate(p, n * sizeof(T)); }
  /// Always equal: any instance frees what another allocated.
  template <class U>
  bool operator==(const Allocator<U>&) const noexcept {
    return true;
  }
};

/// A promise type derives from this to take its frames from the pool.
struct PooledFrame {
  /// A frame from the pool.
  static void* operator new(std::size_t size) { return allocate(size); }
  /// Gives a frame back to the pool.
  static void operator delete(void* block, std::size_t size) noexcept { deallocate(block, size); }
};

}  // namespace weft::frame_pool
