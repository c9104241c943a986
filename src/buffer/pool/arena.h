#pragma once
// An arena (Netty's PoolArena): a mutex, per-class lists of runs with free slots, and the chunks the
// runs are carved from. Thread caches refill from their arena and flush back to the arena whose chunk
// holds each block. Everything is used under `mutex`; take() and give_back() are inline because the
// cache refill and flush loops call them once per block.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "chunk.h"
#include "size_classes.h"
#include "weft/buffer/byte_buf.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft::pool {

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Arena {
  std::mutex mutex;
  std::size_t index = 0;
  PooledByteBufAllocator::State* state = nullptr;
  std::atomic<std::size_t> threads{0};
  Run* partial[kClasses] = {};  // runs with free slots
  Chunk* chunks = nullptr;
  Chunk* hint = nullptr;  // where the last run went
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

  ~Arena();

  // ---- under mutex ----

  void list_push(Run* r) {
    r->prev = nullptr;
    r->next = partial[r->cls];
    if (r->next != nullptr) r->next->prev = r;
    partial[r->cls] = r;
    r->in_list = true;
  }
  void list_remove(Run* r) {
    if (r->prev != nullptr)
      r->prev->next = r->next;
    else
      partial[r->cls] = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    r->in_list = false;
  }

  Chunk* new_chunk();
  void unmap_chunk(Chunk* c);
  Run* new_run(std::size_t cls);
  void release_run(Run* r, std::int64_t now);

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
  void maintain(std::int64_t now, bool force);

  void maybe_maintain(std::int64_t& now) {
    if (now == 0) now = now_ns();
    if (now >= next_maintenance) maintain(now, false);
  }
};

// The arena whose chunk holds a pooled block.
inline Arena* arena_of(const ByteBufStorage* s) noexcept {
  return static_cast<const Run*>(s->allocator_context)->chunk->arena;
}

}  // namespace weft::pool
