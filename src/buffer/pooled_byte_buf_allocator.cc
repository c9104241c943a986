#include "weft/buffer/pooled_byte_buf_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_set>

#include "pool/allocator_state.h"
#include "pool/arena.h"
#include "pool/late_release_sink.h"
#include "pool/mapping.h"
#include "pool/size_classes.h"
#include "pool/thread_cache.h"
#include "weft/buffer/leak_detector.h"

// The entry points and their fast paths: a thread cache bin pop (allocate) or push (release). The
// parts live in pool/: size classes, chunks and runs, arenas, thread caches, the late-release sink and
// the metrics.

namespace weft {

namespace pool {
// Here, in the fast path's translation unit, so that reading it takes one instruction (thread_cache.h).
constinit thread_local TlsFast t_fast{0, nullptr};
}  // namespace pool

namespace {

std::atomic<std::uint64_t> g_next_id{1};

}  // namespace

PooledByteBufAllocator::PooledByteBufAllocator() : PooledByteBufAllocator(PooledAllocatorOptions{}) {}

PooledByteBufAllocator::PooledByteBufAllocator(PooledAllocatorOptions options)
    : id_(g_next_id.fetch_add(1, std::memory_order_relaxed)), state_(new State) {
  state_->self = this;
  state_->id = id_;
  if (options.arenas == 0) {
    options.arenas = 2 * std::max(1u, std::thread::hardware_concurrency());
  }
  if (options.cache_trim_interval == 0) options.cache_trim_interval = 1;
  state_->options = options;
  const auto delay_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options.chunk_release_delay).count();
  for (std::size_t i = 0; i < options.arenas; ++i) {
    auto a = std::make_unique<pool::Arena>();
    a->index = i;
    a->state = state_;
    a->release_delay_ns = std::max<std::int64_t>(delay_ns, 0);
    state_->arenas.push_back(std::move(a));
  }
}

PooledByteBufAllocator::~PooledByteBufAllocator() {
  std::unordered_set<const void*> cached_blocks;
  const std::size_t cached = pool::detach_thread_caches(state_, cached_blocks);
  std::size_t used = 0;
  for (auto& a : state_->arenas) used += a->used_bytes;
  const std::size_t live = used - cached + state_->large_bytes.load(std::memory_order_relaxed);
  const std::size_t reported = LeakDetector::report_allocator_destroyed(this);
  if (live > 0) {
    std::fprintf(stderr,
                 "weft: PooledByteBufAllocator %p destroyed with %zu bytes of buffers still alive (%zu reported by "
                 "the leak detector); their memory stays mapped\n",
                 static_cast<void*>(this), live, reported);
    for (auto& a : state_->arenas) a->keep_mappings = true;
    pool::orphan_live_blocks(state_, cached_blocks);
  }
  delete state_;
}

std::size_t PooledByteBufAllocator::normalize_capacity(std::size_t n) noexcept {
  if (n <= kMaxPooledCapacity) return pool::class_capacity(pool::class_index(n));
  return pool::large_capacity(n);
}

std::size_t PooledByteBufAllocator::size_class_index(std::size_t n) noexcept { return pool::class_index(n); }
std::size_t PooledByteBufAllocator::size_class_capacity(std::size_t i) noexcept { return pool::class_capacity(i); }
std::size_t PooledByteBufAllocator::arena_count() const noexcept { return state_->arenas.size(); }

