#include "arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "mapping.h"

namespace weft::pool {

Arena::~Arena() {
  if (keep_mappings) return;
  for (Chunk* c = chunks; c != nullptr;) {
    Chunk* next = c->next;
    ::munmap(c->mem, PooledByteBufAllocator::kChunkSize);
    c = next;
  }
}

Chunk* Arena::new_chunk() {
  void* mem = map_memory(PooledByteBufAllocator::kChunkSize);
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

void Arena::unmap_chunk(Chunk* c) {
  if (c->prev != nullptr)
    c->prev->next = c->next;
  else
    chunks = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  if (hint == c) hint = nullptr;
  --chunk_count;
  if (c->empty_since != 0) --empty_chunks;
  ::munmap(c->mem, PooledByteBufAllocator::kChunkSize);
}

Run* Arena::new_run(std::size_t cls) {
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

void Arena::release_run(Run* r, std::int64_t now) {
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

void Arena::maintain(std::int64_t now, bool force) {
  for (std::size_t cls = 0; cls < kClasses; ++cls) {
    for (Run* r = partial[cls]; r != nullptr;) {
      Run* next = r->next;
      if (r->free_count == r->slot_count) {
        if (force || r->idle_marked)
          release_run(r, now);
        else
          r->idle_marked = true;
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

}  // namespace weft::pool
