// The per-thread frame pool (coroutine frames, future states, client exchanges): a block freed to
// it comes back to the same thread's next allocation of its class, and, under ASan, a use of a
// block after its free is still reported although the block never went back to the heap.

#include "weft/core/frame_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

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

// A burst of frees is kept up to the class's bound (a loop's next burst of requests takes them
// back without the heap), and all of a thread's lists together up to the thread's bound.
TEST(FramePool, ListsKeepABurstUpToTheClassAndThreadBounds) {
  std::thread([] {  // a thread of its own: its lists start empty
    auto burst = [](std::size_t size, std::size_t n) {
      std::vector<void*> blocks;
      for (std::size_t i = 0; i < n; ++i) blocks.push_back(frame_pool::allocate(size));
      for (void* b : blocks) frame_pool::deallocate(b, size);
    };
    constexpr std::size_t kSize = 1024;
    burst(kSize, 256);  // within the class's bound: all kept
    EXPECT_EQ(frame_pool::thread_stats().cached_bytes, 256 * kSize);
    const std::uint64_t misses = frame_pool::thread_stats().misses;
    burst(kSize, 256);  // served from the list
    EXPECT_EQ(frame_pool::thread_stats().misses, misses);

    burst(kSize, frame_pool::kMaxCachedBytesPerClass / kSize + 100);
    EXPECT_EQ(frame_pool::thread_stats().cached_bytes, frame_pool::kMaxCachedBytesPerClass);

    // Bursts in other classes, past the thread's bound in all.
    for (std::size_t size = 1280; size <= 8192; size += 256) {  // 28 classes of 512 KiB
      burst(size, frame_pool::kMaxCachedBytesPerClass / size);
    }
    EXPECT_LE(frame_pool::thread_stats().cached_bytes, frame_pool::kMaxCachedBytesPerThread);
    EXPECT_GT(frame_pool::thread_stats().cached_bytes, frame_pool::kMaxCachedBytesPerThread - 8192);
  })
      .join();
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
