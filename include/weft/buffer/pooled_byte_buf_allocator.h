#pragma once
/// @file
/// PooledByteBufAllocator: size classes, per-thread caches, shared arenas, mmap for large buffers.
///
///   request ──► size class (52 classes: 16..128 step 16, then 4 per power of two up to 256 KiB)
///      │
///      ├─ class <= 64 KiB ─► calling thread's cache bin (array of free blocks; no lock, no atomic RMW)
///      │                        └─ empty: refill half a bin from the thread's arena (one lock)
///      ├─ class <= 256 KiB ─► the thread's arena (lock): a run of pages carved into equal slots
///      └─ larger ──────────► its own mmap, munmap on release (mremap to grow)
///
///   arena: a mutex, per-class lists of runs with free slots, 4 MiB chunks (mmap) split into 8 KiB
///   pages. Each slot holds its ByteBufStorage header (48 bytes) in front of the data, so a block
///   needs no separate metadata allocation; a chunk keeps its run table in its own first pages.
///
/// Threads and arenas: each thread that allocates or frees gets a cache bound to the arena with the
/// fewest threads; arenas are shared once there are more threads than arenas. A block released on any
/// thread goes into that thread's cache (it belongs to this allocator, whichever arena made it); when a
/// bin overflows, half of it goes back to the owning arenas (one lock per arena per batch). So
/// cross-thread release (executor offload, producer/consumer) costs the same as a local one and each
/// block always returns to the arena whose chunk holds it.
///
/// Memory comes back: every `cache_trim_interval` operations a cache returns what it did not use since
/// the last sweep; a thread's cache is flushed when the thread exits; a run whose slots are all free
/// gives its pages back to its chunk (one run per class is kept); a chunk that stays empty for
/// `chunk_release_delay` is unmapped (checked on the arenas' slow paths); trim() does all of that now.
///
/// Thread contract: every public method is thread-safe. The allocator should outlive every buffer it
/// made; destroying it with buffers alive reports them (and the leak detector's records) on stderr and
/// hands their blocks to a sink that is never destroyed, so that a late release (or growth), on any
/// thread, touches no freed memory: pooled blocks stay mapped with their chunks until the process
/// ends, mapped (large) buffers are unmapped when released.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/buffer/byte_buf_allocator.h"

namespace weft {

/// Settings of a PooledByteBufAllocator.
struct PooledAllocatorOptions {
  /// Number of arenas; 0 means 2 x the number of CPUs (as Netty).
  std::size_t arenas = 0;
  /// Whether threads get caches. Without them every small allocation takes its arena's lock.
  bool thread_caches = true;
  /// How long a chunk stays mapped after it became empty (0: unmapped at once).
  std::chrono::milliseconds chunk_release_delay{1000};
  /// Allocations a thread cache serves between two sweeps of the blocks it did not reuse.
  std::uint32_t cache_trim_interval = 8192;
};

/// Per arena, a snapshot.
struct PoolArenaMetrics {
  std::size_t index = 0;            ///< the arena's index
  std::size_t threads = 0;          ///< thread caches bound to it
  std::size_t chunks = 0;           ///< mapped chunks (empty ones included)
  std::size_t empty_chunks = 0;     ///< mapped chunks that hold no run
  std::size_t runs = 0;             ///< runs carved out of its chunks
  std::size_t mapped_bytes = 0;     ///< chunks x chunk size
  std::size_t used_bytes = 0;       ///< capacity of the blocks handed out (to buffers or thread caches)
  std::uint64_t allocations = 0;    ///< blocks handed out by the arena itself (cache refills included)
  std::uint64_t frees = 0;          ///< blocks returned to the arena
};

/// Per thread cache, a snapshot.
struct PoolThreadCacheMetrics {
  std::size_t arena = 0;            ///< index of the arena it refills from
  std::size_t cached_buffers = 0;   ///< free blocks it holds
  std::size_t cached_bytes = 0;     ///< capacity of the free blocks it holds
  std::uint64_t hits = 0;           ///< allocations served from the cache
  std::uint64_t misses = 0;         ///< allocations that had to refill from the arena
};

/// A snapshot of a PooledByteBufAllocator (metrics()).
struct PooledAllocatorMetrics {
  std::vector<PoolArenaMetrics> arenas;             ///< one per arena
  std::vector<PoolThreadCacheMetrics> thread_caches;  ///< one per live thread cache
  std::size_t large_buffers = 0;    ///< live mmap'd (larger than the biggest class) buffers
  std::size_t large_bytes = 0;      ///< capacity of the live mmap'd buffers
  std::size_t mapped_bytes = 0;     ///< chunks + large mappings
  std::size_t used_bytes = 0;       ///< arenas' used bytes + large bytes
  /// Allocations served from a thread cache, by every cache so far (those of exited threads too).
  std::uint64_t cache_hits = 0;
  /// Allocations that refilled a thread cache from its arena, by every cache so far.
  std::uint64_t cache_misses = 0;

