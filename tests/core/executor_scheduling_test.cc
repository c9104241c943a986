// Executor threads run under SCHED_BATCH (waking one never preempts an event loop); I/O loops and
// plain BasicDriver loops keep the scheduling policy they were started with.

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "weft/core/event_loop_group.h"
#include "weft/core/executor_group.h"
#include "weft/core/future.h"

namespace weft {
namespace {

int policy_of_thread_of(EventLoop& loop) {
  Promise<int> policy;
  loop.execute([policy]() mutable { policy.set_value(::sched_getscheduler(0)); });
  return policy.future().get();
}

TEST(ExecutorSchedulingTest, ExecutorThreadsRunUnderSchedBatchByDefault) {
  ExecutorGroup group({.threads = 2});
  EXPECT_EQ(policy_of_thread_of(group.next()), SCHED_BATCH);
  EXPECT_EQ(policy_of_thread_of(group.next()), SCHED_BATCH);
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER) << "the caller's own thread is not touched";
}

TEST(ExecutorSchedulingTest, BatchSchedulingCanBeTurnedOff) {
  ExecutorGroup group({.threads = 1, .batch_scheduling = false});
  EXPECT_EQ(policy_of_thread_of(group.next()), SCHED_OTHER);
}

TEST(ExecutorSchedulingTest, ExecutorDriverFactoryServesPlainLoopGroups) {
  EventLoopGroup executors(executor_driver_factory(), 1, "exec");
  EventLoopGroup plain(basic_driver_factory(), 1, "plain");
  EXPECT_EQ(policy_of_thread_of(executors.next()), SCHED_BATCH);
  EXPECT_EQ(policy_of_thread_of(plain.next()), SCHED_OTHER);
}

TEST(ExecutorSchedulingTest, AThreadStartedUnderAnotherPolicyKeepsIt) {
  // New threads inherit their creator's policy: create the group from a SCHED_IDLE thread.
  int policy = -1;
  std::thread creator([&policy] {
    sched_param param{};
    ASSERT_EQ(::sched_setscheduler(0, SCHED_IDLE, &param), 0);
    ExecutorGroup group({.threads = 1});
    policy = policy_of_thread_of(group.next());
  });
  creator.join();
  EXPECT_EQ(policy, SCHED_IDLE);
}

}  // namespace
}  // namespace weft
