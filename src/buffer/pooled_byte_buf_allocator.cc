#include "weft/buffer/pooled_byte_buf_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "weft/buffer/leak_detector.h"

namespace weft {

struct Arena;

namespace {

using Self = PooledByteBufAllocator;

constexpr std::size_t kClasses = Self::kSizeClassCount;
constexpr std::size_t kPage = Self::kPageSize;
constexpr std::size_t kPagesPerChunk = Self::kChunkSize / kPage;  // 512
constexpr std::size_t kBitmapWords = kPagesPerChunk / 64;
// Every pooled slot starts with its ByteBufStorage header; the data follows, 16-byte aligned.
constexpr std::size_t kSlotHeader = (sizeof(ByteBufStorage) + 15) & ~std::size_t{15};
// A mapped (large) buffer: header at the start of the mapping, data after it.
constexpr std::size_t kLargeHeader = 64;
constexpr std::uint32_t kLargeTag = 0xFFFF;
static_assert(kSlotHeader <= kLargeHeader);

constexpr std::size_t class_capacity(std::size_t i) noexcept {
  if (i < 8) return (i + 1) * 16;
  const std::size_t g = 7 + (i - 8) / 4;
  const std::size_t k = (i - 8) % 4 + 1;
  return (std::size_t{1} << g) + (k << (g - 2));
}

constexpr std::size_t class_index(std::size_t n) noexcept {
  if (n <= 128) return n == 0 ? 0 : (n + 15) / 16 - 1;
  const std::size_t g = static_cast<std::size_t>(std::bit_width(n - 1)) - 1;  // 2^g < n <= 2^(g+1)
  const std::size_t k = (n - (std::size_t{1} << g) + (std::size_t{1} << (g - 2)) - 1) >> (g - 2);
  return 8 + (g - 7) * 4 + k - 1;
}

static_assert(class_capacity(kClasses - 1) == Self::kMaxPooledCapacity);
static_assert(class_index(Self::kMaxPooledCapacity) == kClasses - 1);
constexpr std::size_t kCachedClasses = class_index(Self::kMaxCachedCapacity) + 1;
static_assert(class_capacity(kCachedClasses - 1) == Self::kMaxCachedCapacity);

struct ClassInfo {
  std::uint32_t capacity;
  std::uint32_t stride;      // header + capacity
  std::uint32_t run_pages;
  std::uint32_t run_slots;
  std::uint32_t cache_max;   // thread cache bin size (0 for uncached classes)
};

constexpr std::array<ClassInfo, kClasses> make_class_table() {
  std::array<ClassInfo, kClasses> t{};
  for (std::size_t i = 0; i < kClasses; ++i) {
    const std::size_t cap = class_capacity(i);
    const std::size_t stride = kSlotHeader + cap;
    const std::size_t run_bytes = std::max<std::size_t>(64 * 1024, 4 * stride);
    const std::size_t pages = (run_bytes + kPage - 1) / kPage;
    t[i].capacity = static_cast<std::uint32_t>(cap);
    t[i].stride = static_cast<std::uint32_t>(stride);
    t[i].run_pages = static_cast<std::uint32_t>(pages);
    t[i].run_slots = static_cast<std::uint32_t>(pages * kPage / stride);
    t[i].cache_max = i < kCachedClasses
                         ? static_cast<std::uint32_t>(std::clamp<std::size_t>((128 * 1024) / cap, 8, 512))
                         : 0;
  }
  return t;
}
constexpr std::array<ClassInfo, kClasses> kClassInfo = make_class_table();

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void* map_memory(std::size_t bytes) noexcept {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

std::size_t os_page() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// A mapped buffer of `capacity` bytes (normalized) whose header names `owner`, or null.
ByteBufStorage* map_large(ByteBufAllocator* owner, std::size_t capacity) noexcept {
  void* mem = map_memory(capacity + kLargeHeader);
  if (mem == nullptr) return nullptr;
  auto* bytes = static_cast<std::uint8_t*>(mem);
  auto* s = new (mem) ByteBufStorage(owner, bytes + kLargeHeader, capacity);
  s->allocator_tag = kLargeTag;
  s->allocator_handle = capacity + kLargeHeader;
  return s;
}

// Where the blocks of a PooledByteBufAllocator destroyed with buffers alive go: their headers are
// pointed here, so that a late release never reaches the dead allocator. A pooled slot stays in its
// chunk, which stays mapped; a mapped buffer, and one that grew after its allocator died, is
// unmapped. Never destroyed.
class OrphanedBlocks final : public ByteBufAllocator {
 public:
  static OrphanedBlocks& instance() noexcept {
    alignas(OrphanedBlocks) static unsigned char memory[sizeof(OrphanedBlocks)];
    static OrphanedBlocks* const sink = new (memory) OrphanedBlocks();
    return *sink;
  }

 protected:
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override {
    if (min_capacity > kMaxCapacityLimit) throw std::bad_alloc();
    const std::size_t page = os_page();
    const std::size_t capacity = (min_capacity + kLargeHeader + page - 1) / page * page - kLargeHeader;
    ByteBufStorage* s = map_large(this, capacity);
    if (s == nullptr) throw std::bad_alloc();
    return s;
  }
  void free_storage(ByteBufStorage* storage) noexcept override {
    if (storage->allocator_tag == kLargeTag) ::munmap(static_cast<void*>(storage), storage->allocator_handle);
  }
};

struct Chunk;

// A span of pages of one chunk carved into slots of one size class. Lives in its chunk's run table.
struct Run {
  Chunk* chunk;
  std::uint8_t* base;
  void* free_list;          // released slots (next pointer in the slot's first bytes)
  Run* prev;
  Run* next;                // in the arena's list of runs of this class with free slots
  std::uint32_t first_page;
  std::uint32_t pages;
  std::uint32_t slot_count;
  std::uint32_t free_count;  // free_list entries + never used slots
  std::uint32_t fresh;       // next never used slot (slots are carved lazily: no page is touched early)
  std::uint16_t cls;
  bool in_list;
  bool idle_marked;          // fully free at the last maintenance pass
};

// A 4 MiB mapping; this header (and the run table) occupies its first pages.
struct Chunk {
  Arena* arena;
  std::uint8_t* mem;
  Chunk* prev;
  Chunk* next;
  std::int64_t empty_since;  // 0 while it holds a run
  std::uint32_t free_pages;
  std::uint64_t used[kBitmapWords];
  std::uint64_t dirty[kBitmapWords];  // freed since the last purge (may still be resident)
  Run runs[kPagesPerChunk];           // indexed by first page
};
constexpr std::size_t kHeaderPages = (sizeof(Chunk) + kPage - 1) / kPage;
constexpr std::size_t kUsablePages = kPagesPerChunk - kHeaderPages;
static_assert(kClassInfo[kClasses - 1].run_pages <= kUsablePages);

bool page_used(const std::uint64_t* bits, std::size_t i) { return (bits[i / 64] >> (i % 64)) & 1u; }
void set_pages(std::uint64_t* bits, std::size_t first, std::size_t n, bool value) {
  for (std::size_t i = first; i < first + n; ++i) {
    const std::uint64_t m = std::uint64_t{1} << (i % 64);
    if (value) bits[i / 64] |= m; else bits[i / 64] &= ~m;
  }
}

// First index of n consecutive free pages, or -1.
long find_free_pages(const Chunk* c, std::size_t n) {
  std::size_t run = 0;
  for (std::size_t i = kHeaderPages; i < kPagesPerChunk; ++i) {
    if (i % 64 == 0 && c->used[i / 64] == ~std::uint64_t{0}) {
      run = 0;
      i += 63;
      continue;
    }
    if (page_used(c->used, i)) {
      run = 0;
    } else if (++run == n) {
      return static_cast<long>(i + 1 - n);
    }
  }
  return -1;
}

}  // namespace

struct ThreadCache;

// ---------------------------------------------------------------------------------------------
// Arena: everything under `mutex`.
// ---------------------------------------------------------------------------------------------
struct Arena {
  std::mutex mutex;
  std::size_t index = 0;
  PooledByteBufAllocator::State* state = nullptr;
  std::atomic<std::size_t> threads{0};
  Run* partial[kClasses] = {};  // runs with free slots
  Chunk* chunks = nullptr;
  Chunk* hint = nullptr;        // where the last run went
  std::size_t chunk_count = 0;
  std::size_t empty_chunks = 0;
  std::size_t runs = 0;
  std::size_t used_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::int64_t next_maintenance = 0;
  std::int64_t release_delay_ns = 0;
  // Chunks that must stay mapped (the allocator died with buffers alive).
  bool keep_mappings = false;

