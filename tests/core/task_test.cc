#include "weft/core/task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/live_count.h"
#include "support/sanitizers.h"
#include "weft/core/awaitables.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/frame_pool.h"
#include "weft/core/spawn.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

Task<int> forty_two() { co_return 42; }
Task<std::string> text() { co_return std::string(100, 'x'); }
Task<> nothing() { co_return; }
Task<int> fails() {
  throw std::runtime_error("boom");
  co_return 0;
}

Task<int> depth(int n) {
  if (n == 0) co_return 0;
  co_return 1 + co_await depth(n - 1);
}

Task<long> many_sequential(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += co_await forty_two();
  co_return sum;
}

struct LoopFixture : ::testing::Test {
  EventLoopGroup group{basic_driver_factory(), 1, "task-test"};
  EventLoop& loop = group.next();
  template <class T>
  T run(Task<T> task) {
    Future<T> f = spawn(loop, std::move(task));
    EXPECT_TRUE(f.wait_for(20s));
    return f.get();
  }
};

TEST_F(LoopFixture, ReturnsValuesAndVoid) {
  EXPECT_EQ(run(forty_two()), 42);
  EXPECT_EQ(run(text()), std::string(100, 'x'));
  Future<void> f = spawn(loop, nothing());
  ASSERT_TRUE(f.wait_for(5s));
  EXPECT_TRUE(f.is_success());
}

