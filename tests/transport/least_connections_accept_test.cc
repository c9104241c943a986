// AcceptMode::least_connections on every transport (and AcceptMode::acceptor beside it): every
// connection is served; long-lived connections, each accepted before the next, end up on the loops
// with counts that differ by at most one; a loop whose connections closed gets the next ones; one
// close of the server refuses later connects. The server answers each connection with the index of
// its loop, which is also how a test knows a connection was accepted before it opens the next.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"

namespace weft {
namespace {

// Each accepted channel: answers with its loop's index (one byte, '0' + i); closes after it when
// `close_after_answer`. Counts closes on the channel's close future, after the server's own listener.
class AnswersLoopIndex final : public InboundHandler<ByteBuf> {
 public:
  AnswersLoopIndex(char index, bool close_after_answer) : index_(index), close_(close_after_answer) {}
  void channel_active(Context& ctx) override {
    ctx.write_and_flush(ByteBuf::copy_of(std::string_view(&index_, 1)));
    if (close_) ctx.channel().close_after_flush();
  }
  void channel_read(Context&, ByteBuf&&) override {}

 private:
  char index_;
  bool close_;
};

class LeastConnectionsAcceptTest : public test::TransportTest {
 protected:
  // A server on its own acceptor loop, handing connections to `child` in `mode`.
  ChannelPtr start(EventLoopGroup& parent, EventLoopGroup& child, AcceptMode mode, bool close_after_answer) {
    std::vector<const EventLoop*> loops;
    for (std::size_t i = 0; i < child.size(); ++i) loops.push_back(&child.at(i));
    return ServerBootstrap()
        .group(parent, child)
        .accept_mode(mode)
        .child_handler([loops, close_after_answer, closed = closed_](Channel& ch) {
          const auto at = std::find(loops.begin(), loops.end(), &ch.loop());
          ASSERT_NE(at, loops.end());
          ch.pipeline().add_last("answer", std::make_shared<AnswersLoopIndex>(
                                               static_cast<char>('0' + (at - loops.begin())), close_after_answer));
          ch.close_future().add_listener([closed](const Future<void>&) { closed->fetch_add(1); });
        })
        .bind(SocketAddress::loopback(0))
        .get();
  }
  // Connects and reads the loop index the server answers; -1 on failure (reported).
  static int connect(std::uint16_t port, test::BlockingClient& client) {
    client = test::BlockingClient(port);
    if (!client.is_open()) {
      ADD_FAILURE() << "connect: errno " << client.error();
      return -1;
    }
    const std::optional<std::string> answer = client.recv_exact(1);
    if (!answer) {
      ADD_FAILURE() << "no answer from the server";
      return -1;
    }
    return (*answer)[0] - '0';
  }
  // Server-side connections closed so far (counted once the server stopped counting them in).
  std::shared_ptr<std::atomic<int>> closed_ = std::make_shared<std::atomic<int>>(0);
};

// Short connections in both modes, one after the other: every one is answered, and closing the
// server refuses the next connect.
TEST_P(LeastConnectionsAcceptTest, EveryConnectionIsServedAndCloseStopsAccepting) {
  constexpr int kConnections = 40;
  for (const AcceptMode mode : {AcceptMode::acceptor, AcceptMode::least_connections}) {
    SCOPED_TRACE(mode == AcceptMode::acceptor ? "acceptor" : "least_connections");
    EventLoopGroup parent(transport(), 1);
    EventLoopGroup child(transport(), loops(2, kConnections));
    ChannelPtr server = start(parent, child, mode, true);
    const std::uint16_t port = server->local_address().port();
    for (int i = 0; i < kConnections; ++i) {
      test::BlockingClient client;
      const int loop = connect(port, client);
      ASSERT_GE(loop, 0) << "connection " << i;
      ASSERT_LT(static_cast<std::size_t>(loop), child.size());
      ASSERT_EQ(client.recv_until_end(), test::StreamEnd::eof) << "connection " << i;
    }
    server->close().get();
    test::BlockingClient after(port);
    EXPECT_FALSE(after.is_open());
    EXPECT_EQ(after.error(), ECONNREFUSED);
  }
}

// M long-lived connections over N loops, each accepted before the next opens: per-loop counts
// differ by at most one (round-robin would too here; the next test tells the modes apart).
TEST_P(LeastConnectionsAcceptTest, LongLivedConnectionsDifferByAtMostOnePerLoop) {
  constexpr std::size_t kConnections = 11;
  EventLoopGroup parent(transport(), 1);
  EventLoopGroup child(transport(), loops(3, kConnections));
  ChannelPtr server = start(parent, child, AcceptMode::least_connections, false);
  std::vector<test::BlockingClient> clients(kConnections);
  std::vector<int> per_loop(child.size(), 0);
  for (std::size_t i = 0; i < kConnections; ++i) {
    const int loop = connect(server->local_address().port(), clients[i]);
    ASSERT_GE(loop, 0) << "connection " << i;
    ++per_loop[static_cast<std::size_t>(loop)];
  }
  const auto [fewest, most] = std::minmax_element(per_loop.begin(), per_loop.end());
  EXPECT_LE(*most - *fewest, 1) << "fewest " << *fewest << ", most " << *most;
  // Each loop counts the connections open on it (EventLoop::Times::connections, the metrics' series).
  for (std::size_t i = 0; i < child.size(); ++i) {
    EXPECT_TRUE(test::eventually([&] {
      return child.at(i).times().connections == static_cast<std::uint64_t>(per_loop[i]);
    })) << "loop "
        << i << ": " << child.at(i).times().connections << ", served " << per_loop[i];
  }
  clients.clear();
  for (std::size_t i = 0; i < child.size(); ++i) {
    EXPECT_TRUE(test::eventually([&] { return child.at(i).times().connections == 0; }))
        << "loop " << i << ": " << child.at(i).times().connections << " after every client closed";
  }
  server->close().get();
}

// Two loops, four connections (two each); the two on loop 0 close. The next two connections go to
// loop 0 (round-robin would give one to each), and the counts are even again.
TEST_P(LeastConnectionsAcceptTest, ALoopWhoseConnectionsClosedGetsTheNextOnes) {
  if (is_blocking()) GTEST_SKIP() << "a blocking loop serves one connection: a free loop always has none";
  EventLoopGroup parent(transport(), 1);
  EventLoopGroup child(transport(), 2);
  ChannelPtr server = start(parent, child, AcceptMode::least_connections, false);
  const std::uint16_t port = server->local_address().port();
  std::vector<test::BlockingClient> clients(4);
  std::vector<int> loop_of(4, -1);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    loop_of[i] = connect(port, clients[i]);
    ASSERT_GE(loop_of[i], 0);
  }
  ASSERT_EQ(std::count(loop_of.begin(), loop_of.end(), 0), 2);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    if (loop_of[i] == 0) clients[i] = test::BlockingClient();  // closes
  }
  ASSERT_TRUE(test::eventually([this] { return closed_->load() == 2; }));
  for (int i = 0; i < 2; ++i) {
    test::BlockingClient next;
    EXPECT_EQ(connect(port, next), 0) << "new connection " << i;
    clients.push_back(std::move(next));
  }
  server->close().get();
}

WEFT_ON_EVERY_TRANSPORT(LeastConnectionsAcceptTest);

}  // namespace
}  // namespace weft