  ~Arena() {
    if (keep_mappings) return;
    for (Chunk* c = chunks; c != nullptr;) {
      Chunk* next = c->next;
      ::munmap(c->mem, Self::kChunkSize);
      c = next;
    }
  }

  // ---- under mutex ----

  void list_push(Run* r) {
    r->prev = nullptr;
    r->next = partial[r->cls];
    if (r->next != nullptr) r->next->prev = r;
    partial[r->cls] = r;
    r->in_list = true;
  }
  void list_remove(Run* r) {
    if (r->prev != nullptr) r->prev->next = r->next; else partial[r->cls] = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    r->in_list = false;
  }

  Chunk* new_chunk() {
    void* mem = map_memory(Self::kChunkSize);
    if (mem == nullptr) return nullptr;
    auto* c = new (mem) Chunk;
    c->arena = this;
    c->mem = static_cast<std::uint8_t*>(mem);
    c->prev = nullptr;
    c->next = chunks;
    if (chunks != nullptr) chunks->prev = c;
    chunks = c;
    c->empty_since = 0;
    c->free_pages = kUsablePages;
    std::memset(c->used, 0, sizeof c->used);
    std::memset(c->dirty, 0, sizeof c->dirty);
    set_pages(c->used, 0, kHeaderPages, true);
    ++chunk_count;
    return c;
  }

