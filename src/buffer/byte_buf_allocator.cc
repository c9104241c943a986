#include "weft/buffer/byte_buf_allocator.h"

#include "weft/buffer/leak_detector.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace weft {
namespace {

// The header in front of the data keeps the data 16-byte aligned (as malloc's result is).
constexpr std::size_t kHeapHeaderSize = (sizeof(ByteBufStorage) + 15) & ~std::size_t{15};
static_assert(alignof(ByteBufStorage) <= 16);
// realloc moves headers bitwise and free skips their destructor.
static_assert(std::is_trivially_destructible_v<ByteBufStorage>);

std::size_t heap_block_size(std::size_t capacity) {
  if (capacity > SIZE_MAX - kHeapHeaderSize) throw std::bad_alloc();
  return kHeapHeaderSize + capacity;
}

}  // namespace

void ByteBufAllocator::throw_capacity_error(std::size_t initial_capacity, std::size_t max_capacity) {
  throw std::invalid_argument("ByteBufAllocator::buffer: initial_capacity " + std::to_string(initial_capacity) +
                              " > max_capacity " + std::to_string(max_capacity));
}

[[gnu::noinline]] void ByteBufAllocator::track_new(ByteBufStorage* storage) noexcept {
  detail::leak_maybe_track(storage, __builtin_return_address(0));
}

std::size_t ByteBufAllocator::calculate_new_capacity(std::size_t min_new_capacity, std::size_t max_capacity) {
  if (min_new_capacity > max_capacity) {
    throw std::length_error("ByteBufAllocator::calculate_new_capacity: " + std::to_string(min_new_capacity) +
                            " exceeds max_capacity " + std::to_string(max_capacity));
  }
  std::size_t capacity;
  if (min_new_capacity <= kCapacityGrowthThreshold) {
    capacity = std::bit_ceil(std::max<std::size_t>(min_new_capacity, 64));
  } else {
    // Cannot overflow: min_new_capacity <= max_capacity, and callers keep max_capacity small.
    capacity = (min_new_capacity + kCapacityGrowthThreshold - 1) / kCapacityGrowthThreshold * kCapacityGrowthThreshold;
  }
  return std::min(capacity, max_capacity);
}

ByteBufStorage* ByteBufAllocator::new_storage(std::size_t min_capacity, const void* caller) {
  ByteBufStorage* storage = allocate_storage(min_capacity);
  if (detail::leak_tracking_enabled()) [[unlikely]] detail::leak_maybe_track(storage, caller);
  return storage;
}

ByteBufStorage* ByteBufAllocator::grow_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                               std::size_t preserve) {
  void* const record = storage->leak_record;
  storage->leak_record = nullptr;  // free_storage may get this block back: it must carry no record
  ByteBufStorage* fresh;
  try {
    fresh = reallocate_storage(storage, min_capacity, preserve);
  } catch (...) {
    storage->leak_record = record;  // on a throw the block is untouched and still the caller's
    throw;
  }
  fresh->leak_record = record;
  if (record != nullptr) detail::leak_moved(fresh);
  return fresh;
}

ByteBufStorage* ByteBufAllocator::reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                                     std::size_t preserve) {
  ByteBufStorage* fresh = allocate_storage(min_capacity);
  if (preserve > 0) std::memcpy(fresh->data, storage->data, std::min(preserve, fresh->capacity));
  storage->refs.store(0, std::memory_order_relaxed);  // free_storage gets blocks whose count reached zero
  free_storage(storage);
  return fresh;
}

ByteBufStorage* HeapByteBufAllocator::allocate_storage(std::size_t min_capacity) {
  void* block = std::malloc(heap_block_size(min_capacity));
  if (block == nullptr) throw std::bad_alloc();
  auto* bytes = static_cast<std::uint8_t*>(block);
  return new (block) ByteBufStorage(this, bytes + kHeapHeaderSize, min_capacity);
}

ByteBufStorage* HeapByteBufAllocator::reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                                         std::size_t /*preserve*/) {
  // The caller holds the only reference, so nothing else looks at the header while it moves. realloc
  // keeps all old bytes (a superset of `preserve`); on failure the old block, header included, is intact.
  void* block = std::realloc(static_cast<void*>(storage), heap_block_size(min_capacity));
  if (block == nullptr) throw std::bad_alloc();
  auto* bytes = static_cast<std::uint8_t*>(block);
  return new (block) ByteBufStorage(this, bytes + kHeapHeaderSize, min_capacity);
}

void HeapByteBufAllocator::free_storage(ByteBufStorage* storage) noexcept {
  std::free(static_cast<void*>(storage));
}

ByteBufAllocator& default_allocator() noexcept {
  // Constructed once, never destroyed: buffers held by static objects may be released after main().
  alignas(HeapByteBufAllocator) static unsigned char memory[sizeof(HeapByteBufAllocator)];
  static HeapByteBufAllocator* const instance = new (memory) HeapByteBufAllocator();
  return *instance;
}

}  // namespace weft
