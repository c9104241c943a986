#include "late_release_sink.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <new>

#include "allocator_state.h"
#include "chunk.h"
#include "mapping.h"
#include "size_classes.h"

namespace weft::pool {

LateReleaseSink& LateReleaseSink::instance() noexcept {
  alignas(LateReleaseSink) static unsigned char memory[sizeof(LateReleaseSink)];
  static LateReleaseSink* const sink = new (memory) LateReleaseSink();
  return *sink;
}

ByteBufStorage* LateReleaseSink::allocate_storage(std::size_t min_capacity) {
  if (min_capacity > kMaxCapacityLimit) throw std::bad_alloc();
  ByteBufStorage* s = map_large(this, large_capacity(min_capacity));
  if (s == nullptr) throw std::bad_alloc();
  return s;
}

void LateReleaseSink::free_storage(ByteBufStorage* storage) noexcept {
  if (storage->allocator_tag == kLargeTag) ::munmap(static_cast<void*>(storage), storage->allocator_handle);
}

void orphan_live_blocks(PooledByteBufAllocator::State* st, const std::unordered_set<const void*>& cached) {
  ByteBufAllocator* const sink = &LateReleaseSink::instance();
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
          if (!free_slots.contains(slot) && !cached.contains(slot))
            reinterpret_cast<ByteBufStorage*>(slot)->allocator = sink;
        }
        page += r.pages;
      }
    }
  }
  std::lock_guard<std::mutex> lock(st->large_mutex);
  for (ByteBufStorage* s : st->large_blocks) s->allocator = sink;
}

}  // namespace weft::pool
