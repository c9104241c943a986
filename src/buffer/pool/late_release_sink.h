#pragma once
// Where the blocks of a PooledByteBufAllocator destroyed with buffers alive go: their headers are
// pointed at the LateReleaseSink, so that a late release (or growth), on any thread, never reaches the
// dead allocator. A pooled slot stays in its chunk, which stays mapped; a mapped buffer, and one that
// grew after its allocator died, is unmapped. Never destroyed.

#include <cstddef>
#include <unordered_set>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft::pool {

class LateReleaseSink final : public ByteBufAllocator {
 public:
  // Thread-safe.
  static LateReleaseSink& instance() noexcept;

 protected:
  // Thread-safe: a mapping of its own.
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override;
  // Thread-safe: unmaps a mapped buffer, leaves a pooled slot where it is.
  void free_storage(ByteBufStorage* storage) noexcept override;
};

// Points the header of every block of st still alive at the LateReleaseSink. Alive: handed out,
// neither on its run's free list nor in a thread cache (`cached`). Slow: only for an allocator
// destroyed with buffers alive, after its thread caches were detached.
void orphan_live_blocks(PooledByteBufAllocator::State* st, const std::unordered_set<const void*>& cached);

}  // namespace weft::pool
