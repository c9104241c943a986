#pragma once
// The size classes of PooledByteBufAllocator (Netty's SizeClasses): 52 classes, 16..128 bytes in steps
// of 16, then 4 per power of two up to 256 KiB; per class, the run a chunk carves for it and the size
// of its thread cache bin. Everything here is computed at compile time.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft::pool {

inline constexpr std::size_t kClasses = PooledByteBufAllocator::kSizeClassCount;
inline constexpr std::size_t kPage = PooledByteBufAllocator::kPageSize;
inline constexpr std::size_t kPagesPerChunk = PooledByteBufAllocator::kChunkSize / kPage;  // 512
// Every pooled slot starts with its ByteBufStorage header; the data follows, 16-byte aligned.
inline constexpr std::size_t kSlotHeader = (sizeof(ByteBufStorage) + 15) & ~std::size_t{15};

constexpr std::size_t class_capacity(std::size_t i) noexcept {
  if (i < 8) return (i + 1) * 16;
  const std::size_t g = 7 + (i - 8) / 4;
  const std::size_t k = (i - 8) % 4 + 1;
  return (std::size_t{1} << g) + (k << (g - 2));
}

// On the allocation fast path: a few instructions, no table, no branch. With x = n - 1 and
// 2^g <= x < 2^(g+1), the class is 8 + 4 (g - 7) + the quarter of [2^g, 2^(g+1)) that x falls in,
// (x >> (g - 2)) - 4; with g taken as 6 below 128 the same formula gives x >> 4 (steps of 16).
// x's low bit does not change the result, and setting it spares bit_width a zero.
constexpr std::size_t class_index(std::size_t n) noexcept {
  const std::size_t x = (n - (n != 0)) | 1;
  const std::size_t g = std::max<std::size_t>(static_cast<std::size_t>(std::bit_width(x)), 7) - 1;
  return 4 * g - 24 + (x >> (g - 2));
}

constexpr bool class_index_inverts_class_capacity() {
  for (std::size_t i = 0; i < kClasses; ++i) {
    if (class_index(class_capacity(i)) != i || class_index(class_capacity(i) + 1) != i + 1) return false;
  }
  return class_index(0) == 0 && class_index(1) == 0;
}
static_assert(class_index_inverts_class_capacity());
static_assert(class_capacity(kClasses - 1) == PooledByteBufAllocator::kMaxPooledCapacity);
static_assert(class_index(PooledByteBufAllocator::kMaxPooledCapacity) == kClasses - 1);
// Classes up to kMaxCachedCapacity have thread cache bins; they are the first kCachedClasses.
inline constexpr std::size_t kCachedClasses = class_index(PooledByteBufAllocator::kMaxCachedCapacity) + 1;
static_assert(class_capacity(kCachedClasses - 1) == PooledByteBufAllocator::kMaxCachedCapacity);

// The allocation fast path's class lookup for cached sizes: one byte load instead of class_index's
// arithmetic. Every class capacity up to kMaxCachedCapacity is a multiple of 16, so all n in
// (16 (u - 1), 16 u] share a class, and cached_class(n) reads entry u = ceil(n / 16).
inline constexpr std::size_t kCachedClassUnits = PooledByteBufAllocator::kMaxCachedCapacity / 16 + 1;
constexpr std::array<std::uint8_t, kCachedClassUnits> make_cached_class_table() {
  std::array<std::uint8_t, kCachedClassUnits> t{};
  for (std::size_t u = 0; u < kCachedClassUnits; ++u) t[u] = static_cast<std::uint8_t>(class_index(16 * u));
  return t;
}
inline constexpr std::array<std::uint8_t, kCachedClassUnits> kCachedClassOf16 = make_cached_class_table();
// n <= kMaxCachedCapacity.
constexpr std::size_t cached_class(std::size_t n) noexcept { return kCachedClassOf16[(n + 15) >> 4]; }

constexpr bool cached_class_matches_class_index() {
  for (std::size_t i = 0; i < kCachedClasses; ++i) {
    const std::size_t cap = class_capacity(i);
    if (cap % 16 != 0) return false;
    if (cached_class(cap) != i || cached_class(cap - 1) != i ||
        (i + 1 < kCachedClasses && cached_class(cap + 1) != i + 1))
      return false;
  }
  return cached_class(0) == 0 && cached_class(1) == 0;
}
static_assert(cached_class_matches_class_index());

struct ClassInfo {
  std::uint32_t capacity;
  std::uint32_t stride;  // header + capacity
  std::uint32_t run_pages;
  std::uint32_t run_slots;
  std::uint32_t cache_max;  // thread cache bin size (0 for uncached classes)
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
    t[i].cache_max =
        i < kCachedClasses ? static_cast<std::uint32_t>(std::clamp<std::size_t>((128 * 1024) / cap, 8, 512)) : 0;
  }
  return t;
}
inline constexpr std::array<ClassInfo, kClasses> kClassInfo = make_class_table();

}  // namespace weft::pool
