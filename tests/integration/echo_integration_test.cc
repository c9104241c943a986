// Echo over real loopback sockets: many concurrent connections, a weft Bootstrap client, connect
// failures, and the echo server's backpressure against a client that does not read.

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"
#include "support/transports.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class EchoIntegrationTest : public test::TransportTest {};

using test::BlockingClient;

// Counts open server connections and the most seen at once.
struct ConnectionCounter {
  std::atomic<int> open{0};
  std::atomic<int> peak{0};
  std::atomic<int> total{0};
};

class CountingHandler final : public InboundHandler<ByteBuf> {
 public:
  explicit CountingHandler(ConnectionCounter& counter) : counter_(counter) {}
  void channel_active(Context& ctx) override {
    int now = counter_.open.fetch_add(1) + 1;
    counter_.total.fetch_add(1);
    int peak = counter_.peak.load();
    while (now > peak && !counter_.peak.compare_exchange_weak(peak, now)) {
    }
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    counter_.open.fetch_sub(1);
    ctx.fire_channel_inactive();
  }
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.fire_read(std::move(buf)); }

 private:
  ConnectionCounter& counter_;
};

ChannelPtr start_echo_server(EventLoopGroup& group, ConnectionCounter* counter = nullptr) {
  ServerBootstrap b;
  b.group(group).option(option::backlog, 2048).child_handler([counter](Channel& ch) {
    if (counter != nullptr) ch.pipeline().add_last("count", std::make_shared<CountingHandler>(*counter));
    ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
  });
  return b.bind(SocketAddress::loopback(0)).get();
}

std::string message_for(int i) {
  std::string m = "connection " + std::to_string(i) + ": ";
  while (m.size() < 200) m += static_cast<char>('a' + (m.size() + static_cast<std::size_t>(i)) % 26);
  return m;
}

TEST_P(EchoIntegrationTest, ManyConcurrentConnectionsEachEchoTheirOwnMessage) {
  // A thread per connection on the blocking transport: fewer, still far more than the cores.
  const int kConnections = is_blocking() ? 200 : 1000;
  constexpr int kConnectThreads = 4;
  rlim_t limit = test::raise_fd_limit();
  if (limit < static_cast<rlim_t>(2 * kConnections + 200)) GTEST_SKIP() << "RLIMIT_NOFILE hard limit is only " << limit;

  ConnectionCounter counter;
  EventLoopGroup group(transport(), loops(2, static_cast<std::size_t>(kConnections) + 1));
  ChannelPtr server = start_echo_server(group, &counter);
  const std::uint16_t port = server->local_address().port();
  ASSERT_NE(port, 0);

  // All connections are opened first (from several threads at once) and stay open together.
  std::vector<BlockingClient> clients(kConnections);
  std::vector<std::thread> threads;
  for (int t = 0; t < kConnectThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kConnections; i += kConnectThreads) clients[static_cast<std::size_t>(i)] = BlockingClient(port);
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(clients[static_cast<std::size_t>(i)].is_open())
        << "connection " << i << ": errno " << clients[static_cast<std::size_t>(i)].error();
  }

  // Every connection sends before any reads, so the server holds all of them busy at once.
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(clients[static_cast<std::size_t>(i)].send_all(message_for(i))) << "send on connection " << i;
  }
  for (int i = 0; i < kConnections; ++i) {
    std::string expected = message_for(i);
    auto back = clients[static_cast<std::size_t>(i)].recv_exact(expected.size(), 10s);
    ASSERT_TRUE(back.has_value()) << "connection " << i << " got no echo (errno "
                                  << clients[static_cast<std::size_t>(i)].error() << ")";
    ASSERT_EQ(*back, expected) << "connection " << i;
  }
  EXPECT_EQ(counter.total.load(), kConnections);
  EXPECT_EQ(counter.peak.load(), kConnections);

  for (auto& c : clients) c.close();
  EXPECT_TRUE(test::eventually([&] { return counter.open.load() == 0; }, 10s))
      << counter.open.load() << " server channels still open after every client closed";
  server->close().wait_for(5s);
}

// A client that reads only the echo of what it sends (in a round trip loop) sees its own bytes.
TEST_P(EchoIntegrationTest, LargeRoundTripsStayInOrder) {
  EventLoopGroup group(transport(), loops(2, 2));
  ChannelPtr server = start_echo_server(group);
  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7 + (i >> 10)) & 0xFF);
  // Send and receive together: 1 MiB is more than the socket buffers hold.
  std::string back;
  std::size_t sent = 0;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (back.size() < big.size() && std::chrono::steady_clock::now() < deadline) {
    if (sent < big.size()) sent += client.send_some(std::string_view(big).substr(sent, 256 * 1024));
    back += client.recv_some(256 * 1024, 10ms);
  }
  ASSERT_EQ(back.size(), big.size());
  EXPECT_TRUE(back == big) << "echoed bytes differ";
}