  void unmap_chunk(Chunk* c) {
    if (c->prev != nullptr) c->prev->next = c->next; else chunks = c->next;
    if (c->next != nullptr) c->next->prev = c->prev;
    if (hint == c) hint = nullptr;
    --chunk_count;
    if (c->empty_since != 0) --empty_chunks;
    ::munmap(c->mem, Self::kChunkSize);
  }

  Run* new_run(std::size_t cls) {
    const ClassInfo& info = kClassInfo[cls];
    Chunk* chunk = nullptr;
    long first = -1;
    if (hint != nullptr && hint->free_pages >= info.run_pages) {
      first = find_free_pages(hint, info.run_pages);
      if (first >= 0) chunk = hint;
    }
    if (chunk == nullptr) {
      // Prefer chunks in use, so that empty ones can go back to the OS.
      for (int pass = 0; pass < 2 && chunk == nullptr; ++pass) {
        for (Chunk* c = chunks; c != nullptr; c = c->next) {
          if ((c->empty_since != 0) != (pass == 1) || c->free_pages < info.run_pages) continue;
          first = find_free_pages(c, info.run_pages);
          if (first >= 0) {
            chunk = c;
            break;
          }
        }
      }
    }
    if (chunk == nullptr) {
      chunk = new_chunk();
      if (chunk == nullptr) return nullptr;
      first = static_cast<long>(kHeaderPages);
    }
    hint = chunk;
    if (chunk->empty_since != 0) {
      chunk->empty_since = 0;
      --empty_chunks;
    }
    const auto fp = static_cast<std::size_t>(first);
    set_pages(chunk->used, fp, info.run_pages, true);
    set_pages(chunk->dirty, fp, info.run_pages, false);
    chunk->free_pages -= info.run_pages;
    Run* r = &chunk->runs[fp];
    r->chunk = chunk;
    r->base = chunk->mem + fp * kPage;
    r->free_list = nullptr;
    r->prev = r->next = nullptr;
    r->first_page = static_cast<std::uint32_t>(fp);
    r->pages = info.run_pages;
    r->slot_count = info.run_slots;
    r->free_count = info.run_slots;
    r->fresh = 0;
    r->cls = static_cast<std::uint16_t>(cls);
    r->in_list = false;
    r->idle_marked = false;
    ++runs;
    list_push(r);
    return r;
  }

  void release_run(Run* r, std::int64_t now) {
    if (r->in_list) list_remove(r);
    Chunk* c = r->chunk;
    set_pages(c->used, r->first_page, r->pages, false);
    set_pages(c->dirty, r->first_page, r->pages, true);
    c->free_pages += r->pages;
    --runs;
    if (c->free_pages == kUsablePages) {
      c->empty_since = now;
      ++empty_chunks;
      if (release_delay_ns == 0) unmap_chunk(c);
    }
  }

