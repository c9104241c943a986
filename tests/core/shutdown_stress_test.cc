// Start/stop cycles of an EventLoopGroup with work in flight on every path that can cross the
// termination: posts from another thread, listeners of futures owned by the loops, timers holding
// promises, coroutines asleep, in an offload or awaiting a future. Every future completes, every
// task either runs or is handed back, and no coroutine frame outlives its group.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "support/live_count.h"
#include "weft/core/awaitables.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/spawn.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::Held;  // a frame that is neither resumed nor destroyed keeps one alive

// A posted task: it either runs, or comes back to the poster; destroyed any other way it is lost.
struct Token {
  std::atomic<long>* ran;
  std::atomic<long>* lost;
  bool done = false;
  Token(std::atomic<long>* r, std::atomic<long>* l) : ran(r), lost(l) {}
  Token(Token&& o) noexcept : ran(o.ran), lost(o.lost), done(std::exchange(o.done, true)) {}
  ~Token() {
    if (!done) lost->fetch_add(1, std::memory_order_relaxed);
  }
  void operator()() {
    done = true;
    ran->fetch_add(1, std::memory_order_relaxed);
  }
};

Task<int> sleeper(Duration d) {
  Held held;
  co_await sleep(d);
  co_return 1;
}

Task<int> offloader(EventLoopGroup& executors) {
  Held held;
  co_await offload(executors, [] { std::this_thread::yield(); });
  co_await sleep(1h);
  co_return 2;
}

Task<int> waiter(Future<int> gate) {
  Held held;
  co_return co_await gate;
}

TEST(ShutdownStressTest, EveryFutureCompletesAndNoFrameOutlivesItsGroup) {
  constexpr int kCycles = 300;
  EventLoopGroup executors(basic_driver_factory(), 1, "stress-exec");
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::vector<Future<int>> futures;
    std::atomic<long> ran{0}, lost{0}, rejected{0}, posted{0};
    std::atomic<long> listeners_run{0}, listeners_added{0};
    {
      EventLoopGroup group(basic_driver_factory(), 2, "stress");
      std::vector<Promise<int>> gates(4);
      for (std::size_t i = 0; i < group.size(); ++i) {
        EventLoop& loop = group.at(i);
        futures.push_back(spawn(loop, sleeper(1h)));
        futures.push_back(spawn(loop, sleeper(std::chrono::microseconds(cycle % 7))));
        futures.push_back(spawn(loop, offloader(executors)));
        for (std::size_t g = i; g < gates.size(); g += group.size()) futures.push_back(spawn(loop, waiter(gates[g].future())));
        Promise<int> timer_promise(&loop);
        futures.push_back(timer_promise.future());
        loop.schedule(1h, [p = std::move(timer_promise)]() mutable { p.set_value(3); });
      }
      std::thread poster([&] {
        bool open[2] = {true, true};
        for (long n = 0; open[0] || open[1]; ++n) {
          const std::size_t i = static_cast<std::size_t>(n) % 2;
          if (!open[i]) continue;
          EventLoop& loop = group.at(i);
          posted.fetch_add(1, std::memory_order_relaxed);
          UniqueFunction<void()> task(Token(&ran, &lost));
          if (!loop.try_execute(std::move(task))) {
            rejected.fetch_add(1, std::memory_order_relaxed);
            task();  // handed back: run it here
            open[i] = false;
          }
          // A future owned by the loop, completed from this thread: its listener must run somewhere.
          Promise<int> p(&loop);
          listeners_added.fetch_add(1, std::memory_order_relaxed);
          p.future().add_listener([&](const Future<int>&) { listeners_run.fetch_add(1, std::memory_order_relaxed); });
          p.set_value(0);
          if (n == 64) gates[0].set_value(4);  // one gate opens in time, the others after or never
          std::this_thread::yield();  // let the queues empty: the loops end once nothing is queued
        }
        gates[1].set_value(5);
        gates.clear();  // the rest break
      });
      const bool terminated = group.shutdown_gracefully(0ms, 5s).wait_for(60s);
      poster.join();
      ASSERT_TRUE(terminated) << "cycle " << cycle;
    }
    for (auto& f : futures) ASSERT_TRUE(f.is_done()) << "cycle " << cycle;
    ASSERT_EQ(lost.load(), 0) << "cycle " << cycle;
    ASSERT_EQ(ran.load(), posted.load()) << "cycle " << cycle;  // rejected ones ran on the poster
    ASSERT_GE(rejected.load(), 2);
    ASSERT_EQ(listeners_run.load(), listeners_added.load()) << "cycle " << cycle;
    ASSERT_EQ(Held::live.load(), 0) << "cycle " << cycle;
  }
}


// Posts racing the final drain. A post that the drain ran before its poster looked at the loop's
// state again must report accepted, not be searched for among the late nodes forever (a hang seen
// in CI under TSan), nor be confused with a late post whose node took its freed address.
TEST(ShutdownStressTest, APostRacingTheFinalDrainRunsOnceOrComesBack) {
  constexpr int kCycles = 300;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::atomic<long> ran{0}, lost{0}, posted{0};
    std::atomic<int> ready{0};
    EventLoop loop(std::make_unique<BasicDriver>(), EventLoop::Options{.name = "race"});
    loop.start();
    std::vector<std::thread> posters;
    for (int t = 0; t < 2; ++t) {
      posters.emplace_back([&] {
        ready.fetch_add(1);
        for (;;) {
          posted.fetch_add(1, std::memory_order_relaxed);
          UniqueFunction<void()> task(Token(&ran, &lost));
          if (!loop.try_execute(std::move(task))) {
            task();  // handed back: it runs here
            return;
          }
        }
      });
    }
    while (ready.load() < 2) std::this_thread::yield();
    // The posters never let the queue empty: the loop ends at the timeout, with posts in flight.
    ASSERT_TRUE(loop.shutdown_gracefully(0ms, 1ms).wait_for(60s)) << "cycle " << cycle;
    for (auto& t : posters) t.join();
    ASSERT_EQ(lost.load(), 0) << "cycle " << cycle;
    ASSERT_EQ(ran.load(), posted.load()) << "cycle " << cycle;
  }
}

}  // namespace
}  // namespace weft