TEST_P(EchoIntegrationTest, BootstrapClientRoundTripsWithTheEchoServer) {
  EventLoopGroup group(transport(), loops(2, 3));
  ChannelPtr server = start_echo_server(group);

  struct Collector final : InboundHandler<ByteBuf> {
    explicit Collector(std::size_t expected) : expected_(expected) {}
    void channel_read(Context&, ByteBuf&& buf) override {
      std::lock_guard lock(mutex);
      data.append(reinterpret_cast<const char*>(buf.read_ptr()), buf.readable_bytes());
      if (data.size() >= expected_) complete.set_value();
    }
    std::mutex mutex;
    std::string data;
    Promise<void> complete;
    std::size_t expected_;
  };
  const std::string message = "hello from a weft client, " + std::string(5000, 'x') + " and goodbye";
  auto collector = std::make_shared<Collector>(message.size());

  Bootstrap client;
  client.group(group).option(option::tcp_nodelay, true).handler([collector](Channel& ch) {
    ch.pipeline().add_last("collect", collector);
  });
  Future<ChannelPtr> connected = client.connect(SocketAddress::loopback(server->local_address().port()));
  ASSERT_TRUE(connected.wait_for(5s));
  ChannelPtr channel = connected.get();
  ASSERT_TRUE(channel->is_active());
  EXPECT_EQ(channel->remote_address().port(), server->local_address().port());
  EXPECT_NE(channel->local_address().port(), 0);

  // From a non-loop thread: posted to the channel's loop.
  channel->write_and_flush(ByteBuf::copy_of(message));
  ASSERT_TRUE(collector->complete.future().wait_for(5s));
  {
    std::lock_guard lock(collector->mutex);
    EXPECT_EQ(collector->data, message);
  }
  ASSERT_TRUE(channel->close().wait_for(5s));
  EXPECT_FALSE(channel->is_open());
  EXPECT_FALSE(channel->is_active());
}

TEST_P(EchoIntegrationTest, ConnectToAClosedPortFailsWithConnectionRefused) {
  EventLoopGroup group(transport(), loops(1, 1));
  std::uint16_t port = test::unused_loopback_port();
  Bootstrap client;
  client.group(group).handler([](Channel&) {});
  Future<ChannelPtr> connected = client.connect(SocketAddress::loopback(port));
  ASSERT_TRUE(connected.wait_for(5s)) << "connect to a closed port neither failed nor succeeded";
  ASSERT_FALSE(connected.is_success());
  try {
    std::rethrow_exception(connected.error());
  } catch (const IoError& e) {
    EXPECT_EQ(e.code().value(), ECONNREFUSED) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected IoError(ECONNREFUSED), got: " << e.what();
  }
}

// The echo server stops reading while its echo cannot leave, so a client that writes without
// reading fills the socket buffers and then blocks, instead of growing the server's write queue.
TEST_P(EchoIntegrationTest, EchoServerStopsReadingFromAClientThatDoesNotRead) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark: the channel never turns "
                    "unwritable (the thread waits in send, and reading stops with it)";
  }
  auto meter = std::make_shared<test::PendingMeter>();
  test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 2));
  constexpr std::size_t kHigh = 64 * 1024;
  ServerBootstrap b;
  b.group(group)
      .child_option(option::write_buffer_high_water_mark, kHigh)
      .child_option(option::write_buffer_low_water_mark, 32 * 1024)
      .child_option(option::send_buffer_size, 64 * 1024)
      .child_option(option::receive_buffer_size, 64 * 1024)
      .child_handler([&](Channel& ch) {
        ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
        ch.pipeline().add_last("meter", meter);
        ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
      });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();

  BlockingClient client(server->local_address().port(), {.receive_buffer = 64 * 1024, .send_buffer = 64 * 1024});
  ASSERT_TRUE(client.is_open());

  // Write until the server's channel reports unwritable (its echo queue past the mark: the client
  // reads nothing). Bounded by far more than any socket buffers hold, and by a deadline for a
  // server that never says so.
  std::string chunk(64 * 1024, 'z');
  for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>('a' + i % 26);
  std::size_t sent = 0;
  constexpr std::size_t kLimit = 64u << 20;
  auto probe = probes.wait(0, 20s);
  ASSERT_NE(probe, nullptr);
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (sent < kLimit && std::chrono::steady_clock::now() < give_up && probe->index_of("unwritable") < 0) {
    const std::size_t n = client.send_some(std::string_view(chunk).substr(sent % chunk.size()));
    sent += n;
    if (n == 0) std::this_thread::sleep_for(1ms);  // its buffers are full: the server is busy, or has stopped reading
  }
  ASSERT_GE(probe->index_of("unwritable"), 0) << "writability_changed never reported unwritable";
  ASSERT_LT(sent, kLimit) << "the server kept reading from a client that never reads its echo";
  // One read batch may finish the buffer it is in when the mark is crossed: at most one read buffer more.
  EXPECT_LE(meter->max_pending.load(), kHigh + ChannelConfig{}.read_buffer_max);

  // Now read everything back: the server turns writable, reads again, and every byte returns in order.
  std::string back;
  std::size_t expected = sent;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (back.size() < expected && std::chrono::steady_clock::now() < deadline) {
    back += client.recv_some(256 * 1024, 10ms);
  }
  ASSERT_EQ(back.size(), expected);
  for (std::size_t i = 0; i < back.size(); ++i) {
    if (back[i] != chunk[i % chunk.size()]) {
      FAIL() << "echo differs at byte " << i;
    }
  }
  EXPECT_GE(probe->index_of("writable"), 0) << "writability_changed never reported writable again";
  EXPECT_TRUE(client.round_trip("still echoing")) << "the server did not resume reading";
}

WEFT_ON_EVERY_TRANSPORT(EchoIntegrationTest);

}  // namespace
}  // namespace weft
