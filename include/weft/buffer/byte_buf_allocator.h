#pragma once
/// @file
/// ByteBufAllocator: where ByteBuf storage blocks come from and go back to.
///
/// An allocator implements three hooks on ByteBufStorage blocks (see byte_buf.h for the block's
/// contract): allocate_storage, reallocate_storage (optional), free_storage. ByteBuf calls them:
/// allocation on the thread that creates or grows a buffer, free on the thread that drops the last
/// reference -- which may be any thread. A pooled allocator with size classes and thread caches fits:
/// allocate_storage rounds the request up to a size class (reporting the real size in
/// ByteBufStorage::capacity) and takes a run from the calling thread's cache; free_storage finds the
/// owning arena / cache through ByteBufStorage::allocator_context and allocator_handle, and hands the
/// run back to it (directly on the owner thread, through a lock-free queue from others).
///
/// An allocator must outlive every block it made.

#include <cstddef>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/leak_detector.h"

namespace weft {

/// Where ByteBuf storage blocks come from and go back to (see the file's description).
class ByteBufAllocator {
 public:
  virtual ~ByteBufAllocator() = default;
  ByteBufAllocator(const ByteBufAllocator&) = delete;
  ByteBufAllocator& operator=(const ByteBufAllocator&) = delete;

  /// Thread-safe. An empty buffer (indices 0) with at least initial_capacity writable bytes that may
  /// grow up to max_capacity (clamped to kMaxCapacityLimit). Throws std::invalid_argument if
  /// initial_capacity > max_capacity, std::bad_alloc if the allocator has no memory.
  // Inline, the rare parts out of line. A final allocator may hide it with the same steps around a
  // direct (non-virtual) call of its allocate_storage (PooledByteBufAllocator::buffer()).
  ByteBuf buffer(std::size_t initial_capacity = kDefaultInitialCapacity,
                 std::size_t max_capacity = kDefaultMaxCapacity) {
    max_capacity = checked_max_capacity(initial_capacity, max_capacity);
    return wrap_new(allocate_storage(initial_capacity), max_capacity);
  }

  /// Thread-safe. The capacity a buffer grows to when it needs min_new_capacity bytes: the next power
  /// of two (at least 64) up to kCapacityGrowthThreshold, above it the next multiple of the threshold;
  /// never more than max_capacity. Throws std::length_error if min_new_capacity > max_capacity.
  static std::size_t calculate_new_capacity(std::size_t min_new_capacity, std::size_t max_capacity);

 protected:
  ByteBufAllocator() = default;

  /// Thread-safe. buffer()'s first step, for allocators that hide it: max_capacity clamped to
  /// kMaxCapacityLimit; std::invalid_argument if initial_capacity exceeds it.
  static std::size_t checked_max_capacity(std::size_t initial_capacity, std::size_t max_capacity) {
    if (max_capacity > kMaxCapacityLimit) max_capacity = kMaxCapacityLimit;
    if (initial_capacity > max_capacity) [[unlikely]]
      throw_capacity_error(initial_capacity, max_capacity);
    return max_capacity;
  }
  /// Thread-safe. buffer()'s last step: the new block's handle, after the leak detector's look at it
  /// (always inlined: track_new records the address it returns to, i.e. the code that called buffer()).
  [[gnu::always_inline]] static ByteBuf wrap_new(ByteBufStorage* storage, std::size_t max_capacity) noexcept {
    if (detail::leak_tracking_enabled()) [[unlikely]]
      track_new(storage);
    const std::size_t capacity = storage->capacity < max_capacity ? storage->capacity : max_capacity;
    return ByteBuf(storage, storage->data, 0, 0, capacity, max_capacity);
  }

  /// Thread-safe (called from any thread). A new block with refs == 1, allocator == this and
  /// capacity >= min_capacity (its contents unspecified). Throws (std::bad_alloc) on failure.
  virtual ByteBufStorage* allocate_storage(std::size_t min_capacity) = 0;

  /// Thread-safe (called from any thread). Replaces `storage`, whose only reference the caller holds,
  /// with a block of capacity >= min_capacity (> storage->capacity) whose first `preserve` bytes
  /// (<= storage->capacity) equal those of `storage`; the returned block has refs == 1 and `storage`
  /// is consumed (it may be the same block, resized in place). On a throw, `storage` is untouched and
  /// still the caller's. The default allocates, copies and frees.
  virtual ByteBufStorage* reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                             std::size_t preserve);

  /// Thread-safe (called from any thread, exactly once per block, once its count reached zero).
  /// Takes the block back.
  virtual void free_storage(ByteBufStorage* storage) noexcept = 0;

 private:
  friend class ByteBuf;

  // buffer()'s rare parts: the argument error, and the leak detector's look at a new block (it
  // records the address that called track_new, i.e. the code buffer() was inlined into).
  [[noreturn]] static void throw_capacity_error(std::size_t initial_capacity, std::size_t max_capacity);
  static void track_new(ByteBufStorage* storage) noexcept;
  // allocate_storage plus leak tracking (caller: the allocation site to record).
  ByteBufStorage* new_storage(std::size_t min_capacity, const void* caller);
  // reallocate_storage; the leak detector's record follows the block.
  ByteBufStorage* grow_storage(ByteBufStorage* storage, std::size_t min_capacity, std::size_t preserve);
};

/// The general-heap allocator: one malloc per buffer (the ByteBufStorage header sits in front of the
/// data, which is 16-byte aligned), realloc to grow, free to release. Holds no state.
class HeapByteBufAllocator final : public ByteBufAllocator {
 public:
  /// Thread-safe.
  HeapByteBufAllocator() = default;

 protected:
  /// Thread-safe. malloc(header + min_capacity).
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override;
  /// Thread-safe. realloc(header + min_capacity).
  ByteBufStorage* reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                     std::size_t preserve) override;
  /// Thread-safe. free().
  void free_storage(ByteBufStorage* storage) noexcept override;
};

/// Thread-safe. The process-wide allocator used by ByteBuf::copy_of() and by code that is given none:
/// a HeapByteBufAllocator (channels of the epoll transport use pooled_allocator(), see
/// pooled_byte_buf_allocator.h). Never destroyed, so buffers may outlive static destructors.
ByteBufAllocator& default_allocator() noexcept;

}  // namespace weft
