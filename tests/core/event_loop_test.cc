#include "weft/core/event_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace weft {
namespace {

struct StartedLoop {
  EventLoop loop{std::make_unique<BasicDriver>()};
  StartedLoop() { loop.start(); }
};

TEST(EventLoopTest, ExecuteRunsOnLoopThread) {
  StartedLoop s;
  Promise<std::thread::id> p;
  s.loop.execute([&] {
    EXPECT_TRUE(s.loop.in_loop());
    EXPECT_EQ(EventLoop::current(), &s.loop);
    p.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(p.future().get(), std::this_thread::get_id());
  EXPECT_FALSE(s.loop.in_loop());
  EXPECT_EQ(EventLoop::current(), nullptr);
}

TEST(EventLoopTest, TasksFromOneThreadRunInOrder) {
  StartedLoop s;
  std::vector<int> seen;
  Promise<void> done;
  for (int i = 0; i < 10000; ++i) s.loop.execute([&, i] { seen.push_back(i); });
  s.loop.execute([&] { done.set_value(); });
  done.future().get();
  ASSERT_EQ(seen.size(), 10000u);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(seen[i], i);
}

TEST(EventLoopTest, PostingFromEightThreadsRunsEveryTaskOnce) {
  StartedLoop s;
  constexpr int kThreads = 8, kPerThread = 20000;
  std::vector<int> last(kThreads, -1);
  std::atomic<bool> ordered{true};
  std::atomic<int> count{0};
  std::latch go(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      go.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        s.loop.execute([&, t, i] {
          if (last[t] != i - 1) ordered = false;  // per-producer FIFO
          last[t] = i;
          count.fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  Promise<void> done;
  s.loop.execute([&] { done.set_value(); });
  done.future().get();
  EXPECT_EQ(count.load(), kThreads * kPerThread);
  EXPECT_TRUE(ordered.load());
}

TEST(EventLoopTest, WakesFromIdleSleepPromptly) {
  StartedLoop s;
  std::this_thread::sleep_for(50ms);  // the loop is now blocked in poll with no timer
  auto start = Clock::now();
  Promise<void> p;
  s.loop.execute([&] { p.set_value(); });
  ASSERT_TRUE(p.future().wait_for(2s));
  EXPECT_LT(Clock::now() - start, 500ms);
}

TEST(EventLoopTest, ScheduleRunsAfterDelayInDeadlineOrder) {
  StartedLoop s;
  std::vector<int> order;
  Promise<void> done;
  auto start = Clock::now();
  TimePoint fired_at{};
  s.loop.schedule(60ms, [&] {
    order.push_back(2);
    fired_at = Clock::now();
    done.set_value();
  });
  s.loop.schedule(20ms, [&] { order.push_back(1); });
  done.future().get();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(fired_at - start, 60ms);
}

// turn_time(): one clock read per turn. Within a task it holds still while the clock moves on; a
// timer 2 ms later runs in another turn, which reads the clock again.
TEST(EventLoopTest, TurnTimeIsReadOncePerTurn) {
  StartedLoop s;
  Promise<void> done;
  TimePoint first{};
  s.loop.execute([&] {
    first = s.loop.turn_time();
    const TimePoint moved = first + 1us;
    while (s.loop.now() <= moved) {
    }
    EXPECT_EQ(s.loop.turn_time(), first) << "the same turn: no second read";
    EXPECT_GT(s.loop.now(), s.loop.turn_time());
    s.loop.schedule(2ms, [&] {
      EXPECT_GE(s.loop.turn_time() - first, 2ms) << "a later turn reads the clock again";
      done.set_value();
    });
  });
  done.future().get();
}

// With a manual clock, turn_time() is now(): it moves with advance_time().
TEST(EventLoopTest, TurnTimeFollowsTheManualClock) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  const TimePoint start = loop.turn_time();
  EXPECT_EQ(start, loop.now());
  loop.advance_time(7ms);
  EXPECT_EQ(loop.turn_time() - start, 7ms);
}

TEST(EventLoopTest, CancelledTimerDoesNotRun) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  int runs = 0;
  TimerId id = loop.schedule(10ms, [&] { ++runs; });
  loop.schedule(5ms, [&] { ++runs; });
  EXPECT_TRUE(loop.cancel(id));
  EXPECT_FALSE(loop.cancel(id));
  loop.advance_time(20ms);
  EXPECT_EQ(runs, 1);
}

TEST(EventLoopTest, CancelFromAnotherThread) {
  StartedLoop s;
  std::atomic<int> runs{0};
  TimerId id = s.loop.schedule(100ms, [&] { ++runs; });
  s.loop.cancel(id);
  Promise<void> done;
  s.loop.schedule(200ms, [&] { done.set_value(); });
  done.future().get();
  EXPECT_EQ(runs.load(), 0);
}

TEST(EventLoopTest, FixedRateRepeatsUntilCancelledWithManualClock) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  int runs = 0;
  TimerId id = loop.schedule_at_fixed_rate(10ms, 5ms, [&] { ++runs; });
  loop.advance_time(9ms);
  EXPECT_EQ(runs, 0);
  loop.advance_time(1ms);
  EXPECT_EQ(runs, 1);
  loop.advance_time(5ms);
  EXPECT_EQ(runs, 2);
  loop.advance_time(5ms);
  EXPECT_EQ(runs, 3);
  loop.cancel(id);
  loop.advance_time(50ms);
  EXPECT_EQ(runs, 3);
}

TEST(EventLoopTest, FixedRateTaskMayCancelItself) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  int runs = 0;
  TimerId id = 0;
  id = loop.schedule_at_fixed_rate(1ms, 1ms, [&] {
    if (++runs == 3) loop.cancel(id);
  });
  for (int i = 0; i < 10; ++i) loop.advance_time(1ms);
  EXPECT_EQ(runs, 3);
}

TEST(EventLoopTest, FixedRateSkipsMissedPeriods) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  int runs = 0;
  loop.schedule_at_fixed_rate(1ms, 1ms, [&] { ++runs; });
  loop.advance_time(10ms);  // one late run, not ten
  EXPECT_EQ(runs, 1);
  loop.advance_time(1ms);
  EXPECT_EQ(runs, 2);
}

TEST(EventLoopTest, ThrowingTaskDoesNotStopTheLoop) {
  StartedLoop s;
  s.loop.execute([] { throw std::runtime_error("boom"); });
  Promise<void> p;
  s.loop.execute([&] { p.set_value(); });
  EXPECT_TRUE(p.future().wait_for(2s));
}

struct FakeResource : LoopResource {
  EventLoop& loop;
  int closes = 0;
  explicit FakeResource(EventLoop& l) : loop(l) {}
  void close_for_shutdown() override {
    ++closes;
    // closing takes a little while, as a socket flush would
    loop.schedule(20ms, [this] { loop.untrack(*this); });
  }
};

TEST(EventLoopTest, GracefulShutdownClosesResourcesAndDrainsTasks) {
  StartedLoop s;
  FakeResource r1(s.loop), r2(s.loop);
  Promise<void> tracked;
  s.loop.execute([&] {
    s.loop.track(r1);
    s.loop.track(r2);
    tracked.set_value();
  });
  tracked.future().get();
  std::atomic<int> late_tasks{0};
  auto f = s.loop.shutdown_gracefully(50ms, 5s);
  s.loop.execute([&] { ++late_tasks; });  // accepted during the quiet period
  f.wait();
  EXPECT_TRUE(s.loop.is_terminated());
  EXPECT_EQ(r1.closes, 1);
  EXPECT_EQ(r2.closes, 1);
  EXPECT_EQ(late_tasks.load(), 1);
  EXPECT_THROW(s.loop.execute([] {}), RejectedExecutionError);
  EXPECT_FALSE(s.loop.try_execute([] {}));
}

TEST(EventLoopTest, ShutdownTimeoutBoundsAQuietPeriodThatNeverEnds) {
  StartedLoop s;
  s.loop.schedule_at_fixed_rate(1ms, 1ms, [] {});  // keeps the loop busy
  auto start = Clock::now();
  s.loop.shutdown_gracefully(10s, 200ms).wait();
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_GE(Clock::now() - start, 200ms);
}

TEST(EventLoopTest, ManyTimersCancelledDoNotAccumulate) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "manual", .manual_clock = true});
  int runs = 0;
  for (int i = 0; i < 100000; ++i) loop.cancel(loop.schedule(1h, [&] { ++runs; }));
  loop.advance_time(2h);
  EXPECT_EQ(runs, 0);
}