  // A free slot of class cls with an initialised header, or null when out of memory.
  ByteBufStorage* take(std::size_t cls, PooledByteBufAllocator* owner) {
    Run* r = partial[cls];
    if (r == nullptr) {
      r = new_run(cls);
      if (r == nullptr) return nullptr;
    }
    const ClassInfo& info = kClassInfo[cls];
    std::uint8_t* slot;
    if (r->free_list != nullptr) {
      slot = static_cast<std::uint8_t*>(r->free_list);
      r->free_list = *reinterpret_cast<void**>(slot);
    } else {
      slot = r->base + std::size_t{r->fresh++} * info.stride;
    }
    r->idle_marked = false;
    if (--r->free_count == 0) list_remove(r);
    used_bytes += info.capacity;
    ++allocations;
    auto* s = new (slot) ByteBufStorage(owner, slot + kSlotHeader, info.capacity);
    s->allocator_tag = static_cast<std::uint32_t>(cls);
    s->allocator_context = r;
    return s;
  }

  void give_back(ByteBufStorage* s, std::int64_t& now) {
    auto* r = static_cast<Run*>(s->allocator_context);
    const ClassInfo& info = kClassInfo[r->cls];
    used_bytes -= info.capacity;
    ++frees;
    auto* slot = reinterpret_cast<std::uint8_t*>(s);
    *reinterpret_cast<void**>(slot) = r->free_list;
    r->free_list = slot;
    ++r->free_count;
    if (!r->in_list) list_push(r);
    // A run that became fully free stays (a producer/consumer pair empties and refills runs all the
    // time: releasing and purging them would cost page faults); maintain() releases it once it has
    // stayed idle for two passes, trim() at once.
    (void)now;
  }

  // Releases idle runs and chunks. force: everything free goes back now (trim()).
  void maintain(std::int64_t now, bool force) {
    for (std::size_t cls = 0; cls < kClasses; ++cls) {
      for (Run* r = partial[cls]; r != nullptr;) {
        Run* next = r->next;
        if (r->free_count == r->slot_count) {
          if (force || r->idle_marked) release_run(r, now); else r->idle_marked = true;
        }
        r = next;
      }
    }
    for (Chunk* c = chunks; c != nullptr;) {
      Chunk* next = c->next;
      if (c->empty_since != 0 && (force || now - c->empty_since >= release_delay_ns)) {
        unmap_chunk(c);
      } else {
        purge(c);
      }
      c = next;
    }
    next_maintenance = now + std::max<std::int64_t>(release_delay_ns / 2, 5'000'000);
  }

  void maybe_maintain(std::int64_t& now) {
    if (now == 0) now = now_ns();
    if (now >= next_maintenance) maintain(now, false);
  }

