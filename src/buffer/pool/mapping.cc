#include "mapping.h"

#include <sys/mman.h>

#include <new>

namespace weft::pool {

void* map_memory(std::size_t bytes) noexcept {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

ByteBufStorage* map_large(ByteBufAllocator* owner, std::size_t capacity) noexcept {
  void* mem = map_memory(capacity + kLargeHeader);
  if (mem == nullptr) return nullptr;
  auto* bytes = static_cast<std::uint8_t*>(mem);
  auto* s = new (mem) ByteBufStorage(owner, bytes + kLargeHeader, capacity);
  s->allocator_tag = kLargeTag;
  s->allocator_handle = capacity + kLargeHeader;
  return s;
}

}  // namespace weft::pool
