// ExecutorGroup's queue accounting and its pause/resume handshake.

#include "weft/core/executor_group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace weft {
namespace {

// The handshake between a channel that pauses (when_below_half after seeing the queue full) and an
// executor that releases bytes concurrently: whichever order their writes land in, the waiter runs.
// A lost wake-up needs the store-buffer reordering that acq_rel allows: it can show on weakly
// ordered CPUs (ARM, POWER); on x86 the RMWs are full fences, so there this only guards the logic.
TEST(ExecutorGroupTest, AWaiterRegisteredWhileBytesAreReleasedAlwaysRuns) {
  ExecutorGroup group({.threads = 1, .max_queued_bytes = 1000, .batch_scheduling = false});
  constexpr int kRounds = 20000;
  std::atomic<int> round{0};
  std::atomic<int> ran{0};
  std::atomic<int> released{0};
  std::thread releaser([&] {
    for (int r = 1; r <= kRounds; ++r) {
      while (round.load(std::memory_order_acquire) < r) std::this_thread::yield();
      group.release_queued(1000);
      released.store(r, std::memory_order_release);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    group.add_queued(1000);  // full: the channel pauses
    round.store(r, std::memory_order_release);
    group.when_below_half([&] { ran.fetch_add(1, std::memory_order_relaxed); });
    while (released.load(std::memory_order_acquire) < r) std::this_thread::yield();
    ASSERT_EQ(ran.load(), r) << "round " << r << ": the wake-up was lost";
  }
  releaser.join();
}

TEST(ExecutorGroupTest, AWaiterRunsAtOnceWhenTheQueueIsAlreadyBelowHalf) {
  ExecutorGroup group({.threads = 1, .max_queued_bytes = 1000, .batch_scheduling = false});
  group.add_queued(400);
  bool ran = false;
  group.when_below_half([&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(group.release_queued(400), 0u);
}

}  // namespace
}  // namespace weft