  // Gives free, dirty pages of c back to the OS.
  static void purge(Chunk* c) {
    std::size_t i = kHeaderPages;
    while (i < kPagesPerChunk) {
      if (page_used(c->used, i) || !page_used(c->dirty, i)) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < kPagesPerChunk && !page_used(c->used, j) && page_used(c->dirty, j)) ++j;
      ::madvise(c->mem + i * kPage, (j - i) * kPage, MADV_DONTNEED);
      set_pages(c->dirty, i, j - i, false);
      i = j;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Thread caches
// ---------------------------------------------------------------------------------------------
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

struct PooledByteBufAllocator::State {
  PooledByteBufAllocator* self = nullptr;
  std::uint64_t id = 0;
  PooledAllocatorOptions options;
  std::vector<std::unique_ptr<Arena>> arenas;
  std::atomic<std::uint64_t> trim_epoch{0};
  std::atomic<std::size_t> large_count{0};
  std::atomic<std::size_t> large_bytes{0};
  // Live mapped buffers, so that destruction can find them (large_mutex). Each is a mapping of its
  // own: the lock and the set sit beside an mmap/munmap.
  std::mutex large_mutex;
  std::unordered_set<ByteBufStorage*> large_blocks;
  ThreadCache* caches = nullptr;  // registry (registry mutex)

  Arena& arena_for_uncached_thread() {
    const std::size_t h = std::hash<std::thread::id>{}(std::this_thread::get_id());
    return *arenas[h % arenas.size()];
  }
};

namespace {

// Guards the links between thread caches and allocators (creation, thread exit, allocator
// destruction, metrics). Never destroyed.
std::mutex& registry_mutex() {
  alignas(std::mutex) static unsigned char memory[sizeof(std::mutex)];
  static std::mutex* const m = new (memory) std::mutex();
  return *m;
}

std::atomic<std::uint64_t> g_next_id{1};

// The fast path's thread-local: trivially destructible, so access needs no guard.
struct TlsFast {
  std::uint64_t id;
  ThreadCache* cache;
};
constinit thread_local TlsFast t_fast{0, nullptr};
constinit thread_local bool t_exiting = false;
constinit thread_local bool t_caches_off = false;  // set_current_thread_caches(false)

void flush_slots(ByteBufStorage** items, std::size_t n) noexcept;

void flush_all(ThreadCache* tc) noexcept {
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    Bin& b = tc->bins[cls];
    const std::uint32_t n = b.count.load(std::memory_order_relaxed);
    if (n == 0) continue;
    flush_slots(b.slots, n);
    b.count.store(0, std::memory_order_relaxed);
    b.allocs_since_sweep = 0;
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
        if (tc->reg_prev != nullptr) tc->reg_prev->reg_next = tc->reg_next; else tc->owner->caches = tc->reg_next;
        if (tc->reg_next != nullptr) tc->reg_next->reg_prev = tc->reg_prev;
        tc->arena->threads.fetch_sub(1, std::memory_order_relaxed);
      }
      delete tc;
    }
    caches.clear();
  }
};
thread_local TlsCaches t_caches;

// Returns blocks (from any arenas of one allocator) to their arenas, one lock per run of blocks
// from the same arena.
void flush_slots(ByteBufStorage** items, std::size_t n) noexcept {
  std::size_t i = 0;
  while (i < n) {
    Arena* arena = static_cast<Run*>(items[i]->allocator_context)->chunk->arena;
    std::int64_t now = 0;
    std::lock_guard<std::mutex> lock(arena->mutex);
    for (; i < n && static_cast<Run*>(items[i]->allocator_context)->chunk->arena == arena; ++i) {
      arena->give_back(items[i], now);
    }
    arena->maybe_maintain(now);
  }
}

// Removes the oldest n blocks of a bin.
void flush_bin(Bin& b, std::uint32_t n) noexcept {
  const std::uint32_t count = b.count.load(std::memory_order_relaxed);
  n = std::min(n, count);
  if (n == 0) return;
  flush_slots(b.slots, n);
  std::memmove(b.slots, b.slots + n, (count - n) * sizeof(ByteBufStorage*));
  b.count.store(count - n, std::memory_order_relaxed);
}

// Every cache_trim_interval operations: blocks not reused since the last sweep go back.
void sweep(ThreadCache* tc) noexcept {
  PooledByteBufAllocator::State* st = tc->owner;
  tc->ops_until_sweep = st->options.cache_trim_interval;
  const std::uint64_t epoch = st->trim_epoch.load(std::memory_order_relaxed);
  const bool flush_everything = epoch != tc->seen_trim_epoch;
  tc->seen_trim_epoch = epoch;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    Bin& b = tc->bins[cls];
    const std::uint32_t count = b.count.load(std::memory_order_relaxed);
    const std::uint32_t unused = count > b.allocs_since_sweep ? count - b.allocs_since_sweep : 0;
    flush_bin(b, flush_everything ? count : unused);
    b.allocs_since_sweep = 0;
  }
}

ThreadCache* create_cache(PooledByteBufAllocator::State* st) {
  auto tc = std::make_unique<ThreadCache>();
  tc->owner = st;
  tc->owner_id = st->id;
  std::size_t total = 0;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) total += kClassInfo[cls].cache_max;
  tc->memory = std::make_unique<ByteBufStorage*[]>(total);
  std::size_t offset = 0;
  for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
    tc->bins[cls].slots = tc->memory.get() + offset;
    tc->bins[cls].max = kClassInfo[cls].cache_max;
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

// The calling thread's cache for st, created on first use; null when caches are off or the thread is
// exiting.
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

inline ThreadCache* cache_for(PooledByteBufAllocator::State* st, std::uint64_t id) noexcept {
  if (t_fast.id == id) [[likely]] return t_fast.cache;
  return cache_slow(st);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PooledByteBufAllocator
// ---------------------------------------------------------------------------------------------

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
    auto a = std::make_unique<Arena>();
    a->index = i;
    a->state = state_;
    a->release_delay_ns = std::max<std::int64_t>(delay_ns, 0);
    state_->arenas.push_back(std::move(a));
  }
}

