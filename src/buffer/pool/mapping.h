#pragma once
// Memory straight from the kernel: chunks, and the buffers larger than the biggest size class, each
// of which is a mapping of its own (its ByteBufStorage header first, the data after it).

#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "size_classes.h"
#include "weft/buffer/byte_buf.h"

namespace weft::pool {

// A mapped (large) buffer: header at the start of the mapping, data after it.
inline constexpr std::size_t kLargeHeader = 64;
// The allocator_tag of a mapped buffer (a pooled one holds its size class).
inline constexpr std::uint32_t kLargeTag = 0xFFFF;
static_assert(kSlotHeader <= kLargeHeader);

inline std::size_t os_page() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// The capacity of a mapped buffer for n bytes: whole OS pages with the header, minus the header.
inline std::size_t large_capacity(std::size_t n) noexcept {
  const std::size_t page = os_page();
  return (n + kLargeHeader + page - 1) / page * page - kLargeHeader;
}

// `bytes` of fresh zeroed memory (not reserved in swap), or null.
void* map_memory(std::size_t bytes) noexcept;

// A mapped buffer of `capacity` bytes (large_capacity()) whose header names `owner`, or null.
ByteBufStorage* map_large(ByteBufAllocator* owner, std::size_t capacity) noexcept;

}  // namespace weft::pool
