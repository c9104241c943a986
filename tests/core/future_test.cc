#include "weft/core/future.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "weft/core/event_loop.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

TEST(FutureTest, ValueAndListenersWithoutLoop) {
  Promise<int> p;
  auto f = p.future();
  int seen = 0;
  f.add_listener([&](const Future<int>& done) { seen = done.get(); });
  EXPECT_FALSE(f.is_done());
  EXPECT_TRUE(p.set_value(7));
  EXPECT_FALSE(p.set_value(8));
  EXPECT_TRUE(f.is_success());
  EXPECT_EQ(f.get(), 7);
  EXPECT_EQ(seen, 7);
  int late = 0;
  f.add_listener([&](const Future<int>& done) { late = done.get(); });
  EXPECT_EQ(late, 7);
}

TEST(FutureTest, FailureRethrowsFromGet) {
  Promise<void> p;
  p.fail(ChannelClosedError());
  auto f = p.future();
  EXPECT_TRUE(f.is_done());
  EXPECT_FALSE(f.is_success());
  EXPECT_THROW(f.get(), ChannelClosedError);
}

TEST(FutureTest, ThenChainsValuesAndFutures) {
  Promise<int> p;
  auto doubled = p.future().then([](int v) { return v * 2; });
  auto text = doubled.then([](int v) { return make_ready_future(std::to_string(v)); });
  Future<void> ended = text.then([](const std::string&) {});
  p.set_value(21);
  EXPECT_EQ(doubled.get(), 42);
  EXPECT_EQ(text.get(), "42");
  EXPECT_TRUE(ended.is_success());
}

TEST(FutureTest, ThenPropagatesFailureAndExceptions) {
  Promise<int> p;
  bool called = false;
  auto next = p.future().then([&](int) {
    called = true;
    return 1;
  });
  p.fail(std::runtime_error("upstream"));
  EXPECT_FALSE(called);
  EXPECT_THROW(next.get(), std::runtime_error);

  auto thrower = make_ready_future(1).then([](int) -> int { throw std::logic_error("in then"); });
  EXPECT_THROW(thrower.get(), std::logic_error);
}

TEST(FutureTest, GetFromAnotherThreadBlocksUntilSet) {
  Promise<int> p;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    p.set_value(5);
  });
  EXPECT_EQ(p.future().get(), 5);
  t.join();
}

// The completion races blocked waiters, a timed waiter and listeners added from other threads: each
// sees the one value, once (a lost wake-up hangs a waiter, and the test times out).
TEST(FutureTest, WaitersAndListenersOnOtherThreadsEachSeeTheValueOnce) {
  for (int round = 0; round < 300; ++round) {
    Promise<int> p;
    const Future<int> f = p.future();
    std::atomic<int> seen{0};
    std::vector<std::thread> threads;
    threads.emplace_back([&] { seen += f.get(); });
    threads.emplace_back([&] {
      while (!f.wait_for(1h)) {
      }
      seen += f.get();
    });
    threads.emplace_back([&] { f.add_listener([&](const Future<int>& done) { seen += done.get(); }); });
    threads.emplace_back([&] { p.set_value(1); });
    for (auto& t : threads) t.join();
    EXPECT_EQ(seen.load(), 3) << "round " << round;
    EXPECT_FALSE(p.set_value(2));
  }
}

// The waiter may destroy the promise as soon as get() returns, while the thread that completed it
// through a reference is still inside set_value (ASan and TSan see the state used after it went).
TEST(FutureTest, APromiseMayGoAsSoonAsItsWaiterSeesItDone) {
  for (int round = 0; round < 2000; ++round) {
    auto promise = std::make_unique<Promise<int>>();
    Promise<int>& completes = *promise;
    std::thread completer([&completes, round] {
      std::atomic<int> spin{0};  // (completions at every point of the waiter's way into its wait)
      while (spin.fetch_add(1, std::memory_order_relaxed) < round % 500) {
      }
      completes.set_value(round);
    });
    EXPECT_EQ(promise->future().get(), round);
    promise.reset();
    completer.join();
  }
}

