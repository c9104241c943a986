#include "weft/metrics/event_loop_metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"
#include "weft/core/io_driver.h"

namespace weft::metrics {
namespace {

double sample(const std::string& text, const std::string& series) {
  const auto at = text.find(series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 1));
}

void run_three_tasks(EventLoop& loop) {
  for (int i = 0; i < 3; ++i) {
    Promise<void> ran;
    loop.execute([ran]() mutable { ran.set_value(); });
    ran.future().get();
  }
}

// The turn in progress when an observer comes is not counted, and on a loaded machine it may run
// every task the test posts while it drains the queue: more rounds, until an observed turn is done.
void run_tasks_until_an_observed_turn(EventLoop& loop) {
  for (int round = 0; round < 10000 && loop.times().turns == 0; ++round) run_three_tasks(loop);
}

// A loop's turns and times show while the EventLoopMetrics lives, read when scraped; its series
// go with it.
TEST(EventLoopMetrics, ReportsTheLoopsTimesWhileItLives) {
  Registry registry;
  EventLoopGroup loops(executor_driver_factory(), 1, "m");
  {
    EventLoopMetrics metrics(loops, registry);
    run_tasks_until_an_observed_turn(loops.at(0));
    const std::string text = registry.scrape();
    EXPECT_GE(sample(text, R"(weft_event_loop_turns_total{loop="m-0"})"), 1) << text;
    EXPECT_GE(sample(text, R"(weft_event_loop_busy_seconds_total{loop="m-0"})"), 0) << text;
    EXPECT_GE(sample(text, R"(weft_event_loop_poll_seconds_total{loop="m-0"})"), 0) << text;
    EXPECT_GE(sample(text, R"(weft_event_loop_tasks{loop="m-0"})"), 0) << text;
    EXPECT_EQ(sample(text, R"(weft_event_loop_connections{loop="m-0"})"), 0) << text;  // no server on it
  }
  EXPECT_EQ(registry.scrape().find("m-0"), std::string::npos);
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
}

// Runs tasks on `loop` until it has made two more observed turns: the turns after them began after
// this call (what a turn stores at its end, from the turns before, is there).
void wait_two_turns(EventLoop& loop) {
  const std::uint64_t start = loop.times().turns;
  while (loop.times().turns < start + 2) {
    Promise<void> ran;
    loop.execute([ran]() mutable { ran.set_value(); });
    ran.future().get();
  }
}

// Tasks posted from another thread while the loop is busy show as queued until they run, and each
// counts in the delay histogram; timers show as pending until they fire, then as fired.
TEST(EventLoopMetrics, CountsQueuedTasksTheirDelayAndTimers) {
  Registry registry;
  EventLoopGroup loops(executor_driver_factory(), 1, "q");
  EventLoop& loop = loops.at(0);
  EventLoopMetrics metrics(loops, registry);
  wait_two_turns(loop);
  const std::string delays = R"(weft_event_loop_task_delay_seconds_count{loop="q-0"})";
  const double delayed_before = sample(registry.scrape(), delays);

  std::atomic<bool> release{false};
  Promise<void> gate_entered;
  loop.execute([&release, gate_entered]() mutable {
    gate_entered.set_value();
    while (!release.load(std::memory_order_acquire)) {
    }
  });
  gate_entered.future().get();
  for (int i = 0; i < 3; ++i) loop.execute([] {});
  std::string text = registry.scrape();
  EXPECT_EQ(sample(text, R"(weft_event_loop_tasks_queued{loop="q-0"})"), 3) << text;
  release.store(true, std::memory_order_release);
  Promise<void> last;
  loop.execute([last]() mutable { last.set_value(); });
  last.future().get();
  text = registry.scrape();
  EXPECT_EQ(sample(text, R"(weft_event_loop_tasks_queued{loop="q-0"})"), 0) << text;
  // The gate, the three and the last: each ran in an observed turn.
  EXPECT_EQ(sample(text, delays) - delayed_before, 5) << text;
  EXPECT_EQ(sample(text, R"(weft_event_loop_task_delay_seconds_bucket{loop="q-0",le="+Inf"})"), sample(text, delays))
      << text;

  const double fired_before = sample(text, R"(weft_event_loop_timers_fired_total{loop="q-0"})");
  loop.schedule(std::chrono::hours(1), [] {});
  Promise<void> fired;
  loop.schedule(Duration::zero(), [fired]() mutable { fired.set_value(); });
  fired.future().get();
  wait_two_turns(loop);
  text = registry.scrape();
  EXPECT_EQ(sample(text, R"(weft_event_loop_timers_pending{loop="q-0"})"), 1) << text;
  EXPECT_EQ(sample(text, R"(weft_event_loop_timers_fired_total{loop="q-0"})") - fired_before, 1) << text;
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
}

// Unobserved, a loop counts nothing (no clock read per turn); observed, its turns count, and after
// the observer goes they stop again.
TEST(EventLoopMetrics, TheLoopCountsItsTimesOnlyWhileObserved) {
  EventLoopGroup loops(executor_driver_factory(), 1, "u");
  EventLoop& loop = loops.at(0);
  run_three_tasks(loop);
  EXPECT_EQ(loop.times().turns, 0u);
  EXPECT_EQ(loop.times().poll_ns, 0u);
  std::uint64_t turns = 0;
  {
    Registry registry;
    EventLoopMetrics metrics(loops, registry);
    run_tasks_until_an_observed_turn(loop);
    turns = loop.times().turns;
    EXPECT_GE(turns, 1u);
  }
  // The loop may finish the turn it was in when the observer left; none after it.
  run_three_tasks(loop);
  const std::uint64_t after = loop.times().turns;
  run_three_tasks(loop);
  EXPECT_EQ(loop.times().turns, after);
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
}

}  // namespace
}  // namespace weft::metrics