  /// One line: totals, then one field group per arena and per cache.
  std::string to_string() const;
};

/// The pooled allocator: size classes, per-thread caches, shared arenas, mmap for large buffers
/// (see the file's description). Thread-safe.
class PooledByteBufAllocator final : public ByteBufAllocator {
 public:
  static constexpr std::size_t kPageSize = 8192;  ///< bytes per page of a chunk
  static constexpr std::size_t kChunkSize = std::size_t{4} << 20;  ///< bytes per chunk an arena maps
  static constexpr std::size_t kMaxPooledCapacity = std::size_t{256} << 10;  ///< larger requests get their own mapping
  static constexpr std::size_t kMaxCachedCapacity = std::size_t{64} << 10;  ///< larger classes skip the thread caches
  static constexpr std::size_t kSizeClassCount = 52;  ///< number of size classes

  /// Thread-safe.
  PooledByteBufAllocator();
  /// Thread-safe.
  explicit PooledByteBufAllocator(PooledAllocatorOptions options);
  /// Not thread-safe: no other thread may use the allocator any more. See the class comment for
  /// buffers still alive.
  ~PooledByteBufAllocator() override;

  /// Thread-safe. ByteBufAllocator::buffer() (same arguments, result and errors), calling this
  /// allocator's fast path directly rather than through the virtual allocate_storage.
  ByteBuf buffer(std::size_t initial_capacity = kDefaultInitialCapacity,
                 std::size_t max_capacity = kDefaultMaxCapacity) {
    max_capacity = checked_max_capacity(initial_capacity, max_capacity);
    return wrap_new(PooledByteBufAllocator::allocate_storage(initial_capacity), max_capacity);
  }

  /// Thread-safe. A snapshot of every arena and thread cache.
  PooledAllocatorMetrics metrics() const;
  /// Thread-safe. Returns memory now: flushes the calling thread's cache, asks every other cache to
  /// flush at its next sweep, unmaps every empty chunk and gives free pages of the others back to the
  /// OS (madvise). Buffers in use are not affected.
  void trim() noexcept;
  /// Thread-safe. Flushes the calling thread's cache to the arenas.
  void trim_thread_cache() noexcept;
  /// Thread-safe. Number of arenas.
  std::size_t arena_count() const noexcept;

  /// Thread-safe; applies to the calling thread only, for every pooled allocator. Whether this thread
  /// gets thread caches (default true). false: the caches it holds are flushed to their arenas and
  /// each of its later small allocations and releases takes an arena's lock, as with
  /// `thread_caches = false` but for this thread alone (Netty's useCacheForAllThreads=false, which
  /// leaves threads other than its event loops without a cache). true gives caches back to it.
  static void set_current_thread_caches(bool enabled) noexcept;
  /// Thread-safe. Whether the calling thread may get thread caches (set_current_thread_caches()).
  static bool current_thread_caches() noexcept;

  /// Thread-safe. The capacity a request for n bytes gets (n itself above kMaxPooledCapacity, rounded
  /// up to whole pages minus the header when mapped).
  static std::size_t normalize_capacity(std::size_t n) noexcept;
  /// Thread-safe. The size class index of a request of n <= kMaxPooledCapacity bytes.
  static std::size_t size_class_index(std::size_t n) noexcept;
  /// Thread-safe. The capacity of size class i < kSizeClassCount.
  static std::size_t size_class_capacity(std::size_t i) noexcept;

  struct State;  ///< implementation (pooled_byte_buf_allocator.cc)

 protected:
  /// Thread-safe.
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override;
  /// Thread-safe. mremap for mapped (large) buffers, allocate + copy + free otherwise.
  ByteBufStorage* reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                     std::size_t preserve) override;
  /// Thread-safe.
  void free_storage(ByteBufStorage* storage) noexcept override;

 private:
  ByteBufStorage* allocate_miss(std::size_t min_capacity);
  ByteBufStorage* allocate_slow(std::size_t min_capacity);
  void free_slow(ByteBufStorage* storage) noexcept;

  std::uint64_t id_;  // unique per instance, never reused: thread-local caches are keyed by it
  State* state_;
};

namespace detail {
// pooled_allocator()'s instance, set by the first call (make_pooled_allocator).
extern std::atomic<PooledByteBufAllocator*> g_pooled_allocator;
PooledByteBufAllocator& make_pooled_allocator() noexcept;
}  // namespace detail

/// Thread-safe. The process-wide pooled allocator (default options); channels of the epoll transport
/// read into it and encoders write into it (Context::allocator()). Never destroyed. Inline: after
/// the first call, one load and a test.
inline PooledByteBufAllocator& pooled_allocator() noexcept {
  PooledByteBufAllocator* const p = detail::g_pooled_allocator.load(std::memory_order_acquire);
  if (p != nullptr) [[likely]]
    return *p;
  return detail::make_pooled_allocator();
}

}  // namespace weft
