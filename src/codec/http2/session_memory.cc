#include "session_memory.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define WEFT_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define WEFT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define WEFT_POISON(p, n) ((void)(p), (void)(n))
#define WEFT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace weft::http2::detail {

namespace {

// A block: a 16-byte header (its capacity; the free list's link while it is free), then the
// payload nghttp2 sees, 16-byte aligned as malloc's.
//
//   [ capacity | next ][ payload: capacity bytes ]
//   ^ malloc'd         ^ returned to nghttp2
constexpr std::size_t kHeader = 16;
constexpr std::size_t kGranule = 32;   // payload sizes 32, 64, ... 512
constexpr std::size_t kClasses = 16;
constexpr std::size_t kSmallest = kGranule;
constexpr std::size_t kLargestPooled = kGranule * kClasses;
constexpr std::uint32_t kMaxFreePerClass = 1024;

struct BlockHeader {
  std::size_t capacity;
  BlockHeader* next;  // while on a free list
};
static_assert(sizeof(BlockHeader) == kHeader);

struct Pool {
  BlockHeader* free[kClasses] = {};
  std::uint32_t count[kClasses] = {};
  ~Pool();
};

thread_local bool pool_gone = false;  // trivially destructible: readable after ~Pool
thread_local Pool pool;

Pool::~Pool() {
  pool_gone = true;
  for (std::size_t c = 0; c < kClasses; ++c) {
    while (BlockHeader* b = free[c]) {
      WEFT_UNPOISON(b, kHeader);
      WEFT_UNPOISON(b, kHeader + b->capacity);
      free[c] = b->next;
      std::free(b);
    }
  }
}

void* payload(BlockHeader* b) noexcept { return reinterpret_cast<std::byte*>(b) + kHeader; }
BlockHeader* header(void* p) noexcept { return reinterpret_cast<BlockHeader*>(static_cast<std::byte*>(p) - kHeader); }

void* allocate(std::size_t size, void*) noexcept {
  if (size > kLargestPooled) {
    if (size > SIZE_MAX - kHeader) return nullptr;
    auto* b = static_cast<BlockHeader*>(std::malloc(kHeader + size));
    if (b == nullptr) return nullptr;
    b->capacity = size;
    return payload(b);
  }
  const std::size_t c = size <= kSmallest ? 0 : (size - 1) / kGranule;
  if (!pool_gone) {
    if (BlockHeader* b = pool.free[c]) {
      WEFT_UNPOISON(b, kHeader);
      pool.free[c] = b->next;
      --pool.count[c];
      WEFT_UNPOISON(payload(b), b->capacity);
      return payload(b);
    }
  }
  const std::size_t capacity = (c + 1) * kGranule;
  auto* b = static_cast<BlockHeader*>(std::malloc(kHeader + capacity));
  if (b == nullptr) return nullptr;
  b->capacity = capacity;
  return payload(b);
}

void release(void* p, void*) noexcept {
  if (p == nullptr) return;
  BlockHeader* b = header(p);
  const std::size_t capacity = b->capacity;
  if (capacity > kLargestPooled || pool_gone) {
    std::free(b);
    return;
  }
  const std::size_t c = capacity / kGranule - 1;
  if (pool.count[c] >= kMaxFreePerClass) {
    std::free(b);
    return;
  }
  b->next = pool.free[c];
  pool.free[c] = b;
  ++pool.count[c];
  WEFT_POISON(b, kHeader + capacity);
}

void* allocate_zeroed(std::size_t n, std::size_t size, void* user) noexcept {
  if (size != 0 && n > SIZE_MAX / size) return nullptr;
  void* p = allocate(n * size, user);
  if (p != nullptr) std::memset(p, 0, n * size);
  return p;
}

void* reallocate(void* p, std::size_t size, void* user) noexcept {
  if (p == nullptr) return allocate(size, user);
  const std::size_t capacity = header(p)->capacity;
  if (size <= capacity) return p;
  void* q = allocate(size, user);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, capacity);
  release(p, user);
  return q;
}

nghttp2_mem memory{nullptr, allocate, release, allocate_zeroed, reallocate};

}  // namespace

nghttp2_mem* session_memory() noexcept { return &memory; }

}  // namespace weft::http2::detail
