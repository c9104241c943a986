#pragma once
// Chunks and runs (Netty's PoolChunk and PoolSubpage). A chunk is a 4 MiB mapping split into 8 KiB
// pages; its own first pages hold this header: two page bitmaps and the run table. A run is a span
// of pages carved into equal slots of one size class; it lives in the run table at its first page.
// A chunk and its runs belong to one arena and are used under its mutex.
//
//   chunk: [ Chunk header + run table | run (class 3) | run (class 20) ... | free pages ... ]
//   run:   [ slot | slot | ... ]   slot = ByteBufStorage header (kSlotHeader) + capacity bytes

#include <cstddef>
#include <cstdint>

#include "size_classes.h"

namespace weft::pool {

struct Arena;
struct Chunk;

inline constexpr std::size_t kBitmapWords = kPagesPerChunk / 64;

// A span of pages of one chunk carved into slots of one size class. Lives in its chunk's run table.
struct Run {
  Chunk* chunk;
  std::uint8_t* base;
  void* free_list;  // released slots (next pointer in the slot's first bytes)
  Run* prev;
  Run* next;  // in the arena's list of runs of this class with free slots
  std::uint32_t first_page;
  std::uint32_t pages;
  std::uint32_t slot_count;
  std::uint32_t free_count;  // free_list entries + never used slots
  std::uint32_t fresh;       // next never used slot (slots are carved lazily: no page is touched early)
  std::uint16_t cls;
  bool in_list;
  bool idle_marked;  // fully free at the last maintenance pass
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
inline constexpr std::size_t kHeaderPages = (sizeof(Chunk) + kPage - 1) / kPage;
inline constexpr std::size_t kUsablePages = kPagesPerChunk - kHeaderPages;
static_assert(kClassInfo[kClasses - 1].run_pages <= kUsablePages);

inline bool page_used(const std::uint64_t* bits, std::size_t i) { return (bits[i / 64] >> (i % 64)) & 1u; }
inline void set_pages(std::uint64_t* bits, std::size_t first, std::size_t n, bool value) {
  for (std::size_t i = first; i < first + n; ++i) {
    const std::uint64_t m = std::uint64_t{1} << (i % 64);
    if (value)
      bits[i / 64] |= m;
    else
      bits[i / 64] &= ~m;
  }
}

// First index of n consecutive free pages of c, or -1.
long find_free_pages(const Chunk* c, std::size_t n);

// Gives the free, dirty pages of c back to the OS.
void purge(Chunk* c);

}  // namespace weft::pool
