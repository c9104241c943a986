// AcceptMode::reuseport on epoll and io_uring: a listener per loop of the child group, each keeping
// what it accepts on its own loop; one close stops them all; a failed bind leaves none open. On the
// blocking transport, whose loop serves one channel, the mode is refused.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"

namespace weft {
namespace {

constexpr std::size_t kLoops = 2;

using Loops = std::array<const EventLoop*, kLoops>;

// The group's loops, for handlers to compare with: they read this copy, never the group, which a
// test ends while a late connection's handler may still run.
Loops loops_of(EventLoopGroup& group) {
  Loops loops{};
  for (std::size_t i = 0; i < kLoops; ++i) loops[i] = &group.at(i);
  return loops;
}

// Which of `loops` `loop` is.
std::size_t index_of(const Loops& loops, const EventLoop& loop) {
  for (std::size_t i = 0; i < kLoops; ++i) {
    if (loops[i] == &loop) return i;
  }
  ADD_FAILURE() << "a channel runs on a loop outside the child group";
  return 0;
}

// Per loop of the group: connections its listener accepted, and accepted channels running on it.
struct PerLoop {
  std::array<std::atomic<int>, kLoops> accepted{};
  std::array<std::atomic<int>, kLoops> served{};
};

// In each listener's pipeline, before the acceptor: counts what the listener accepts.
class CountsAccepted final : public InboundHandler<AcceptedSocket> {
 public:
  explicit CountsAccepted(std::atomic<int>& count) : count_(count) {}
  void channel_read(Context& ctx, AcceptedSocket&& socket) override {
    count_.fetch_add(1);
    ctx.fire_read(std::move(socket));
  }

 private:
  std::atomic<int>& count_;
};

// Each accepted channel: counts its loop, answers one byte and closes (unless `stay_open`).
class AnswersAndCloses final : public InboundHandler<ByteBuf> {
 public:
  AnswersAndCloses(std::atomic<int>& count, bool stay_open) : count_(count), stay_open_(stay_open) {}
  void channel_active(Context& ctx) override {
    count_.fetch_add(1);
    ctx.write_and_flush(ByteBuf::copy_of("x"));
    if (!stay_open_) ctx.channel().close_after_flush();
  }
  void channel_read(Context&, ByteBuf&&) override {}

 private:
  std::atomic<int>& count_;
  bool stay_open_;
};

class ReuseportAcceptTest : public test::TransportTest {
 protected:
  // Ends the loops before a test reads a failed bind's exception: a loop thread may drop the last
  // reference to it, through libstdc++'s reference count, which TSan does not see.
  static void end_loops(EventLoopGroup& group) {
    group.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  }
  ServerBootstrap counting(EventLoopGroup& group, PerLoop& counts, bool stay_open = false) {
    ServerBootstrap b;
    b.group(group)
        .accept_mode(AcceptMode::reuseport)
        .handler([loops = loops_of(group), &counts](Channel& listener) {
          listener.pipeline().add_last(
              "count", std::make_shared<CountsAccepted>(counts.accepted[index_of(loops, listener.loop())]));
        })
        .child_handler([loops = loops_of(group), &counts, stay_open](Channel& ch) {
          ch.pipeline().add_last(
              "answer", std::make_shared<AnswersAndCloses>(counts.served[index_of(loops, ch.loop())], stay_open));
        });
    return b;
  }
};

// 200 connections from as many source ports: the kernel's hash gives each of the 2 listeners some
// (all on one would have probability 2^-199), and each connection runs on its listener's loop.
TEST_P(ReuseportAcceptTest, EachLoopServesWhatItsListenerAccepts) {
  constexpr int kConnections = 200;
  PerLoop counts;  // outlives the group: a late channel_active may still count
  EventLoopGroup group(transport(), kLoops);
  ChannelPtr server = counting(group, counts).bind(SocketAddress::loopback(0)).get();
  const std::uint16_t port = server->local_address().port();
  ASSERT_NE(port, 0);  // port 0: the kernel's port, shared by both listeners
  for (int i = 0; i < kConnections; ++i) {
    test::BlockingClient client(port);
    ASSERT_TRUE(client.is_open()) << "connection " << i << ": errno " << client.error();
    std::string answer;
    ASSERT_EQ(client.recv_until_end(&answer), test::StreamEnd::eof) << "connection " << i;
    ASSERT_EQ(answer, "x") << "connection " << i;
  }
  int served = 0;
  for (std::size_t i = 0; i < kLoops; ++i) {
    EXPECT_GT(counts.accepted[i].load(), 0) << "loop " << i << " accepted nothing";
    EXPECT_EQ(counts.served[i].load(), counts.accepted[i].load()) << "loop " << i;
    served += counts.served[i].load();
  }
  EXPECT_EQ(served, kConnections);
  server->close().get();
}

// Long-lived connections: each loop counts those open on it (EventLoop::Times::connections, the
// metrics' weft_event_loop_connections), and none once the clients have closed.
TEST_P(ReuseportAcceptTest, EachLoopCountsTheConnectionsOpenOnIt) {
  constexpr int kConnections = 24;
  PerLoop counts;  // outlives the group: a late channel_active may still count
  EventLoopGroup group(transport(), kLoops);
  ChannelPtr server = counting(group, counts, true).bind(SocketAddress::loopback(0)).get();
  std::vector<test::BlockingClient> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.emplace_back(server->local_address().port());
    ASSERT_EQ(clients.back().recv_exact(1), "x") << "connection " << i;
  }
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kLoops; ++i) {
    EXPECT_TRUE(test::eventually([&] {
      return group.at(i).times().connections == static_cast<std::uint64_t>(counts.served[i].load());
    })) << "loop "
        << i << ": " << group.at(i).times().connections << ", served " << counts.served[i].load();
    sum += group.at(i).times().connections;
  }
  EXPECT_EQ(sum, static_cast<std::uint64_t>(kConnections));
  clients.clear();
  for (std::size_t i = 0; i < kLoops; ++i) {
    EXPECT_TRUE(test::eventually([&] { return group.at(i).times().connections == 0; }))
        << "loop " << i << ": " << group.at(i).times().connections << " after every client closed";
  }
  server->close().get();
}

