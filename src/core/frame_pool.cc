#include "weft/core/frame_pool.h"

#include <sanitizer/asan_interface.h>

#include <new>

namespace weft::frame_pool {
namespace {

constexpr std::size_t kClasses = kMaxPooledSize / kGranule;

struct FreeBlock {
  FreeBlock* next;
};

// Under ASan a block waiting in a list is poisoned past its link: a use after its free is still
// reported (as a use after poison) though the block never went back to the heap. The link stays
// readable because LeakSanitizer does not follow pointers out of poisoned words: with it poisoned,
// the blocks behind the first in a live thread's list were reported leaked at exit (weft_client_tests
// under ASan). Without ASan these do nothing.
void poison(FreeBlock* b, std::size_t cls) noexcept {
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(b) + sizeof(FreeBlock), (cls + 1) * kGranule - sizeof(FreeBlock));
}
void unpoison(FreeBlock* b, std::size_t cls) noexcept { ASAN_UNPOISON_MEMORY_REGION(b, (cls + 1) * kGranule); }

// Trivially destructible, so the fast path needs no thread_local guard.
struct Lists {
  FreeBlock* head[kClasses];
  std::uint32_t count[kClasses];
  std::uint64_t hits;
  std::uint64_t misses;
  std::size_t cached_bytes;
  bool exiting;
};
constinit thread_local Lists t_lists{};

// Frees this thread's lists at thread exit; touched on the slow path so that it gets registered.
struct Reaper {
  ~Reaper() {
    t_lists.exiting = true;
    for (std::size_t cls = 0; cls < kClasses; ++cls) {
      while (FreeBlock* b = t_lists.head[cls]) {
        unpoison(b, cls);
        t_lists.head[cls] = b->next;
        ::operator delete(b);
      }
      t_lists.count[cls] = 0;
    }
    t_lists.cached_bytes = 0;
  }
};
thread_local Reaper t_reaper;

constexpr std::size_t class_of(std::size_t size) noexcept { return (size - 1) / kGranule; }
constexpr std::size_t class_size(std::size_t cls) noexcept { return (cls + 1) * kGranule; }
constexpr std::uint32_t max_cached(std::size_t cls) noexcept {
  return static_cast<std::uint32_t>(kMaxCachedBytesPerClass / class_size(cls));
}

}  // namespace

void* allocate(std::size_t size) {
  if (size == 0) size = 1;
  Lists& lists = t_lists;
  if (size > kMaxPooledSize) {
    ++lists.misses;
    return ::operator new(size);
  }
  const std::size_t cls = class_of(size);
  if (FreeBlock* b = lists.head[cls]) {
    unpoison(b, cls);
    lists.head[cls] = b->next;
    --lists.count[cls];
    lists.cached_bytes -= class_size(cls);
    ++lists.hits;
    return b;
  }
  ++lists.misses;
  (void)&t_reaper;
  return ::operator new(class_size(cls));
}

void deallocate(void* block, std::size_t size) noexcept {
  if (block == nullptr) return;
  if (size == 0) size = 1;
  Lists& lists = t_lists;
  if (size > kMaxPooledSize) {
    ::operator delete(block);
    return;
  }
  const std::size_t cls = class_of(size);
  if (lists.exiting || lists.count[cls] >= max_cached(cls) ||
      lists.cached_bytes + class_size(cls) > kMaxCachedBytesPerThread) {
    ::operator delete(block);
    return;
  }
  if (lists.cached_bytes == 0) (void)&t_reaper;  // a thread that only frees must also reap
  auto* b = static_cast<FreeBlock*>(block);
  b->next = lists.head[cls];
  lists.head[cls] = b;
  poison(b, cls);
  ++lists.count[cls];
  lists.cached_bytes += class_size(cls);
}

Stats thread_stats() noexcept { return Stats{t_lists.hits, t_lists.misses, t_lists.cached_bytes}; }

}  // namespace weft::frame_pool
