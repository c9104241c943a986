// Group lifecycle with real sockets and threads: graceful shutdown with connections open, and many
// threads posting tasks onto the loops of a group at once (run it under the tsan preset).

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "weft/channel/bootstrap.h"
#include "support/transports.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class LifecycleTest : public test::TransportTest {};

using test::BlockingClient;
using test::StreamEnd;

TEST_P(LifecycleTest, GracefulShutdownClosesOpenConnectionsAndCompletes) {
  constexpr int kClients = 8;
  test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  auto group = std::make_unique<EventLoopGroup>(transport(), loops(2, kClients + 1));
  ServerBootstrap b;
  b.group(*group).child_handler([&](Channel& ch) {
    ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
    ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();

  std::vector<BlockingClient> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back(server->local_address().port());
    ASSERT_TRUE(clients.back().is_open());
    ASSERT_TRUE(clients.back().round_trip("client " + std::to_string(i)));
  }
  std::vector<ChannelPtr> channels;
  for (int i = 0; i < kClients; ++i) {
    auto probe = probes.wait(static_cast<std::size_t>(i));
    ASSERT_NE(probe, nullptr);
    ASSERT_TRUE(probe->active.future().wait_for(5s));
    channels.push_back(probe->channel());
    ASSERT_NE(channels.back(), nullptr);
    EXPECT_TRUE(channels.back()->is_active());
  }

  auto start = std::chrono::steady_clock::now();
  Future<void> terminated = group->shutdown_gracefully(50ms, 5s);
  ASSERT_TRUE(terminated.wait_for(10s)) << "the group did not terminate";
  EXPECT_TRUE(terminated.is_success());
  // Termination came from the quiet period, not from the 5 s deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);

  EXPECT_TRUE(server->close_future().is_done());
  EXPECT_FALSE(server->is_open());
  for (int i = 0; i < kClients; ++i) {
    EXPECT_TRUE(channels[static_cast<std::size_t>(i)]->close_future().is_done()) << "channel " << i;
    EXPECT_FALSE(channels[static_cast<std::size_t>(i)]->is_open()) << "channel " << i;
    auto probe = probes.wait(static_cast<std::size_t>(i));
    EXPECT_TRUE(probe->inactive.future().is_done()) << "channel " << i << " never saw channel_inactive";
    EXPECT_EQ(clients[static_cast<std::size_t>(i)].recv_until_end(nullptr, 5s), StreamEnd::eof) << "client " << i;
  }
  // Nothing accepts any more.
  BlockingClient late(server->local_address().port());
  EXPECT_FALSE(late.is_open());

  channels.clear();
  server.reset();
  group.reset();
}

// A channel that registers with a loop after its shutdown began (an accepted connection handed to a
// child loop, a connect racing the shutdown) is closed as well, and does not hold the loop until
// the shutdown deadline.
TEST_P(LifecycleTest, ChannelRegisteredWhileTheLoopShutsDownIsClosedToo) {
  test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup servers(transport(), loops(1, 2));
  ServerBootstrap b;
  b.group(servers).child_handler([&](Channel& ch) {
    ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
    ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();

  EventLoopGroup clients(transport(), 1);
  auto start = std::chrono::steady_clock::now();
  Future<void> terminated = clients.shutdown_gracefully(200ms, 5s);
  // Let the loop start its shutdown (and close what it tracks) before the new channel arrives.
  std::this_thread::sleep_for(50ms);
  Bootstrap connector;
  connector.group(clients).handler([](Channel&) {});
  Future<ChannelPtr> connected = connector.connect(SocketAddress::loopback(server->local_address().port()));
  ASSERT_TRUE(connected.wait_for(5s));

  ASSERT_TRUE(terminated.wait_for(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "the late channel held the loop until the deadline";
  if (connected.is_success()) {
    ChannelPtr channel = connected.get();
    EXPECT_TRUE(channel->close_future().is_done()) << "the late channel was left open";
    EXPECT_FALSE(channel->is_open());
    auto probe = probes.wait(0);
    ASSERT_NE(probe, nullptr);
    EXPECT_TRUE(probe->inactive.future().wait_for(5s)) << "the server never saw the late client close";
  }
}

TEST_P(LifecycleTest, ShutdownOfAnIdleGroupCompletesWithinTheQuietPeriod) {
  EventLoopGroup group(transport(), 4);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(group.shutdown_gracefully(20ms, 5s).wait_for(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  for (std::size_t i = 0; i < group.size(); ++i) EXPECT_TRUE(group.at(i).is_terminated());
}

TEST_P(LifecycleTest, EightThreadsPostingTasksAtOnceRunEveryTaskOnItsLoop) {
  constexpr int kThreads = 8;
  constexpr int kTasksPerThread = 20000;
  constexpr int kTotal = kThreads * kTasksPerThread;
  constexpr std::size_t kLoops = 4;

  // Per loop: a plain counter that only that loop's thread touches (TSan checks that claim).
  std::vector<long> per_loop(kLoops, 0);
  std::atomic<int> done{0};
  std::atomic<int> wrong_thread{0};
  std::atomic<int> timers_fired{0};
  Promise<void> all_done;
  EventLoopGroup group(transport(), kLoops);  // after what its tasks refer to

  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int k = 0; k < kTasksPerThread; ++k) {
        std::size_t index = static_cast<std::size_t>(t + k) % group.size();
        EventLoop& loop = group.at(index);
        loop.execute([&, index, &loop = loop] {
          if (!loop.in_loop() || EventLoop::current() != &loop) wrong_thread.fetch_add(1);
          ++per_loop[index];
          if (done.fetch_add(1) + 1 == kTotal) all_done.set_value();
        });
        if (k % 1000 == 0) {
          // Timers from foreign threads too.
          group.next().schedule(1ms, [&] { timers_fired.fetch_add(1); });
        }
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();

  ASSERT_TRUE(all_done.future().wait_for(30s)) << done.load() << " of " << kTotal << " tasks ran";
  EXPECT_EQ(wrong_thread.load(), 0);

  // Read each loop's counter on its own loop.
  long sum = 0;
  for (std::size_t i = 0; i < group.size(); ++i) {
    Promise<long> count;
    group.at(i).execute([&, i] { count.set_value(per_loop[i]); });
    ASSERT_TRUE(count.future().wait_for(5s));
    EXPECT_GT(count.future().get(), 0) << "loop " << i << " ran nothing";
    sum += count.future().get();
  }
  EXPECT_EQ(sum, kTotal);
  EXPECT_TRUE(test::eventually([&] { return timers_fired.load() == kThreads * (kTasksPerThread / 1000); }, 5s))
      << timers_fired.load() << " timers fired";
  ASSERT_TRUE(group.shutdown_gracefully(10ms, 5s).wait_for(10s));
}

WEFT_ON_EVERY_TRANSPORT(LifecycleTest);

}  // namespace
}  // namespace weft
