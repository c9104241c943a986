// What only the blocking transport does: a thread per channel, its bound, and blocking writes. The
// behaviour it shares with epoll is tested on both transports (SocketTransportTest, integration).

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/events.h"
#include "weft/core/future.h"
#include "weft/core/error.h"
#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"
#include "weft/transport/transport_named.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::BlockingClient;
using test::StreamEnd;

// Records the exceptions that reach a server channel's pipeline.
class ServerErrors final : public InboundHandler<AcceptedSocket> {
 public:
  void channel_read(Context& ctx, AcceptedSocket&& socket) override { ctx.fire_read(std::move(socket)); }
  void exception_caught(Context& ctx, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const ChannelLimitError& e) {
      std::lock_guard lock(mutex_);
      limit_messages_.emplace_back(e.what());
    } catch (...) {
    }
    ctx.fire_exception(std::move(error));
  }
  std::vector<std::string> limit_messages() {
    std::lock_guard lock(mutex_);
    return limit_messages_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> limit_messages_;
};

struct EchoServer {
  test::ProbeRegistry probes;
  std::shared_ptr<ServerErrors> errors = std::make_shared<ServerErrors>();
  ChannelPtr channel;
  std::uint16_t port = 0;

  void start(EventLoopGroup& parent, EventLoopGroup& child, ChannelConfig child_config = {}) {
    ServerBootstrap b;
    b.group(parent, child)
        .handler([this](Channel& ch) { ch.pipeline().add_last("errors", errors); })
        .child_option(option::send_buffer_size, child_config.send_buffer_size)
        .child_handler([this](Channel& ch) {
          ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
          ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
        });
    channel = b.bind(SocketAddress::loopback(0)).get();
    port = channel->local_address().port();
  }
};

TEST(BlockingTransportTest, TransportNamedFindsEachAndRejectsOthersNamingThem) {
  EXPECT_EQ(&transport_named("epoll"), &epoll());
  EXPECT_EQ(&transport_named("io_uring"), &io_uring());
  EXPECT_EQ(&transport_named("blocking"), &blocking());
  try {
    transport_named("kqueue");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kqueue"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("epoll, io_uring, blocking"), std::string::npos) << e.what();
  }
}

TEST(BlockingTransportTest, AServerBeyondItsBoundClosesTheConnectionAndFiresChannelLimitError) {
  EchoServer server;  // outlives the groups: the initializers refer to it
  EventLoopGroup acceptor(blocking(), 1);
  EventLoopGroup workers(blocking(), 2);
  server.start(acceptor, workers);

  BlockingClient first(server.port), second(server.port);
  ASSERT_TRUE(first.round_trip("one"));
  ASSERT_TRUE(second.round_trip("two"));
  BlockingClient third(server.port);  // the kernel accepts it; the server closes it at once
  ASSERT_TRUE(third.is_open());
  third.send_all("three");
  EXPECT_NE(third.recv_until_end(nullptr, 5s), StreamEnd::timeout) << "the refused connection was left open";
  ASSERT_TRUE(test::eventually([&] { return !server.errors->limit_messages().empty(); }, 5s));
  const std::string message = server.errors->limit_messages().front();
  EXPECT_NE(message.find("at most 2"), std::string::npos) << message;
  EXPECT_TRUE(first.round_trip("still served")) << "refusing one connection disturbed the others";
}

TEST(BlockingTransportTest, ALoopFreedByAClosedChannelServesTheNextConnection) {
  EchoServer server;
  EventLoopGroup acceptor(blocking(), 1);
  EventLoopGroup workers(blocking(), 2);
  server.start(acceptor, workers);

  BlockingClient first(server.port);
  ASSERT_TRUE(first.round_trip("one"));
  auto probe = server.probes.wait(0);  // first's channel: the only one yet
  ASSERT_NE(probe, nullptr);
  BlockingClient second(server.port);
  ASSERT_TRUE(second.round_trip("two"));
  EventLoop* freed = &probe->channel()->loop();
  first.close();
  ASSERT_TRUE(probe->inactive.future().wait_for(5s));

  for (int round = 0; round < 3; ++round) {  // each time the loop is freed and taken again
    BlockingClient next(server.port);
    ASSERT_TRUE(next.round_trip("again " + std::to_string(round))) << "round " << round;
    auto next_probe = server.probes.wait(static_cast<std::size_t>(2 + round));
    ASSERT_NE(next_probe, nullptr);
    EXPECT_EQ(&next_probe->channel()->loop(), freed) << "round " << round;
    next.close();
    ASSERT_TRUE(next_probe->inactive.future().wait_for(5s));
  }
  EXPECT_TRUE(server.errors->limit_messages().empty());
}

