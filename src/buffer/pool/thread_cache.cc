#include "thread_cache.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "allocator_state.h"

namespace weft::pool {

std::mutex& registry_mutex() {
  alignas(std::mutex) static unsigned char memory[sizeof(std::mutex)];
  static std::mutex* const m = new (memory) std::mutex();
  return *m;
}

namespace {

constinit thread_local bool t_exiting = false;
constinit thread_local bool t_caches_off = false;  // set_current_thread_caches(false)

// Returns blocks (from any arenas of one allocator) to their arenas, one lock per run of blocks
// from the same arena.
void flush_slots(ByteBufStorage** items, std::size_t n) noexcept {
  std::size_t i = 0;
  while (i < n) {
    Arena* arena = arena_of(items[i]);
    std::int64_t now = 0;
    std::lock_guard<std::mutex> lock(arena->mutex);
    for (; i < n && arena_of(items[i]) == arena; ++i) {
      arena->give_back(items[i], now);
    }
    arena->maybe_maintain(now);
  }
}

void flush_all(ThreadCache* tc) noexcept {
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    Bin& b = tc->bins[cls];
    const std::uint32_t n = b.count();
    if (n == 0) continue;
    flush_slots(b.slots, n);
    b.set_count(0);
    tc->sweep_state[cls] = {b.hits.load(std::memory_order_relaxed), 0};
  }
}

// Owns this thread's caches; its destructor (thread exit) flushes them.
struct TlsCaches {
  std::vector<ThreadCache*> caches;
  ~TlsCaches() {
    t_exiting = true;
    t_fast = {0, nullptr};
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (ThreadCache* tc : caches) {
      if (tc->owner != nullptr) {
        flush_all(tc);
        if (tc->reg_prev != nullptr)
          tc->reg_prev->reg_next = tc->reg_next;
        else
          tc->owner->caches = tc->reg_next;
        if (tc->reg_next != nullptr) tc->reg_next->reg_prev = tc->reg_prev;
        tc->arena->threads.fetch_sub(1, std::memory_order_relaxed);
        tc->owner->retired_hits += tc->hits();
        tc->owner->retired_misses += tc->misses.load(std::memory_order_relaxed);
      }
      delete tc;
    }
    caches.clear();
  }
};
thread_local TlsCaches t_caches;

ThreadCache* create_cache(PooledByteBufAllocator::State* st) {
  auto tc = std::make_unique<ThreadCache>();
  tc->owner = st;
  tc->owner_id = st->id;
  std::size_t total = 0;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) total += kClassInfo[cls].cache_max;
  tc->memory = std::make_unique<ByteBufStorage*[]>(total);
  std::size_t offset = 0;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    Bin& b = tc->bins[cls];
    b.slots = tc->memory.get() + offset;
    b.limit = b.slots + kClassInfo[cls].cache_max;
    b.set_count(0);
    offset += kClassInfo[cls].cache_max;
  }
  tc->ops_until_sweep = st->options.cache_trim_interval;
  tc->seen_trim_epoch = st->trim_epoch.load(std::memory_order_relaxed);
  // Bind to the arena with the fewest threads.
  Arena* best = st->arenas[0].get();
  for (auto& a : st->arenas) {
    if (a->threads.load(std::memory_order_relaxed) < best->threads.load(std::memory_order_relaxed)) best = a.get();
  }
  best->threads.fetch_add(1, std::memory_order_relaxed);
  tc->arena = best;
  return tc.release();
}

}  // namespace

void flush_bin(Bin& b, std::uint32_t n) noexcept {
  const std::uint32_t count = b.count();
  n = std::min(n, count);
  if (n == 0) return;
  flush_slots(b.slots, n);
  std::memmove(b.slots, b.slots + n, (count - n) * sizeof(ByteBufStorage*));
  b.set_count(count - n);
}

void sweep(ThreadCache* tc) noexcept {
  PooledByteBufAllocator::State* st = tc->owner;
  tc->ops_until_sweep = st->options.cache_trim_interval;
  const std::uint64_t epoch = st->trim_epoch.load(std::memory_order_relaxed);
  const bool flush_everything = epoch != tc->seen_trim_epoch;
  tc->seen_trim_epoch = epoch;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    Bin& b = tc->bins[cls];
    BinSweep& sw = tc->sweep_state[cls];
    const std::uint64_t hits = b.hits.load(std::memory_order_relaxed);
    const std::uint64_t allocs = hits - sw.hits_at_sweep + sw.misses_since_sweep;
    const std::uint32_t count = b.count();
    const std::uint32_t unused = count > allocs ? static_cast<std::uint32_t>(count - allocs) : 0;
    flush_bin(b, flush_everything ? count : unused);
    sw.hits_at_sweep = hits;
    sw.misses_since_sweep = 0;
  }
}

ThreadCache* cache_slow(PooledByteBufAllocator::State* st) noexcept {
  if (t_exiting || t_caches_off || !st->options.thread_caches) return nullptr;
  for (ThreadCache* tc : t_caches.caches) {
    if (tc->owner_id == st->id) {
      t_fast = {st->id, tc};
      return tc;
    }
  }
  try {
    std::lock_guard<std::mutex> lock(registry_mutex());
    // Drop caches of allocators that are gone.
    auto& v = t_caches.caches;
    for (std::size_t i = 0; i < v.size();) {
      if (v[i]->owner == nullptr) {
        delete v[i];
        v[i] = v.back();
        v.pop_back();
      } else {
        ++i;
      }
    }
    ThreadCache* tc = create_cache(st);
    v.push_back(tc);
    tc->reg_next = st->caches;
    if (st->caches != nullptr) st->caches->reg_prev = tc;
    st->caches = tc;
    t_fast = {st->id, tc};
    return tc;
  } catch (...) {
    return nullptr;  // out of memory: this thread works without a cache
  }
}

void flush_current_thread_cache(PooledByteBufAllocator::State* st) noexcept {
  if (t_exiting) return;
  for (ThreadCache* tc : t_caches.caches) {
    if (tc->owner_id == st->id) {
      flush_all(tc);
      tc->seen_trim_epoch = st->trim_epoch.load(std::memory_order_relaxed);
    }
  }
}

void set_current_thread_caches(bool enabled) noexcept {
  if (t_exiting) return;
  t_caches_off = !enabled;
  t_fast = {0, nullptr};  // the next operation asks cache_slow, which sees the setting
  if (enabled) return;
  std::lock_guard<std::mutex> lock(registry_mutex());  // an allocator's destructor may detach them meanwhile
  for (ThreadCache* tc : t_caches.caches) {
    if (tc->owner != nullptr) flush_all(tc);
  }
}

bool current_thread_caches() noexcept { return !t_caches_off; }

std::size_t detach_thread_caches(PooledByteBufAllocator::State* st, std::unordered_set<const void*>& cached_blocks) {
  std::size_t cached = 0;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (ThreadCache* tc = st->caches; tc != nullptr; tc = tc->reg_next) {
      for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
        const Bin& b = tc->bins[cls];
        const std::uint32_t n = b.count();
        cached += n * kClassInfo[cls].capacity;
        cached_blocks.insert(b.slots, b.slots + n);
      }
      tc->owner = nullptr;  // the thread deletes it at its next lookup or at exit
      tc->arena->threads.fetch_sub(1, std::memory_order_relaxed);
      st->retired_hits += tc->hits();
      st->retired_misses += tc->misses.load(std::memory_order_relaxed);
    }
    st->caches = nullptr;
  }
  if (t_fast.id == st->id) t_fast = {0, nullptr};
  return cached;
}

}  // namespace weft::pool
