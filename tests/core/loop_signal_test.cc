#include "weft/core/loop_signal.h"

#include <gtest/gtest.h>

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

EventLoop::Options manual_loop_options() { return EventLoop::Options{.name = "manual", .manual_clock = true}; }

bool failed_with_loop_terminated(const Future<void>& f) {
  if (!f.is_done() || !f.error()) return false;
  try {
    std::rethrow_exception(f.error());
  } catch (const EventLoopTerminatedError&) {
    return true;
  } catch (...) {
    return false;
  }
}

Task<> wait_on_signal(LoopSignal& signal, int& wakes, int times) {
  for (int i = 0; i < times; ++i) {
    co_await signal.wait();
    ++wakes;
  }
}

TEST(LoopSignalTest, NotifyResumesTheWaiterOnTheNextTurnOnce) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  LoopSignal signal(loop);
  int wakes = 0;
  Future<void> f = spawn(loop, wait_on_signal(signal, wakes, 2));
  signal.notify();
  signal.notify();
  EXPECT_EQ(wakes, 0);  // not inside notify()
  loop.run_pending();
  EXPECT_EQ(wakes, 1);  // twice notified, once woken
  EXPECT_FALSE(f.is_done());
  signal.notify();
  loop.run_pending();
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(wakes, 2);
}

TEST(LoopSignalTest, ResumeNowWithdrawsAPendingNotify) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  LoopSignal signal(loop);
  int wakes = 0;
  Future<void> f = spawn(loop, wait_on_signal(signal, wakes, 2));
  signal.notify();
  signal.resume_now();
  EXPECT_EQ(wakes, 1);
  loop.run_pending();
  EXPECT_EQ(wakes, 1);  // the notify was for the wait already ended
  signal.resume_now();
  EXPECT_TRUE(f.is_done());
}

TEST(LoopSignalTest, NotifyWithoutAWaiterDoesNothing) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  LoopSignal signal(loop);
  signal.notify();
  EXPECT_EQ(loop.run_pending(), 0u);
}

// The old grpc LoopSignal left the waiter parked for ever on a terminated loop.
TEST(LoopSignalTest, ANotifyOnATerminatedLoopResumesTheWaitWithEventLoopTerminatedError) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  LoopSignal signal(loop);
  int wakes = 0;
  Future<void> f = spawn(loop, wait_on_signal(signal, wakes, 1));
  loop.shutdown_gracefully(0ms, 0ms);
  ASSERT_TRUE(loop.is_terminated());
  EXPECT_FALSE(f.is_done());
  signal.notify();
  EXPECT_TRUE(failed_with_loop_terminated(f));
  EXPECT_EQ(wakes, 0);
}

Task<> take_turns(EventLoop& loop, std::vector<int>& order, int turns) {
  for (int i = 1; i <= turns; ++i) {
    co_await next_turn(loop);
    order.push_back(i);
  }
}

TEST(NextTurnTest, EachTurnComesAfterWhatThePreviousOnePosted) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  std::vector<int> order;
  Future<void> f = spawn(loop, take_turns(loop, order, 2));
  EXPECT_TRUE(order.empty());
  loop.execute([&] { order.push_back(100); });
  loop.run_pending();
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(order, (std::vector<int>{1, 100, 2}));
}

Task<> wait_then_take_a_turn(EventLoop& loop, LoopSignal& signal, bool& took_turn) {
  co_await signal.wait();
  auto turn = next_turn(loop);
  co_await turn;
  took_turn = true;
}

// The old grpc NextTurn went on at once, as if the loop had taken its turn.
TEST(NextTurnTest, OnATerminatedLoopThrowsEventLoopTerminatedError) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  LoopSignal signal(loop);
  bool took_turn = false;
  Future<void> f = spawn(loop, wait_then_take_a_turn(loop, signal, took_turn));
  loop.shutdown_gracefully(0ms, 0ms);
  ASSERT_TRUE(loop.is_terminated());
  signal.resume_now();
  EXPECT_TRUE(failed_with_loop_terminated(f));
  EXPECT_FALSE(took_turn);
}

// A coroutine run by hand, to destroy its frame while it is suspended.
struct HandDrivenCoroutine {
  struct promise_type {
    HandDrivenCoroutine get_return_object() noexcept {
      return HandDrivenCoroutine{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

HandDrivenCoroutine take_one_turn(EventLoop& loop, bool& resumed) {
  co_await next_turn(loop);
  resumed = true;
}

// A frame destroyed while it waits for its turn takes its callback with it.
TEST(NextTurnTest, AFrameDestroyedWhileWaitingIsNotResumed) {
  EventLoop loop(std::make_unique<BasicDriver>(), manual_loop_options());
  bool resumed = false;
  HandDrivenCoroutine coroutine = take_one_turn(loop, resumed);
  coroutine.handle.destroy();
  EXPECT_EQ(loop.run_pending(), 0u);
  EXPECT_FALSE(resumed);
}

}  // namespace
}  // namespace weft
