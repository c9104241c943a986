#include "weft/core/loop_callback.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "weft/core/event_loop.h"
#include "weft/core/future.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

EventLoop::Options manual_options() { return EventLoop::Options{.name = "manual", .manual_clock = true}; }

TEST(LoopCallbackTest, RunsOnceOnTheNextTurnNotInsideSchedule) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback callback([&] { ++runs; });
  EXPECT_TRUE(callback.schedule(loop));
  EXPECT_TRUE(callback.is_scheduled());
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(loop.run_pending(), 1u);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(callback.is_scheduled());
  EXPECT_EQ(loop.run_pending(), 0u);
  EXPECT_EQ(runs, 1);
}

TEST(LoopCallbackTest, SchedulingTwiceRunsOnce) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback callback([&] { ++runs; });
  EXPECT_TRUE(callback.schedule(loop));
  EXPECT_TRUE(callback.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(runs, 1);
}

TEST(LoopCallbackTest, CallbacksRunInTheOrderScheduled) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  std::vector<int> order;
  LoopCallback a([&] { order.push_back(1); });
  LoopCallback b([&] { order.push_back(2); });
  LoopCallback c([&] { order.push_back(3); });
  ASSERT_TRUE(b.schedule(loop));
  ASSERT_TRUE(a.schedule(loop));
  ASSERT_TRUE(c.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(order, (std::vector<int>{2, 1, 3}));
}

TEST(LoopCallbackTest, DestroyedWhileScheduledNeverRuns) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  auto doomed = std::make_unique<LoopCallback>([&] { ++runs; });
  LoopCallback other([&] { runs += 10; });
  ASSERT_TRUE(doomed->schedule(loop));
  ASSERT_TRUE(other.schedule(loop));
  doomed.reset();
  EXPECT_EQ(loop.run_pending(), 1u);
  EXPECT_EQ(runs, 10);
}

TEST(LoopCallbackTest, CancelledDoesNotRunUntilScheduledAgain) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback callback([&] { ++runs; });
  ASSERT_TRUE(callback.schedule(loop));
  callback.cancel();
  EXPECT_FALSE(callback.is_scheduled());
  EXPECT_EQ(loop.run_pending(), 0u);
  ASSERT_TRUE(callback.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(runs, 1);
}

TEST(LoopCallbackTest, ACallbackCancelledByOneRunningBeforeItDoesNotRun) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback second([&] { ++runs; });
  LoopCallback first([&] { second.cancel(); });
  ASSERT_TRUE(first.schedule(loop));
  ASSERT_TRUE(second.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(runs, 0);
}

// Rescheduled from inside, it runs on the following turn: after the task it posted meanwhile,
// which runs in this turn.
TEST(LoopCallbackTest, RescheduledFromInsideRunsOnTheNextTurn) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  std::vector<int> order;
  int runs = 0;
  LoopCallback* self = nullptr;
  LoopCallback callback([&] {
    order.push_back(++runs);
    if (runs == 1) {
      EXPECT_TRUE(self->schedule(loop));
      EXPECT_TRUE(self->is_scheduled());
      loop.execute([&] { order.push_back(100); });
    }
  });
  self = &callback;
  ASSERT_TRUE(callback.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(order, (std::vector<int>{1, 100, 2}));
}

TEST(LoopCallbackTest, ACallbackMayDestroyItself) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  std::unique_ptr<LoopCallback> owner;
  owner = std::make_unique<LoopCallback>([&] {
    ++runs;
    owner.reset();
  });
  ASSERT_TRUE(owner->schedule(loop));
  loop.run_pending();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(owner, nullptr);
}

TEST(LoopCallbackTest, AThrowingCallbackDoesNotStopTheOthers) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback thrower([] { throw std::runtime_error("callback failed"); });
  LoopCallback next([&] { ++runs; });
  ASSERT_TRUE(thrower.schedule(loop));
  ASSERT_TRUE(next.schedule(loop));
  loop.run_pending();
  EXPECT_EQ(runs, 1);
}

// ---- a loop that terminates: accepted callbacks run in the final drain, later ones are refused

TEST(LoopCallbackTest, ScheduledBeforeTerminationRunsInTheFinalDrain) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback callback([&] { ++runs; });
  ASSERT_TRUE(callback.schedule(loop));
  loop.shutdown_gracefully(0ms, 0ms);
  EXPECT_TRUE(loop.is_terminated());
  EXPECT_EQ(runs, 1);
}

TEST(LoopCallbackTest, ScheduledDuringTheFinalDrainRuns) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  int runs = 0;
  LoopCallback later([&] { ++runs; });
  LoopCallback first([&] { EXPECT_TRUE(later.schedule(loop)); });
  ASSERT_TRUE(first.schedule(loop));
  loop.shutdown_gracefully(0ms, 0ms);
  EXPECT_TRUE(loop.is_terminated());
  EXPECT_EQ(runs, 1);
}

TEST(LoopCallbackTest, ATerminatedLoopRefusesAndNeverRunsIt) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_options());
  loop.shutdown_gracefully(0ms, 0ms);
  ASSERT_TRUE(loop.is_terminated());
  int runs = 0;
  LoopCallback callback([&] { ++runs; });
  EXPECT_FALSE(callback.schedule(loop));
  EXPECT_FALSE(callback.is_scheduled());
  EXPECT_EQ(runs, 0);  // not inside schedule()
  EXPECT_EQ(loop.run_pending(), 0u);
  EXPECT_EQ(runs, 0);
}

TEST(LoopCallbackTest, RunsOnALoopThreadAndWakesIt) {
  EventLoop loop(std::make_unique<BasicDriver>());
  loop.start();
  Promise<bool> ran;
  LoopCallback callback([&] { ran.set_value(loop.in_loop()); });
  loop.execute([&] { EXPECT_TRUE(callback.schedule(loop)); });
  EXPECT_TRUE(ran.future().get());
  // Cancelled on the loop thread before it goes.
  Promise<void> idle;
  loop.execute([&] {
    callback.cancel();
    idle.set_value();
  });
  idle.future().get();
}

}  // namespace
}  // namespace weft