TEST(FutureTest, WaitForTimesOut) {
  Promise<int> p;
  EXPECT_FALSE(p.future().wait_for(10ms));
}

TEST(FutureTest, ListenersRunOnOwningLoop) {
  EventLoop loop(std::make_unique<BasicDriver>());
  loop.start();
  Promise<int> p(&loop);
  Promise<bool> ran_on_loop;
  p.future().add_listener([&](const Future<int>&) { ran_on_loop.set_value(loop.in_loop()); });
  p.set_value(1);  // completed from this (non-loop) thread
  EXPECT_TRUE(ran_on_loop.future().get());
}

// The first listener is kept inline, the others in a list: all run, once each, in the order added,
// whether completion runs them at once or posts them to the owning loop.
TEST(FutureTest, SeveralListenersRunOnceEachInOrder) {
  EventLoop loop(std::make_unique<BasicDriver>());
  loop.start();
  for (EventLoop* owner : {static_cast<EventLoop*>(nullptr), &loop}) {
    Promise<int> p(owner);
    std::vector<int> order;  // the loop's thread or this one, never both: completion publishes it
    Promise<void> all_ran;
    for (int i = 0; i < 3; ++i) {
      p.future().add_listener([&order, i](const Future<int>& f) { order.push_back(i * 10 + f.get()); });
    }
    p.future().add_listener([&all_ran](const Future<int>&) { all_ran.set_value(); });
    p.set_value(1);
    all_ran.future().get();
    EXPECT_EQ(order, (std::vector<int>{1, 11, 21}));
  }
}

TEST(FutureTest, GetOnOwningLoopFailsAtOnceInsteadOfDeadlocking) {
  EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "owner"});
  loop.start();
  Promise<int> p(&loop);
  Promise<std::string> message;
  loop.execute([&] {
    try {
      p.future().get();
      message.set_value("no error");
    } catch (const BlockingOperationError& e) {
      message.set_value(e.what());
    }
  });
  std::string m = message.future().get();
  EXPECT_NE(m.find("'owner'"), std::string::npos) << m;
  EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
  // Once done, get() on the loop is fine.
  Promise<int> q(&loop);
  q.set_value(3);
  Promise<int> seen;
  loop.execute([&] { seen.set_value(q.future().get()); });
  EXPECT_EQ(seen.future().get(), 3);
}

TEST(FutureTest, NeverCompletedPromiseWithListenersDoesNotLeak) {
  // Run under ASan/LSan: the listener must not keep its own state alive.
  Promise<int> p;
  p.future().add_listener([](const Future<int>&) {});
}

TEST(FutureTest, DestroyingTheLastPromiseFailsTheFutureWithBrokenPromise) {
  Future<int> f;
  int listener_runs = 0;
  {
    Promise<int> p;
    f = p.future();
    f.add_listener([&](const Future<int>&) { ++listener_runs; });
    Promise<int> copy = p;  // a copy keeps it pending
    Promise<int> moved = std::move(copy);
  }
  ASSERT_TRUE(f.is_done());
  EXPECT_THROW(f.get(), BrokenPromiseError);
  EXPECT_EQ(listener_runs, 1);
}

TEST(FutureTest, APromiseBreaksOnlyWhenItsLastCopyGoes) {
  Promise<void> p;
  Future<void> f = p.future();
  auto copy = std::make_unique<Promise<void>>(p);
  p = Promise<void>();  // drops one handle of f's promise
  EXPECT_FALSE(f.is_done());
  copy->set_value();
  copy.reset();
  EXPECT_TRUE(f.is_success());
}

TEST(FutureTest, AChainWhoseSourceBreaksFailsEveryStep) {
  Future<int> last;
  {
    Promise<int> p;
    last = p.future().then([](int v) { return v + 1; }).then([](int v) { return v * 2; });
  }
  ASSERT_TRUE(last.is_done());
  EXPECT_THROW(last.get(), BrokenPromiseError);
}

}  // namespace
}  // namespace weft