namespace {

// The cache miss: refill half a bin from the thread's arena under one lock, hand out the last one.
ByteBufStorage* refill_and_take(PooledByteBufAllocator* self, pool::ThreadCache* tc, std::size_t cls) {
  pool::Bin& b = tc->bins[cls];
  tc->misses.store(tc->misses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  ++tc->sweep_state[cls].misses_since_sweep;
  const std::uint32_t want = std::max<std::uint32_t>(1, b.max() / 2);
  pool::Arena* arena = tc->arena;
  std::uint32_t got = 0;
  {
    std::lock_guard<std::mutex> lock(arena->mutex);
    for (; got < want; ++got) {
      ByteBufStorage* x = arena->take(cls, self);
      if (x == nullptr) break;
      b.slots[got] = x;
    }
    std::int64_t now = 0;
    arena->maybe_maintain(now);
  }
  if (got == 0) throw std::bad_alloc();
  ByteBufStorage* s = b.slots[got - 1];
  b.set_count(got - 1);
  if (--tc->ops_until_sweep == 0) [[unlikely]]
    pool::sweep(tc);
  return s;
}

// The allocation fast path's sweep, out of line so that the fast path stays a leaf.
[[gnu::noinline]] ByteBufStorage* sweep_then_return(pool::ThreadCache* tc, ByteBufStorage* s) noexcept {
  pool::sweep(tc);
  return s;
}

}  // namespace

// The fast path is a leaf: a cached class (one table load), this thread's cache for this allocator
// (t_fast) and a bin that is not empty: a pop, the bin's hit count, the block's count set to 1 and
// the sweep countdown (a sweep, when due, is a tail call). A cached block carries no leak record
// (ByteBuf untracks a block before it returns it). Everything else (a thread's first use, a refill)
// goes to allocate_miss, which does the same bookkeeping the long way.
ByteBufStorage* PooledByteBufAllocator::allocate_storage(std::size_t min_capacity) {
  if (min_capacity <= kMaxCachedCapacity && pool::t_fast.id == id_) [[likely]] {
    pool::ThreadCache* tc = pool::t_fast.cache;  // never null while t_fast.id names an allocator
    pool::Bin& b = tc->bins[pool::cached_class(min_capacity)];
    ByteBufStorage** top = b.top.load(std::memory_order_relaxed);
    if (top != b.slots) [[likely]] {
      --top;
      ByteBufStorage* s = *top;
      b.top.store(top, std::memory_order_relaxed);
      b.hits.store(b.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      s->refs.store(1, std::memory_order_relaxed);
      assert(s->leak_record == nullptr);
      if (--tc->ops_until_sweep == 0) [[unlikely]]
        return sweep_then_return(tc, s);
      return s;
    }
  }
  return allocate_miss(min_capacity);
}

[[gnu::noinline]] ByteBufStorage* PooledByteBufAllocator::allocate_miss(std::size_t min_capacity) {
  if (min_capacity <= kMaxCachedCapacity) [[likely]] {
    const std::size_t cls = pool::cached_class(min_capacity);
    pool::ThreadCache* tc = pool::cache_for(state_, id_);
    if (tc != nullptr) [[likely]] {
      pool::Bin& b = tc->bins[cls];
      const std::uint32_t count = b.count();
      if (count == 0) [[unlikely]] return refill_and_take(this, tc, cls);
      ByteBufStorage* s = b.slots[count - 1];
      b.set_count(count - 1);
      b.hits.store(b.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      s->refs.store(1, std::memory_order_relaxed);
      assert(s->leak_record == nullptr);
      if (--tc->ops_until_sweep == 0) [[unlikely]]
        pool::sweep(tc);
      return s;
    }
  }
  return allocate_slow(min_capacity);
}

ByteBufStorage* PooledByteBufAllocator::allocate_slow(std::size_t min_capacity) {
  if (min_capacity <= kMaxPooledCapacity) {
    const std::size_t cls = pool::class_index(min_capacity);
    pool::ThreadCache* tc = min_capacity <= kMaxCachedCapacity ? nullptr : pool::cache_for(state_, id_);
    pool::Arena& arena = tc != nullptr ? *tc->arena : state_->arena_for_uncached_thread();
    std::lock_guard<std::mutex> lock(arena.mutex);
    ByteBufStorage* s = arena.take(cls, this);
    std::int64_t now = 0;
    arena.maybe_maintain(now);
    if (s == nullptr) throw std::bad_alloc();
    return s;
  }
  // Large: a mapping of its own.
  if (min_capacity > kMaxCapacityLimit) throw std::bad_alloc();
  const std::size_t capacity = normalize_capacity(min_capacity);
  ByteBufStorage* s = pool::map_large(this, capacity);
  if (s == nullptr) throw std::bad_alloc();
  try {
    std::lock_guard<std::mutex> lock(state_->large_mutex);
    state_->large_blocks.insert(s);
  } catch (...) {
    ::munmap(static_cast<void*>(s), s->allocator_handle);
    throw;
  }
  state_->large_count.fetch_add(1, std::memory_order_relaxed);
  state_->large_bytes.fetch_add(capacity, std::memory_order_relaxed);
  return s;
}

ByteBufStorage* PooledByteBufAllocator::reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                                           std::size_t preserve) {
  if (storage->allocator_tag != pool::kLargeTag || min_capacity <= kMaxPooledCapacity) {
    return ByteBufAllocator::reallocate_storage(storage, min_capacity, preserve);
  }
  if (min_capacity > kMaxCapacityLimit) throw std::bad_alloc();
  const std::size_t capacity = normalize_capacity(min_capacity);
  const std::size_t old_map = storage->allocator_handle;
  const std::size_t old_capacity = storage->capacity;
  std::lock_guard<std::mutex> lock(state_->large_mutex);
  // The node is reused for the new address, so that the registry cannot fail once the mapping moved.
  auto node = state_->large_blocks.extract(storage);
  void* mem = ::mremap(static_cast<void*>(storage), old_map, capacity + pool::kLargeHeader, MREMAP_MAYMOVE);
  if (mem == MAP_FAILED) {
    state_->large_blocks.insert(std::move(node));
    throw std::bad_alloc();
  }
  auto* s = static_cast<ByteBufStorage*>(mem);  // the header moved with the mapping
  node.value() = s;
  state_->large_blocks.insert(std::move(node));
  s->data = static_cast<std::uint8_t*>(mem) + pool::kLargeHeader;
  s->capacity = capacity;
  s->allocator_handle = capacity + pool::kLargeHeader;
  state_->large_bytes.fetch_add(capacity - old_capacity, std::memory_order_relaxed);
  return s;
}

// A leaf too: a cached class, this thread's cache and room in the bin (a sweep, when due, is a tail
// call); free_slow does the rest (first use, a full bin, the arenas, large buffers).
void PooledByteBufAllocator::free_storage(ByteBufStorage* storage) noexcept {
  const std::uint32_t tag = storage->allocator_tag;
  if (tag < pool::kCachedClasses && pool::t_fast.id == id_) [[likely]] {
    pool::ThreadCache* tc = pool::t_fast.cache;  // never null while t_fast.id names an allocator
    pool::Bin& b = tc->bins[tag];
    ByteBufStorage** top = b.top.load(std::memory_order_relaxed);
    if (top != b.limit) [[likely]] {
      *top = storage;
      b.top.store(top + 1, std::memory_order_relaxed);
      if (--tc->ops_until_sweep == 0) [[unlikely]]
        pool::sweep(tc);
      return;
    }
  }
  free_slow(storage);
}

[[gnu::noinline]] void PooledByteBufAllocator::free_slow(ByteBufStorage* storage) noexcept {
  const std::uint32_t tag = storage->allocator_tag;
  if (tag < pool::kCachedClasses) {
    pool::ThreadCache* tc = pool::cache_for(state_, id_);
    if (tc != nullptr) {
      pool::Bin& b = tc->bins[tag];
      if (b.count() == b.max()) pool::flush_bin(b, b.max() / 2);
      const std::uint32_t count = b.count();
      b.slots[count] = storage;
      b.set_count(count + 1);
      if (tc->ops_until_sweep == 0 || --tc->ops_until_sweep == 0) pool::sweep(tc);
      return;
    }
  }
  if (tag == pool::kLargeTag) {
    {
      std::lock_guard<std::mutex> lock(state_->large_mutex);
      state_->large_blocks.erase(storage);
    }
    state_->large_count.fetch_sub(1, std::memory_order_relaxed);
    state_->large_bytes.fetch_sub(storage->capacity, std::memory_order_relaxed);
    ::munmap(static_cast<void*>(storage), storage->allocator_handle);
    return;
  }
  pool::Arena* arena = pool::arena_of(storage);
  std::lock_guard<std::mutex> lock(arena->mutex);
  std::int64_t now = 0;
  arena->give_back(storage, now);
  arena->maybe_maintain(now);
}

void PooledByteBufAllocator::trim_thread_cache() noexcept { pool::flush_current_thread_cache(state_); }

void PooledByteBufAllocator::set_current_thread_caches(bool enabled) noexcept {
  pool::set_current_thread_caches(enabled);
}

bool PooledByteBufAllocator::current_thread_caches() noexcept { return pool::current_thread_caches(); }

void PooledByteBufAllocator::trim() noexcept {
  state_->trim_epoch.fetch_add(1, std::memory_order_relaxed);
  trim_thread_cache();
  const std::int64_t now = pool::now_ns();
  for (auto& a : state_->arenas) {
    std::lock_guard<std::mutex> lock(a->mutex);
    a->maintain(now, true);
  }
}

namespace detail {

constinit std::atomic<PooledByteBufAllocator*> g_pooled_allocator{nullptr};

PooledByteBufAllocator& make_pooled_allocator() noexcept {
  // Constructed once, never destroyed: buffers held by static objects may be released after main().
  alignas(PooledByteBufAllocator) static unsigned char memory[sizeof(PooledByteBufAllocator)];
  static PooledByteBufAllocator* const instance = new (memory) PooledByteBufAllocator();
  g_pooled_allocator.store(instance, std::memory_order_release);
  return *instance;
}

}  // namespace detail

}  // namespace weft
