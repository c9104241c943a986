#include "chunk.h"

#include <sys/mman.h>

namespace weft::pool {

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

void purge(Chunk* c) {
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

}  // namespace weft::pool