TEST(BlockingTransportTest, AConnectOnAFullGroupFailsWithChannelLimitErrorUntilALoopIsFreed) {
  EchoServer server;
  EventLoopGroup servers(blocking(), 3);
  server.start(servers, servers);
  EventLoopGroup clients(blocking(), 1);
  Bootstrap connector;
  connector.group(clients).handler([](Channel&) {});

  ChannelPtr first = connector.connect(SocketAddress::loopback(server.port)).get();
  Future<ChannelPtr> refused = connector.connect(SocketAddress::loopback(server.port));
  ASSERT_TRUE(refused.wait_for(5s));
  try {
    refused.get();
    FAIL() << "expected ChannelLimitError";
  } catch (const ChannelLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 1"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(first->close().wait_for(5s));
  Future<ChannelPtr> again = connector.connect(SocketAddress::loopback(server.port));
  ASSERT_TRUE(again.wait_for(5s));
  ASSERT_TRUE(again.is_success());
  EXPECT_EQ(&again.get()->loop(), &clients.at(0));
  again.get()->close().wait();
}

TEST(BlockingTransportTest, AThreadWaitingForInputRunsWritesAndClosesPostedFromOtherThreads) {
  EchoServer server;
  EventLoopGroup group(blocking(), 2);
  server.start(group, group);
  BlockingClient client(server.port);
  ASSERT_TRUE(client.round_trip("hello"));
  ChannelPtr channel = server.probes.wait(0)->channel();
  ASSERT_NE(channel, nullptr);

  std::this_thread::sleep_for(50ms);  // the channel's thread waits for input that never comes
  channel->write_and_flush(ByteBuf::copy_of("from another thread"));
  auto got = client.recv_exact(std::string("from another thread").size(), 2s);
  ASSERT_TRUE(got.has_value()) << "the waiting thread did not run the posted write";
  EXPECT_EQ(*got, "from another thread");

  std::this_thread::sleep_for(50ms);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(channel->close().wait_for(2s)) << "close from another thread did not wake the reader";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(client.recv_until_end(nullptr, 2s), StreamEnd::eof);
}

// Writes 16 KiB chunks, each flushed, while writable: a blocking send holds the thread once the
// peer's buffers are full.
class Writer final : public InboundHandler<ByteBuf> {
 public:
  static constexpr std::size_t kChunk = 16 * 1024;
  static constexpr std::size_t kLimit = 4u << 20;  // far more than the socket buffers hold
  void channel_active(Context& ctx) override {
    ctx.fire_channel_active();
    Channel& ch = ctx.channel();
    while (ch.is_open() && ch.is_writable() && sent < kLimit) {
      ByteBuf chunk = ctx.allocator().buffer(kChunk);
      for (std::size_t i = 0; i < kChunk; ++i) chunk.write_u8(static_cast<std::uint8_t>((sent + i) % 251));
      sent.fetch_add(kChunk);
      ctx.write_and_flush(std::move(chunk));
      max_pending.store(std::max(max_pending.load(), ch.pending_write_bytes()));
    }
    done.set_value();
  }
  void channel_read(Context&, ByteBuf&&) override {}

  std::atomic<std::size_t> sent{0};
  std::atomic<std::size_t> max_pending{0};
  Promise<void> done;
};

TEST(BlockingTransportTest, APeerThatNeverReadsBlocksTheWriterWithABoundedQueue) {
  auto writer = std::make_shared<Writer>();
  EventLoopGroup group(blocking(), 2);
  ServerBootstrap b;
  b.group(group).child_option(option::send_buffer_size, 64 * 1024).child_handler([writer](Channel& ch) {
    ch.pipeline().add_last("writer", writer);
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port(), {.receive_buffer = 32 * 1024});
  ASSERT_TRUE(client.is_open());

  // The sent count stops growing: the writer's thread is held in send().
  std::size_t last = 0;
  ASSERT_TRUE(test::eventually(
      [&] {
        std::size_t now = writer->sent.load();
        bool still = now > 0 && now == last;
        last = now;
        std::this_thread::sleep_for(100ms);
        return still && writer->sent.load() == now;
      },
      10s));
  EXPECT_LT(writer->sent.load(), Writer::kLimit) << "far more was taken than socket buffers hold";
  EXPECT_LE(writer->max_pending.load(), ChannelConfig{}.write_buffer_high_water_mark);
  EXPECT_FALSE(writer->done.future().is_done());

  // Its loop runs nothing else meanwhile: a task waits for the send.
  std::atomic<bool> ran{false};
  EventLoop& writer_loop = &group.at(0) == &server->loop() ? group.at(1) : group.at(0);
  writer_loop.execute([&] { ran = true; });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(ran.load()) << "the writer thread ran a task while its send had not completed";

  // The peer reads: the sends complete, the handler returns, the task runs, and every byte arrives
  // in order.
  std::string data;
  while (data.size() < Writer::kLimit) {
    std::string more = client.recv_some(std::size_t{1} << 20, 5s);
    if (more.empty()) break;
    data += more;
  }
  EXPECT_TRUE(test::eventually([&] { return ran.load(); }, 5s));
  ASSERT_EQ(data.size(), Writer::kLimit);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (static_cast<std::uint8_t>(data[i]) != static_cast<std::uint8_t>(i % 251)) FAIL() << "byte " << i << " differs";
  }
  server->close().wait();
}

TEST(BlockingTransportTest, CloseFromAnotherThreadInterruptsASendToAPeerThatNeverReads) {
  auto writer = std::make_shared<Writer>();
  test::ProbeRegistry probes;
  EventLoopGroup group(blocking(), 2);
  ServerBootstrap b;
  b.group(group).child_option(option::send_buffer_size, 64 * 1024).child_handler([&](Channel& ch) {
    ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
    ch.pipeline().add_last("writer", writer);
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port(), {.receive_buffer = 32 * 1024});
  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(probe->active.future().wait_for(5s));
  ChannelPtr channel = probe->channel();
  std::size_t last = 0;
  ASSERT_TRUE(test::eventually(
      [&] {
        std::size_t now = writer->sent.load();
        std::this_thread::sleep_for(100ms);
        bool still = now > 0 && now == last && writer->sent.load() == now;
        last = now;
        return still;
      },
      10s));

  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(channel->close().wait_for(5s)) << "close did not interrupt the blocked send";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(writer->done.future().wait_for(5s));
  // The group shuts down promptly too, and the freed loop serves a new connection first.
  BlockingClient next(server->local_address().port());
  EXPECT_TRUE(test::eventually([&] { return probes.wait(1, 0ms) != nullptr; }, 5s));
  ASSERT_TRUE(group.shutdown_gracefully(10ms, 5s).wait_for(10s));
}

TEST(BlockingTransportTest, GroupShutdownInterruptsASendToAPeerThatNeverReads) {
  auto writer = std::make_shared<Writer>();
  EventLoopGroup group(blocking(), 2);
  ServerBootstrap b;
  b.group(group).child_option(option::send_buffer_size, 64 * 1024).child_handler([writer](Channel& ch) {
    ch.pipeline().add_last("writer", writer);
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port(), {.receive_buffer = 32 * 1024});
  ASSERT_TRUE(test::eventually([&] { return writer->sent.load() > 0; }, 5s));
  std::this_thread::sleep_for(300ms);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(group.shutdown_gracefully(10ms, 10s).wait_for(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "the blocked send held the shutdown to its deadline";
}

// At a graceful shutdown a handler may still say goodbye (an HTTP/2 GOAWAY, the answers in flight):
// a blocking send made after the shutdown began is allowed, and bounded by the shutdown's deadline.
class GoodbyeWriter final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&&) override {}
  void channel_active(Context& ctx) override {
    active.set_value();
    ctx.fire_channel_active();
  }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) == nullptr) return ctx.fire_user_event(event);
    ctx.channel().end_for_shutdown_itself();
    // Far more than the peer's buffers hold: the send blocks until the shutdown's deadline.
    ctx.write_and_flush(ByteBuf::copy_of(std::string(kGoodbye, 'g')));
    goodbye_written.store(true);
  }
  static constexpr std::size_t kGoodbye = 16 << 20;
  Promise<void> active;
  std::atomic<bool> goodbye_written{false};
};

TEST(BlockingTransportTest, ASendMadeAfterAGracefulShutdownBeganLeavesAndEndsAtTheShutdownsDeadline) {
  auto writer = std::make_shared<GoodbyeWriter>();
  EventLoopGroup group(blocking(), 2);
  ServerBootstrap b;
  b.group(group).child_option(option::send_buffer_size, 64 * 1024).child_handler([writer](Channel& ch) {
    ch.pipeline().add_last("writer", writer);
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port(), {.receive_buffer = 32 * 1024});
  ASSERT_TRUE(writer->active.future().wait_for(20s));
  Future<void> terminated = group.shutdown_gracefully(0ms, 300ms);
  // The goodbye's first bytes arrive (the send was not refused for the shutdown)...
  const std::string first = client.recv_some(64 * 1024, 20000ms);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first.find_first_not_of('g'), std::string::npos);
  // ... and the peer that stops reading there holds the loop no longer than the shutdown's deadline.
  ASSERT_TRUE(terminated.wait_for(60s)) << "the blocked goodbye held the loop past the shutdown's deadline";
  EXPECT_TRUE(writer->goodbye_written.load());
}

}  // namespace
}  // namespace weft