// One close stops every listener: once its future completes, a connect is refused (a listener
// left open would take every connection, as the only one left on the port).
TEST_P(ReuseportAcceptTest, ClosingTheServerClosesEveryListener) {
  PerLoop counts;  // outlives the group: a late channel_active may still count
  EventLoopGroup group(transport(), kLoops);
  ChannelPtr server = counting(group, counts).bind(SocketAddress::loopback(0)).get();
  const std::uint16_t port = server->local_address().port();
  test::BlockingClient before(port);
  ASSERT_TRUE(before.is_open());
  server->close().get();
  EXPECT_FALSE(server->is_open());
  for (int i = 0; i < 20; ++i) {
    test::BlockingClient after(port);
    EXPECT_FALSE(after.is_open()) << "attempt " << i << " connected after close";
    EXPECT_EQ(after.error(), ECONNREFUSED) << "attempt " << i;
  }
}

// The address is taken by a socket without SO_REUSEPORT: the bind fails with IoError.
TEST_P(ReuseportAcceptTest, AnAddressTakenFailsTheBind) {
  PerLoop counts;  // outlives the group: a late channel_active may still count
  EventLoopGroup group(transport(), kLoops);
  ChannelPtr taken =
      ServerBootstrap().group(group).child_handler([](Channel&) {}).bind(SocketAddress::loopback(0)).get();
  Future<ChannelPtr> bound = counting(group, counts).bind(taken->local_address());
  ASSERT_TRUE(bound.wait_for(std::chrono::seconds(5)));
  taken->close().get();
  end_loops(group);
  EXPECT_THROW(bound.get(), IoError);
}

// The second listener fails (its pipeline's setup throws) after the first was bound: the first is
// closed before the future fails, so its port refuses connections.
TEST_P(ReuseportAcceptTest, AFailedListenerClosesThoseAlreadyBound) {
  EventLoopGroup group(transport(), kLoops);
  std::array<ChannelPtr, kLoops> listeners;
  Future<ChannelPtr> bound = ServerBootstrap()
                                 .group(group)
                                 .accept_mode(AcceptMode::reuseport)
                                 .handler([&listeners, loops = loops_of(group)](Channel& listener) {
                                   const std::size_t i = index_of(loops, listener.loop());
                                   listeners[i] = listener.shared_from_this();
                                   if (i == 1) throw std::runtime_error("the second listener's setup failed");
                                 })
                                 .child_handler([](Channel&) {})
                                 .bind(SocketAddress::loopback(0));
  ASSERT_TRUE(bound.wait_for(std::chrono::seconds(5)));
  ASSERT_NE(bound.error(), nullptr);
  ASSERT_NE(listeners[0], nullptr);
  EXPECT_FALSE(listeners[0]->is_open());
  const std::uint16_t port = listeners[0]->local_address().port();
  ASSERT_NE(port, 0);  // it was bound
  test::BlockingClient after(port);
  EXPECT_FALSE(after.is_open());
  EXPECT_EQ(after.error(), ECONNREFUSED);
  end_loops(group);
  EXPECT_THROW(bound.get(), std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(On, ReuseportAcceptTest, ::testing::Values(&::weft::epoll(), &::weft::io_uring()),
                         test::transport_name);

// A blocking loop serves one channel, so a listener could not keep what it accepts: refused.
TEST(ReuseportAcceptBlockingTest, IsRefusedWithInvalidArgument) {
  EventLoopGroup group(blocking(), 2);
  ServerBootstrap b;
  b.group(group).accept_mode(AcceptMode::reuseport).child_handler([](Channel&) {});
  EXPECT_THROW(b.bind(SocketAddress::loopback(0)), std::invalid_argument);
}

}  // namespace
}  // namespace weft