TEST(EventLoopTest, ATaskRejectedByATerminatedLoopIsLeftToTheCaller) {
  StartedLoop s;
  s.loop.shutdown_gracefully(0ms, 5s).wait();
  int runs = 0;
  UniqueFunction<void()> task([&] { ++runs; });
  EXPECT_FALSE(s.loop.try_execute(std::move(task)));
  ASSERT_TRUE(static_cast<bool>(task));  // not swallowed by the rejected call
  task();
  EXPECT_EQ(runs, 1);
}

TEST(EventLoopTest, AListenerOfAFutureWhoseLoopTerminatedRunsOnTheCompletingThread) {
  StartedLoop s;
  Promise<int> p(&s.loop);
  std::thread::id ran_on;
  p.future().add_listener([&](const Future<int>&) { ran_on = std::this_thread::get_id(); });
  s.loop.shutdown_gracefully(0ms, 5s).wait();
  p.set_value(1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(EventLoopTest, TimersPendingAtTerminationAreDestroyedAndTheirPromisesBreak) {
  StartedLoop s;
  Promise<void> scheduled;
  Future<void> never_fired;
  s.loop.execute([&] {
    Promise<void> p(&s.loop);
    never_fired = p.future();
    s.loop.schedule(1h, [p]() mutable { p.set_value(); });
    scheduled.set_value();
  });
  scheduled.future().get();
  s.loop.shutdown_gracefully(0ms, 5s).wait();
  ASSERT_TRUE(never_fired.is_done());
  EXPECT_THROW(never_fired.get(), BrokenPromiseError);
}

}  // namespace
}  // namespace weft
