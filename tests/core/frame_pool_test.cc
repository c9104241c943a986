// The per-thread frame pool (coroutine frames, future states, client exchanges): a block freed to
// it comes back to the same thread's next allocation of its class, and, under ASan, a use of a
// block after its free is still reported although the block never went back to the heap.

#include "weft/core/frame_pool.h"

#include <gtest/gtest.h>

#include <cstring>

#include "support/sanitizers.h"

namespace weft {
namespace {

TEST(FramePool, AFreedBlockServesTheNextAllocationOfItsClass) {
  void* first = frame_pool::allocate(200);
  frame_pool::deallocate(first, 200);
  const frame_pool::Stats before = frame_pool::thread_stats();
  void* second = frame_pool::allocate(250);  // the same class: 193..256 bytes
  EXPECT_EQ(second, first);
  EXPECT_EQ(frame_pool::thread_stats().hits, before.hits + 1);
  frame_pool::deallocate(second, 250);
}

#if defined(WEFT_TEST_ASAN)
// Writes into a block after giving it back: ASan must stop the process.
void write_after_free() {
  auto* block = static_cast<char*>(frame_pool::allocate(200));
  frame_pool::deallocate(block, 200);
  std::memset(block + 64, 1, 8);
}

TEST(FramePoolDeathTest, AUseAfterFreeIsReportedUnderAsan) { EXPECT_DEATH(write_after_free(), "use-after-poison"); }
#endif

}  // namespace
}  // namespace weft
