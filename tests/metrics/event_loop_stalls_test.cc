// Stalls: a handler's read or a task that runs past its loop's stall threshold is counted in
// weft_event_loop_stalls_total and logged once with its name.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "support/blocking_client.h"
#include "support/stderr_capture.h"
#include "support/transports.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/handler.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"
#include "weft/core/io_driver.h"
#include "weft/metrics/event_loop_metrics.h"

namespace weft::metrics {
namespace {

using namespace std::chrono_literals;

constexpr Duration kThreshold = 20ms;

// The sum of a loop family's series over the loops whose name starts with `prefix`.
double sum_over_loops(const std::string& text, const std::string& metric, const std::string& prefix) {
  double sum = 0;
  const std::string head = metric + "{loop=\"" + prefix;
  for (auto at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
    const auto value = text.find("} ", at);
    sum += std::stod(text.substr(value + 2));
  }
  return sum;
}

// Runs tasks on every loop of `group` until each has made two more observed turns (times().turns
// counts only those): the turns after them began after this call, with the settings made before it.
void wait_two_turns_on_each(EventLoopGroup& group) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    EventLoop& loop = group.at(i);
    const std::uint64_t start = loop.times().turns;
    while (loop.times().turns < start + 2) {
      Promise<void> ran;
      loop.execute([ran]() mutable { ran.set_value(); });
      ran.future().get();
    }
  }
}

// Busy until `release` is set and the clock has moved past the threshold since `began`.
void block(TimePoint began, const std::atomic<bool>& release) {
  while (!release.load(std::memory_order_acquire) || Clock::now() - began <= kThreshold) {
  }
}

// Passes each read on (its time includes the blocker's: it must not be the one named).
class Relay final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& message) override { ctx.fire_read(std::move(message)); }
};

// Blocks its loop on each read until the test lets it go, then answers one byte.
class Blocker final : public InboundHandler<ByteBuf> {
 public:
  std::atomic<int> entered{0};
  std::atomic<bool> release{false};
  void channel_read(Context& ctx, ByteBuf&& message) override {
    const TimePoint began = Clock::now();
    entered.fetch_add(1, std::memory_order_release);
    block(began, release);
    release.store(false, std::memory_order_relaxed);
    ctx.write_and_flush(ByteBuf::copy_of(message.to_string().substr(0, 1)));
  }
  bool is_sharable() const noexcept override { return true; }
};

class EventLoopStalls : public test::TransportTest {};

// A handler that blocks its loop, on each transport: counted each time, and named closer each time,
// each name logged once: first the poll's I/O (the loop then times its channel reads), then its
// channel's read, by the pipeline's handlers (the pipeline then times its handlers' reads), then the
// handler by its pipeline name. The handler before it, whose read included the blocked one, is not
// named.
TEST_P(EventLoopStalls, AHandlerThatBlocksItsLoopIsCountedAndNamedOnce) {
  Registry registry;
  EventLoopGroup group(transport(), loops(1, 2), "stall");
  auto blocker = std::make_shared<Blocker>();
  std::optional<EventLoopMetrics> metrics;
  metrics.emplace(group, registry);
  for (std::size_t i = 0; i < group.size(); ++i) group.at(i).set_stall_threshold(kThreshold);
  wait_two_turns_on_each(group);
  ServerBootstrap bootstrap;
  bootstrap.group(group).child_handler([blocker](Channel& ch) {
    ch.pipeline().add_last("relay", std::make_shared<Relay>());
    ch.pipeline().add_last("blocker", blocker);
  });
  ChannelPtr server = bootstrap.bind(SocketAddress::loopback(0)).get();
  test::StderrCapture capture;
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(client.send_all("a"));
    ASSERT_TRUE(test::eventually([&] { return blocker->entered.load(std::memory_order_acquire) == i; }));
    blocker->release.store(true, std::memory_order_release);
    ASSERT_EQ(client.recv_exact(1), "a");
  }
  client.close();
  server->close().wait();
  group.shutdown_gracefully(0ms, 5s).wait();  // the loops' last turns counted
  const std::string text = registry.scrape();
  const std::string log = capture.stop();
  EXPECT_GE(sum_over_loops(text, "weft_event_loop_stalls_total", "stall-"), 4) << text;
  EXPECT_EQ(test::count_occurrences(log, "I/O 'one poll's events"), 1) << log;
  EXPECT_EQ(test::count_occurrences(log, "channel read 'relay, blocker'"), 1) << log;
  EXPECT_EQ(test::count_occurrences(log, "handler 'blocker'"), 1) << log;
  EXPECT_EQ(test::count_occurrences(log, "handler 'relay'"), 0) << log;
  metrics.reset();
}

WEFT_ON_EVERY_TRANSPORT(EventLoopStalls);

// The same blocking task, twice: counted twice, logged once under its type's name (the lambda's,
// which names the function that made it); with the threshold at zero, not watched at all.
TEST(EventLoopStallsOfTasks, ATaskIsNamedByWhereItWasMadeAndZeroTurnsTheWatchOff) {
  Registry registry;
  EventLoopGroup group(executor_driver_factory(), 1, "tstall");
  EventLoop& loop = group.at(0);
  EventLoopMetrics metrics(group, registry);
  loop.set_stall_threshold(kThreshold);
  wait_two_turns_on_each(group);
  std::atomic<bool> go{true};
  auto run_blocking_task = [&] {
    Promise<void> ran;
    loop.execute([ran, &go]() mutable {
      block(Clock::now(), go);
      ran.set_value();
    });
    ran.future().get();
    Promise<void> after;  // runs once the blocking task has been reported
    loop.execute([after]() mutable { after.set_value(); });
    after.future().get();
  };
  auto stalls = [&] { return sum_over_loops(registry.scrape(), "weft_event_loop_stalls_total", "tstall-"); };
  test::StderrCapture capture;
  run_blocking_task();
  run_blocking_task();
  const double counted = stalls();
  EXPECT_GE(counted, 2);
  loop.set_stall_threshold(Duration::zero());
  wait_two_turns_on_each(group);  // (the threshold is read at each turn's start)
  const double before_off = stalls();
  run_blocking_task();
  EXPECT_EQ(stalls(), before_off);
  const std::string log = capture.stop();
  // (Other tasks may stall on a loaded machine, each under its own name: the blocking one is logged once.)
  EXPECT_EQ(test::count_occurrences(log, "ATaskIsNamedByWhereItWasMadeAndZeroTurnsTheWatchOff"), 1) << log;
  EXPECT_NE(log.find("stalled: task 'weft::metrics::"), std::string::npos) << log;
  group.shutdown_gracefully(0ms, 1s).wait();
}

}  // namespace
}  // namespace weft::metrics