TEST_F(LoopFixture, ExceptionsReachTheAwaiterAndTheFuture) {
  auto catcher = []() -> Task<std::string> {
    try {
      co_await fails();
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "not thrown";
  };
  EXPECT_EQ(run(catcher()), "boom");
  Future<int> f = spawn(loop, fails());
  ASSERT_TRUE(f.wait_for(5s));
  EXPECT_THROW(f.get(), std::runtime_error);
}

// Symmetric transfer: neither a deep chain of awaiting tasks nor a long loop of synchronously
// finishing tasks grows the stack (either would overflow an 8 MiB stack without it). The transfer is a
// tail call only in optimised builds without sanitizer instrumentation (ASan's stack redzones and
// TSan's function exit hooks prevent it), so those builds check the behaviour with short chains.
#if defined(__OPTIMIZE__) && !defined(WEFT_TEST_SANITIZED)
constexpr int kChain = 200000;
constexpr int kLoop = 1000000;
#else
constexpr int kChain = 1000;
constexpr int kLoop = 1000;
#endif
TEST_F(LoopFixture, LongChainsDoNotGrowTheStack) {
  EXPECT_EQ(run(depth(kChain)), kChain);
  EXPECT_EQ(run(many_sequential(kLoop)), 42L * kLoop);
}

TEST_F(LoopFixture, TaskIsLazyAndDestroyingItUnstartedRunsNothing) {
  bool ran = false;
  {
    auto t = [&ran]() -> Task<> {
      ran = true;
      co_return;
    }();
    EXPECT_TRUE(t.valid());
    EXPECT_FALSE(t.done());
  }
  EXPECT_FALSE(ran);
}

TEST_F(LoopFixture, SpawnFromAnotherThreadRunsOnTheLoop) {
  auto where = []() -> Task<std::thread::id> { co_return std::this_thread::get_id(); };
  std::thread::id loop_thread = run(where());
  EXPECT_NE(loop_thread, std::this_thread::get_id());
  Promise<std::thread::id> p;
  loop.execute([p]() mutable { p.set_value(std::this_thread::get_id()); });
  EXPECT_EQ(p.future().get(), loop_thread);
}

TEST(SpawnTest, OnAShutDownLoopTheFutureFails) {
  EventLoopGroup group(basic_driver_factory(), 1);
  EventLoop& loop = group.next();
  group.shutdown_gracefully(0ms, 1s).wait();
  Future<int> f = spawn(loop, forty_two());
  ASSERT_TRUE(f.wait_for(5s));
  EXPECT_THROW(f.get(), RejectedExecutionError);
  EXPECT_FALSE(spawn_detached(loop, nothing()));
}

TEST_F(LoopFixture, SleepResumesOnTheSameLoopAfterTheDelay) {
  auto sleeper = []() -> Task<bool> {
    EventLoop* before = EventLoop::current();
    auto start = Clock::now();
    co_await sleep(30ms);
    co_return EventLoop::current() == before && Clock::now() - start >= 29ms;
  };
  EXPECT_TRUE(run(sleeper()));
}

TEST(AwaitablesTest, OutsideALoopTheyFailClearly) {
  auto sleeper = []() -> Task<> { co_await sleep(1ms); };
  Task<> t = sleeper();
  // Run it on a plain thread through a detached runner: the await throws std::logic_error.
  Promise<void> p;
  auto runner = [](Task<> task, Promise<void> done) -> Task<> {
    try {
      co_await std::move(task);
      done.set_value();
    } catch (...) {
      done.set_error(std::current_exception());
    }
  }(std::move(t), p);
  auto h = runner.release();
  h.resume();
  ASSERT_TRUE(p.future().is_done());
  EXPECT_THROW(p.future().get(), std::logic_error);
  h.destroy();
}

TEST_F(LoopFixture, AwaitingAFutureCompletedOnAnotherThreadResumesOnTheLoop) {
  Promise<int> promise;  // no owning loop: completed by a plain thread
  auto waiter = [](Future<int> f) -> Task<std::pair<int, bool>> {
    EventLoop* before = EventLoop::current();
    int v = co_await f;
    co_return std::pair{v, EventLoop::current() == before};
  };
  Future<std::pair<int, bool>> result = spawn(loop, waiter(promise.future()));
  std::thread([promise]() mutable {
    std::this_thread::sleep_for(20ms);
    promise.set_value(7);
  }).join();
  ASSERT_TRUE(result.wait_for(5s));
  EXPECT_EQ(result.get().first, 7);
  EXPECT_TRUE(result.get().second);

  Promise<int> failing;
  failing.fail(std::runtime_error("no"));
  EXPECT_THROW(run(waiter(failing.future())), std::runtime_error);
}

// A Future of a move-only value can be awaited (HttpClientResponse is one): the value is moved out.
// Before, await_resume copied from get()'s const T& and the co_await did not compile.
TEST_F(LoopFixture, AwaitingAFutureOfAMoveOnlyValueMovesItOut) {
  auto waiter = [](Future<std::unique_ptr<int>> f) -> Task<std::unique_ptr<int>> {
    std::unique_ptr<int> v = co_await f;
    co_return v;
  };
  Promise<std::unique_ptr<int>> ready;  // done before the co_await: await_ready's path
  ready.set_value(std::make_unique<int>(5));
  Future<std::unique_ptr<int>> first = spawn(loop, waiter(ready.future()));
  ASSERT_TRUE(first.wait_for(5s));
  std::unique_ptr<int> five = first.take();
  ASSERT_NE(five, nullptr);
  EXPECT_EQ(*five, 5);

  Promise<std::unique_ptr<int>> later;  // completed by another thread while the coroutine waits
  Future<std::unique_ptr<int>> second = spawn(loop, waiter(later.future()));
  std::thread([later]() mutable { later.set_value(std::make_unique<int>(9)); }).join();
  ASSERT_TRUE(second.wait_for(5s));
  std::unique_ptr<int> nine = second.take();
  ASSERT_NE(nine, nullptr);
  EXPECT_EQ(*nine, 9);

  Promise<std::unique_ptr<int>> failing;
  failing.fail(std::runtime_error("no"));
  Future<std::unique_ptr<int>> third = spawn(loop, waiter(failing.future()));
  ASSERT_TRUE(third.wait_for(5s));
  EXPECT_THROW(third.take(), std::runtime_error);
}

TEST_F(LoopFixture, OffloadRunsElsewhereAndResumesOnTheLoop) {
  EventLoopGroup executors(basic_driver_factory(), 2, "offload-test");
  auto job = [&executors]() -> Task<bool> {
    std::thread::id loop_thread = std::this_thread::get_id();
    std::thread::id worker = co_await offload(executors, [] { return std::this_thread::get_id(); });
    bool back = std::this_thread::get_id() == loop_thread;
    co_await offload(executors, [] {});  // void works too
    co_return worker != loop_thread && back;
  };
  EXPECT_TRUE(run(job()));
  auto failing = [&executors]() -> Task<int> {
    co_return co_await offload(executors, []() -> int { throw std::invalid_argument("bad"); });
  };
  EXPECT_THROW(run(failing()), std::invalid_argument);
}

// Once a thread's lists are warm, coroutine frames do not come from the heap.
TEST_F(LoopFixture, FramesComeFromThePoolOnceWarm) {
  auto measure = []() -> Task<std::pair<std::uint64_t, std::uint64_t>> {
    for (int i = 0; i < 100; ++i) co_await forty_two();  // warm the size class
    auto before = frame_pool::thread_stats();
    for (int i = 0; i < 10000; ++i) co_await forty_two();
    auto after = frame_pool::thread_stats();
    co_return std::pair{after.misses - before.misses, after.hits - before.hits};
  };
  auto [misses, hits] = run(measure());
  EXPECT_EQ(misses, 0u);
  EXPECT_GE(hits, 10000u);
}

TEST(FramePoolTest, ListsAreBoundedAndOversizeFramesBypassThem) {
  const std::size_t start = frame_pool::thread_stats().cached_bytes;  // other size classes
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(frame_pool::allocate(1000));
  for (void* b : blocks) frame_pool::deallocate(b, 1000);
  EXPECT_LE(frame_pool::thread_stats().cached_bytes, start + frame_pool::kMaxCachedBytesPerClass);
  EXPECT_GT(frame_pool::thread_stats().cached_bytes, start);
  auto before = frame_pool::thread_stats();
  void* big = frame_pool::allocate(frame_pool::kMaxPooledSize + 1);
  frame_pool::deallocate(big, frame_pool::kMaxPooledSize + 1);
  EXPECT_EQ(frame_pool::thread_stats().misses, before.misses + 1);
  EXPECT_EQ(frame_pool::thread_stats().cached_bytes, before.cached_bytes);
}

using test::Held;  // a frame that is never resumed nor destroyed keeps its Held alive

TEST(ShutdownTest, ACoroutineSleepingWhenItsLoopTerminatesIsResumedWithEventLoopTerminatedError) {
  Future<int> f;
  {
    EventLoopGroup group(basic_driver_factory(), 1, "sleep-shutdown");
    Promise<void> asleep;
    auto sleeper = [](Promise<void> asleep) -> Task<int> {
      Held held;
      asleep.set_value();
      co_await sleep(1h);
      co_return 1;
    };
    f = spawn(group.next(), sleeper(asleep));
    asleep.future().get();
    EXPECT_EQ(Held::live.load(), 1);
    ASSERT_TRUE(group.shutdown_gracefully(0ms, 5s).wait_for(20s));
  }
  ASSERT_TRUE(f.is_done());
  EXPECT_THROW(f.get(), EventLoopTerminatedError);
  EXPECT_EQ(Held::live.load(), 0);
}

TEST(ShutdownTest, AnOffloadEndingAfterItsLoopTerminatedResumesTheCoroutineCancelled) {
  EventLoopGroup executors(basic_driver_factory(), 1, "offload-shutdown");
  Promise<void> release_work;
  Future<int> f;
  {
    EventLoopGroup group(basic_driver_factory(), 1, "offload-home");
    Promise<void> started;
    auto job = [](EventLoopGroup& executors, Promise<void> started, Future<void> release) -> Task<int> {
      Held held;
      // The awaiter is a named local: with g++ 12 a temporary `co_await offload(...)` whose
      // await_resume throws is destroyed twice (ASan sees the captured promise released twice).
      // Open: see the issue notes; OffloadAwaiter holds nothing by then, which is not yet enough.
      auto work = offload(executors, [started, release]() mutable {
        started.set_value();
        release.wait();
      });
      co_await work;
      co_return 1;
    };
    f = spawn(group.next(), job(executors, started, release_work.future()));
    started.future().get();
    ASSERT_TRUE(group.shutdown_gracefully(0ms, 5s).wait_for(20s));
    release_work.set_value();  // the offload ends now: its loop no longer runs anything
    ASSERT_TRUE(f.wait_for(20s));
  }
  EXPECT_THROW(f.get(), EventLoopTerminatedError);
  EXPECT_EQ(Held::live.load(), 0);
}

}  // namespace
}  // namespace weft
