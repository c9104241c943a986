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

// Whether this process may change a thread's policy at all (a seccomp profile can refuse): the
// executor then keeps SCHED_OTHER, as documented, and there is nothing to check.
bool can_change_policy() {
  bool ok = false;
  std::thread probe([&ok] {
    sched_param param{};
    ok = ::sched_setscheduler(0, SCHED_BATCH, &param) == 0;
  });
  probe.join();
  return ok;
}

int policy_of_thread_of(EventLoop& loop) {
  Promise<int> policy;
  loop.execute([policy]() mutable { policy.set_value(::sched_getscheduler(0)); });
  return policy.future().get();
}

TEST(ExecutorSchedulingTest, ExecutorThreadsRunUnderSchedBatchByDefault) {
  if (!can_change_policy()) GTEST_SKIP() << "sched_setscheduler is refused here";
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
  if (!can_change_policy()) GTEST_SKIP() << "sched_setscheduler is refused here";
  EventLoopGroup executors(executor_driver_factory(), 1, "exec");
  EventLoopGroup plain(basic_driver_factory(), 1, "plain");
  EXPECT_EQ(policy_of_thread_of(executors.next()), SCHED_BATCH);
  EXPECT_EQ(policy_of_thread_of(plain.next()), SCHED_OTHER);
}

TEST(ExecutorSchedulingTest, AThreadStartedUnderAnotherPolicyKeepsIt) {
  if (!can_change_policy()) GTEST_SKIP() << "sched_setscheduler is refused here";
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
