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

struct Bin {
  ByteBufStorage** slots = nullptr;
  std::atomic<std::uint32_t> count{0};  // relaxed: written by the owner thread only, read by metrics
  std::uint32_t max = 0;
  std::uint32_t allocs_since_sweep = 0;
};

struct ThreadCache {
  PooledByteBufAllocator::State* owner = nullptr;  // null once the allocator is gone (registry mutex)
  std::uint64_t owner_id = 0;
  Arena* arena = nullptr;
  ThreadCache* reg_prev = nullptr;  // in the owner's registry (registry mutex)
  ThreadCache* reg_next = nullptr;
  std::uint32_t ops_until_sweep = 0;
  std::uint64_t seen_trim_epoch = 0;
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::unique_ptr<ByteBufStorage*[]> memory;
  Bin bins[kCachedClasses];
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
