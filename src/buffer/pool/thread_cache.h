#pragma once
// Thread caches (Netty's PoolThreadCache): per thread and allocator, one bin of free blocks per cached
// size class. The owning thread pushes and pops without a lock or an atomic read-modify-write; an
// empty bin refills half of itself from the cache's arena, a full one flushes its older half to the
// arenas the blocks came from, and every cache_trim_interval operations a sweep returns the blocks not
// reused since the last one. A thread's caches are flushed when it exits.
//
// The registry (State::caches, ThreadCache::owner and the reg_ links) links caches to allocators; it
// is guarded by registry_mutex(), since threads exit and allocators die in any order.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "arena.h"
#include "size_classes.h"
#include "weft/buffer/byte_buf.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft::pool {

// One cached size class: a LIFO stack of free blocks in slots[0, top), the oldest at slots[0] (flushes
// take those). The fast paths touch only this 32-byte struct: a pop reads top and the slot below it,
// a push writes the slot at top; neither keeps a count beside the pointer.
struct Bin {
  std::atomic<ByteBufStorage**> top{nullptr};  // relaxed: written by the owner thread only, read by metrics
  ByteBufStorage** slots = nullptr;            // the bottom of the stack
  ByteBufStorage** limit = nullptr;            // slots + the bin's size: a push needs top != limit
  std::atomic<std::uint64_t> hits{0};          // relaxed: owner-written; pops that found a block

  std::uint32_t count() const noexcept {
    return static_cast<std::uint32_t>(top.load(std::memory_order_relaxed) - slots);
  }
  std::uint32_t max() const noexcept { return static_cast<std::uint32_t>(limit - slots); }
  void set_count(std::uint32_t n) noexcept { top.store(slots + n, std::memory_order_relaxed); }
};
static_assert(sizeof(Bin) == 32, "the fast paths index bins with a shift");

// What a sweep needs per bin, off the fast path: the allocations since the last sweep are the hits
// since then plus the refills' allocations.
struct BinSweep {
  std::uint64_t hits_at_sweep = 0;
  std::uint32_t misses_since_sweep = 0;
};

struct ThreadCache {
  Bin bins[kCachedClasses];
  std::uint32_t ops_until_sweep = 0;
  PooledByteBufAllocator::State* owner = nullptr;  // null once the allocator is gone (registry mutex)
  std::uint64_t owner_id = 0;
  Arena* arena = nullptr;
  ThreadCache* reg_prev = nullptr;  // in the owner's registry (registry mutex)
  ThreadCache* reg_next = nullptr;
  std::uint64_t seen_trim_epoch = 0;
  std::atomic<std::uint64_t> misses{0};  // relaxed: owner-written, read by metrics
  std::unique_ptr<ByteBufStorage*[]> memory;
  BinSweep sweep_state[kCachedClasses];

  // Allocations served from the bins so far (metrics; any thread, relaxed).
  std::uint64_t hits() const noexcept {
    std::uint64_t n = 0;
    for (const Bin& b : bins) n += b.hits.load(std::memory_order_relaxed);
    return n;
  }
};

// Guards the links between thread caches and allocators (creation, thread exit, allocator
// destruction, metrics). Never destroyed.
std::mutex& registry_mutex();

// The fast path's thread-local: the last allocator this thread used and its cache. Trivially
// destructible, so access needs no guard. Defined in pooled_byte_buf_allocator.cc, beside the fast
// path, so that the fast path reads it with the cheapest TLS access (local-exec; hidden keeps that
// true in a shared library).
struct TlsFast {
  std::uint64_t id;
  ThreadCache* cache;
};
[[gnu::visibility("hidden")]] extern constinit thread_local TlsFast t_fast;

// The calling thread's cache for st, created on first use (and remembered in t_fast); null when
// caches are off or the thread is exiting.
ThreadCache* cache_slow(PooledByteBufAllocator::State* st) noexcept;

inline ThreadCache* cache_for(PooledByteBufAllocator::State* st, std::uint64_t id) noexcept {
  if (t_fast.id == id) [[likely]]
    return t_fast.cache;
  return cache_slow(st);
}

// Removes the oldest n blocks of a bin, back to their arenas.
void flush_bin(Bin& b, std::uint32_t n) noexcept;
// Every cache_trim_interval operations: blocks not reused since the last sweep go back (all of them
// after a trim()).
void sweep(ThreadCache* tc) noexcept;

// Flushes the calling thread's cache for st, if it has one (trim_thread_cache()).
void flush_current_thread_cache(PooledByteBufAllocator::State* st) noexcept;
// set_current_thread_caches() and current_thread_caches().
void set_current_thread_caches(bool enabled) noexcept;
bool current_thread_caches() noexcept;

// For st's destructor: unlinks every thread cache from st (each thread deletes its own later) and
// returns the bytes they hold; their blocks are added to `cached_blocks`.
std::size_t detach_thread_caches(PooledByteBufAllocator::State* st, std::unordered_set<const void*>& cached_blocks);

}  // namespace weft::pool