namespace {

// Points the header of every block still alive at OrphanedBlocks. Alive: handed out, neither on its
// run's free list nor in a thread cache (`cached`). Slow path: only when destroyed with buffers alive.
void orphan_live_blocks(PooledByteBufAllocator::State* st, const std::unordered_set<const void*>& cached) {
  ByteBufAllocator* const sink = &OrphanedBlocks::instance();
  for (auto& a : st->arenas) {
    for (Chunk* c = a->chunks; c != nullptr; c = c->next) {
      for (std::size_t page = kHeaderPages; page < kPagesPerChunk;) {
        if (!page_used(c->used, page)) {
          ++page;
          continue;
        }
        Run& r = c->runs[page];  // pages in use come in runs; the first page indexes its run
        std::unordered_set<const void*> free_slots;
        for (void* p = r.free_list; p != nullptr; p = *static_cast<void**>(p)) free_slots.insert(p);
        const std::size_t stride = kClassInfo[r.cls].stride;
        for (std::uint32_t k = 0; k < r.fresh; ++k) {
          std::uint8_t* slot = r.base + std::size_t{k} * stride;
          if (!free_slots.contains(slot) && !cached.contains(slot)) reinterpret_cast<ByteBufStorage*>(slot)->allocator = sink;
        }
        page += r.pages;
      }
    }
  }
  std::lock_guard<std::mutex> lock(st->large_mutex);
  for (ByteBufStorage* s : st->large_blocks) s->allocator = sink;
}

}  // namespace

PooledByteBufAllocator::~PooledByteBufAllocator() {
  std::size_t cached = 0;
  std::unordered_set<const void*> cached_blocks;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (ThreadCache* tc = state_->caches; tc != nullptr; tc = tc->reg_next) {
      for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
        const Bin& b = tc->bins[cls];
        const std::uint32_t n = b.count.load(std::memory_order_relaxed);
        cached += n * kClassInfo[cls].capacity;
        cached_blocks.insert(b.slots, b.slots + n);
      }
      tc->owner = nullptr;  // the thread deletes it at its next lookup or at exit
      tc->arena->threads.fetch_sub(1, std::memory_order_relaxed);
    }
    state_->caches = nullptr;
  }
  if (t_fast.id == id_) t_fast = {0, nullptr};
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
    orphan_live_blocks(state_, cached_blocks);
  }
  delete state_;
}

std::size_t PooledByteBufAllocator::normalize_capacity(std::size_t n) noexcept {
  if (n <= kMaxPooledCapacity) return class_capacity(class_index(n));
  const std::size_t page = os_page();
  return (n + kLargeHeader + page - 1) / page * page - kLargeHeader;
}

std::size_t PooledByteBufAllocator::size_class_index(std::size_t n) noexcept { return class_index(n); }
std::size_t PooledByteBufAllocator::size_class_capacity(std::size_t i) noexcept { return class_capacity(i); }
std::size_t PooledByteBufAllocator::arena_count() const noexcept { return state_->arenas.size(); }

namespace {

// The cache miss: refill half a bin from the thread's arena under one lock, hand out the last one.
[[gnu::noinline]] ByteBufStorage* refill_and_take(PooledByteBufAllocator* self, ThreadCache* tc, std::size_t cls) {
  Bin& b = tc->bins[cls];
  tc->misses.store(tc->misses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const std::uint32_t want = std::max<std::uint32_t>(1, b.max / 2);
  Arena* arena = tc->arena;
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
  b.count.store(got - 1, std::memory_order_relaxed);
  if (--tc->ops_until_sweep == 0) [[unlikely]] sweep(tc);
  return s;
}

}  // namespace

ByteBufStorage* PooledByteBufAllocator::allocate_storage(std::size_t min_capacity) {
  if (min_capacity <= kMaxCachedCapacity) [[likely]] {
    const std::size_t cls = class_index(min_capacity);
    ThreadCache* tc = cache_for(state_, id_);
    if (tc != nullptr) [[likely]] {
      Bin& b = tc->bins[cls];
      const std::uint32_t count = b.count.load(std::memory_order_relaxed);
      ++b.allocs_since_sweep;
      if (count == 0) [[unlikely]] return refill_and_take(this, tc, cls);
      ByteBufStorage* s = b.slots[count - 1];
      b.count.store(count - 1, std::memory_order_relaxed);
      tc->hits.store(tc->hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      s->refs.store(1, std::memory_order_relaxed);
      s->leak_record = nullptr;
      if (--tc->ops_until_sweep == 0) [[unlikely]] sweep(tc);
      return s;
    }
  }
  return allocate_slow(min_capacity);
}

ByteBufStorage* PooledByteBufAllocator::allocate_slow(std::size_t min_capacity) {
  if (min_capacity <= kMaxPooledCapacity) {
    const std::size_t cls = class_index(min_capacity);
    ThreadCache* tc = min_capacity <= kMaxCachedCapacity ? nullptr : cache_for(state_, id_);
    Arena& arena = tc != nullptr ? *tc->arena : state_->arena_for_uncached_thread();
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
  ByteBufStorage* s = map_large(this, capacity);
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
  if (storage->allocator_tag != kLargeTag || min_capacity <= kMaxPooledCapacity) {
    return ByteBufAllocator::reallocate_storage(storage, min_capacity, preserve);
  }
  if (min_capacity > kMaxCapacityLimit) throw std::bad_alloc();
  const std::size_t capacity = normalize_capacity(min_capacity);
  const std::size_t old_map = storage->allocator_handle;
  const std::size_t old_capacity = storage->capacity;
  std::lock_guard<std::mutex> lock(state_->large_mutex);
  // The node is reused for the new address, so that the registry cannot fail once the mapping moved.
  auto node = state_->large_blocks.extract(storage);
  void* mem = ::mremap(static_cast<void*>(storage), old_map, capacity + kLargeHeader, MREMAP_MAYMOVE);
  if (mem == MAP_FAILED) {
    state_->large_blocks.insert(std::move(node));
    throw std::bad_alloc();
  }
  auto* s = static_cast<ByteBufStorage*>(mem);  // the header moved with the mapping
  node.value() = s;
  state_->large_blocks.insert(std::move(node));
  s->data = static_cast<std::uint8_t*>(mem) + kLargeHeader;
  s->capacity = capacity;
  s->allocator_handle = capacity + kLargeHeader;
  state_->large_bytes.fetch_add(capacity - old_capacity, std::memory_order_relaxed);
  return s;
}

void PooledByteBufAllocator::free_storage(ByteBufStorage* storage) noexcept {
  const std::uint32_t tag = storage->allocator_tag;
  if (tag < kCachedClasses) [[likely]] {
    ThreadCache* tc = cache_for(state_, id_);
    if (tc != nullptr) [[likely]] {
      Bin& b = tc->bins[tag];
      const std::uint32_t count = b.count.load(std::memory_order_relaxed);
      if (count == b.max || --tc->ops_until_sweep == 0) [[unlikely]] return free_slow(storage);
      b.slots[count] = storage;
      b.count.store(count + 1, std::memory_order_relaxed);
      return;
    }
  }
  free_slow(storage);
}

void PooledByteBufAllocator::free_slow(ByteBufStorage* storage) noexcept {
  const std::uint32_t tag = storage->allocator_tag;
  if (tag < kCachedClasses) {
    ThreadCache* tc = cache_for(state_, id_);
    if (tc != nullptr) {
      Bin& b = tc->bins[tag];
      if (b.count.load(std::memory_order_relaxed) == b.max) flush_bin(b, b.max / 2);
      const std::uint32_t count = b.count.load(std::memory_order_relaxed);
      b.slots[count] = storage;
      b.count.store(count + 1, std::memory_order_relaxed);
      if (tc->ops_until_sweep == 0 || --tc->ops_until_sweep == 0) sweep(tc);
      return;
    }
  }
  if (tag == kLargeTag) {
    {
      std::lock_guard<std::mutex> lock(state_->large_mutex);
      state_->large_blocks.erase(storage);
    }
    state_->large_count.fetch_sub(1, std::memory_order_relaxed);
    state_->large_bytes.fetch_sub(storage->capacity, std::memory_order_relaxed);
    ::munmap(static_cast<void*>(storage), storage->allocator_handle);
    return;
  }
  Arena* arena = static_cast<Run*>(storage->allocator_context)->chunk->arena;
  std::lock_guard<std::mutex> lock(arena->mutex);
  std::int64_t now = 0;
  arena->give_back(storage, now);
  arena->maybe_maintain(now);
}

void PooledByteBufAllocator::trim_thread_cache() noexcept {
  if (t_exiting) return;
  for (ThreadCache* tc : t_caches.caches) {
    if (tc->owner_id == id_) {
      flush_all(tc);
      tc->seen_trim_epoch = state_->trim_epoch.load(std::memory_order_relaxed);
    }
  }
}

void PooledByteBufAllocator::set_current_thread_caches(bool enabled) noexcept {
  if (t_exiting) return;
  t_caches_off = !enabled;
  t_fast = {0, nullptr};  // the next operation asks cache_slow, which sees the setting
  if (enabled) return;
  std::lock_guard<std::mutex> lock(registry_mutex());  // an allocator's destructor may detach them meanwhile
  for (ThreadCache* tc : t_caches.caches) {
    if (tc->owner != nullptr) flush_all(tc);
  }
}

bool PooledByteBufAllocator::current_thread_caches() noexcept { return !t_caches_off; }

void PooledByteBufAllocator::trim() noexcept {
  state_->trim_epoch.fetch_add(1, std::memory_order_relaxed);
  trim_thread_cache();
  const std::int64_t now = now_ns();
  for (auto& a : state_->arenas) {
    std::lock_guard<std::mutex> lock(a->mutex);
    a->maintain(now, true);
  }
}

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
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (ThreadCache* tc = state_->caches; tc != nullptr; tc = tc->reg_next) {
      PoolThreadCacheMetrics cm;
      cm.arena = tc->arena->index;
      for (std::size_t cls = 0; cls < kCachedClasses; ++cls) {
        const std::size_t n = tc->bins[cls].count.load(std::memory_order_relaxed);
        cm.cached_buffers += n;
        cm.cached_bytes += n * kClassInfo[cls].capacity;
      }
      cm.hits = tc->hits.load(std::memory_order_relaxed);
      cm.misses = tc->misses.load(std::memory_order_relaxed);
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
  std::string out;
  char buf[256];
  std::size_t cached = 0;
  std::uint64_t hits = 0, misses = 0;
  for (const auto& c : thread_caches) {
    cached += c.cached_bytes;
    hits += c.hits;
    misses += c.misses;
  }
  std::snprintf(buf, sizeof buf,
                "pooled used=%zu mapped=%zu large=%zu/%zu arenas=%zu caches=%zu cached=%zu hits=%llu misses=%llu",
                used_bytes, mapped_bytes, large_buffers, large_bytes, arenas.size(), thread_caches.size(), cached,
                static_cast<unsigned long long>(hits), static_cast<unsigned long long>(misses));
  out += buf;
  for (const auto& a : arenas) {
    std::snprintf(buf, sizeof buf, " | arena%zu threads=%zu chunks=%zu empty=%zu runs=%zu used=%zu allocs=%llu frees=%llu",
                  a.index, a.threads, a.chunks, a.empty_chunks, a.runs, a.used_bytes,
                  static_cast<unsigned long long>(a.allocations), static_cast<unsigned long long>(a.frees));
    out += buf;
  }
  for (std::size_t i = 0; i < thread_caches.size(); ++i) {
    const auto& c = thread_caches[i];
    std::snprintf(buf, sizeof buf, " | cache%zu arena=%zu buffers=%zu bytes=%zu hits=%llu misses=%llu", i, c.arena,
                  c.cached_buffers, c.cached_bytes, static_cast<unsigned long long>(c.hits),
                  static_cast<unsigned long long>(c.misses));
    out += buf;
  }
  return out;
}

PooledByteBufAllocator& pooled_allocator() noexcept {
  // Constructed once, never destroyed: buffers held by static objects may be released after main().
  alignas(PooledByteBufAllocator) static unsigned char memory[sizeof(PooledByteBufAllocator)];
  static PooledByteBufAllocator* const instance = new (memory) PooledByteBufAllocator();
  return *instance;
}

}  // namespace weft
