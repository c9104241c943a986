// Executor offload over real sockets: a handler added with an ExecutorGroup runs on an executor
// thread in order, and a handler that blocks does not grow memory without bound.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <optional>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "support/blocking_client.h"
#include "weft/channel/bootstrap.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/codec/string_codec.h"
#include "weft/core/executor_group.h"
#include "weft/transport/epoll.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// A minimal blocking TCP client with timeouts (so a broken server fails the test, not hangs it).
class Client {
 public:
  explicit Client(std::uint16_t port, int send_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (send_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
  }
  ~Client() { close(); }
  bool is_open() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool wait(short events, int ms) {
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, ms) == 1;
  }
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      if (!wait(POLLOUT, 5000)) return false;
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  std::size_t send_some(std::string_view data) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  std::optional<std::string> recv_exact(std::size_t n, int ms) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      if (!wait(POLLIN, ms)) return std::nullopt;
      ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) return std::nullopt;
      got += static_cast<std::size_t>(r);
    }
    return out;
  }

 private:
  int fd_ = -1;
};

using test::eventually;

// Echoes each line with a newline; records whether it ever ran on the channel's loop.
class ExecutorEcho final : public InboundHandler<std::string> {
 public:
  void channel_read(Context& ctx, std::string&& line) override {
    if (ctx.loop().in_loop()) ran_on_loop.store(true);
    ctx.write_and_flush(line + "\n");
  }
  std::atomic<bool> ran_on_loop{false};
};

TEST(OffloadTest, HandlerRunsOnExecutorInOrder) {
  ExecutorGroup executors({.threads = 2});  // outlives the loops (and so every channel)
  EventLoopGroup loops(epoll(), 1);
  auto echo = std::make_shared<ExecutorEcho>();
  ChannelPtr server = ServerBootstrap()
                          .group(loops)
                          .child_handler([&](Channel& ch) {
                            ch.pipeline()
                                .add_last("lines", std::make_shared<LineBasedFrameDecoder>(1024))
                                .add_last("decoder", std::make_shared<StringDecoder>())
                                .add_last("encoder", std::make_shared<StringEncoder>())
                                .add_last(executors, "echo", echo);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  Client client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  std::string request, expected;
  for (int i = 0; i < 5000; ++i) request += "message " + std::to_string(i) + "\n";
  ASSERT_TRUE(client.send_all(request));
  auto reply = client.recv_exact(request.size(), 10000);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, request);
  EXPECT_FALSE(echo->ran_on_loop.load());
  client.close();
  server->close().wait();
}

// Blocks in its first read until opened; counts the bytes it was given.
class Blocker final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&& buf) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
    bytes.fetch_add(buf.readable_bytes());
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::atomic<std::size_t> bytes{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

void run_blocking_scenario(ExecutorGroup::Options options, std::size_t bound) {
  ExecutorGroup executors(std::move(options));
  EventLoopGroup loops(epoll(), 1);
  auto blocker = std::make_shared<Blocker>();
  ChannelPtr server = ServerBootstrap()
                          .group(loops)
                          .child_option(option::read_buffer_max, 4096)
                          .child_option(option::max_messages_per_read, 4)
                          .child_handler([&](Channel& ch) { ch.pipeline().add_last(executors, "blocker", blocker); })
                          .bind(SocketAddress::loopback(0))
                          .get();
  Client client(server->local_address().port(), 64 * 1024);
  ASSERT_TRUE(client.is_open());
  const std::string chunk(16 * 1024, 'x');
  std::size_t sent = 0;
  // Push for a while: the server must stop reading, so the client's sends stop making progress.
  auto deadline = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < deadline) {
    std::size_t n = client.send_some(chunk);
    sent += n;
    if (n == 0) std::this_thread::sleep_for(1ms);
  }
  // The queue held for the executor stayed within its bound (plus one read batch of 4 x 4 KiB).
  const std::size_t slack = 4 * (4096 + ExecutorGroup::kTaskOverhead) + 4096;
  EXPECT_LE(executors.peak_queued_bytes(), bound + slack);
  EXPECT_LT(sent, std::size_t{64} << 20) << "the server kept reading";
  // Open the gate: the server drains and resumes reading until everything arrived.
  blocker->open();
  EXPECT_TRUE(eventually([&] { return blocker->bytes.load() == sent; }, 20000ms))
      << blocker->bytes.load() << " of " << sent;
  EXPECT_TRUE(eventually([&] { return executors.queued_bytes() == 0; }));
  client.close();
  server->close().wait();
}

TEST(OffloadTest, BlockingHandlerIsBoundedPerChannel) {
  run_blocking_scenario({.threads = 1, .max_queued_bytes_per_channel = 64 * 1024, .max_queued_bytes = 16 << 20},
                        64 * 1024);
}

TEST(OffloadTest, BlockingHandlerIsBoundedForTheGroup) {
  run_blocking_scenario({.threads = 1, .max_queued_bytes_per_channel = 16 << 20, .max_queued_bytes = 64 * 1024},
                        64 * 1024);
}

// Removal with events still queued: handler_removed runs on the executor after them.
class Recorder final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&& buf) override {
    std::this_thread::sleep_for(1ms);
    std::lock_guard<std::mutex> lock(mu);
    log += buf.to_string();
  }
  void handler_removed(Context& ctx) override {
    std::lock_guard<std::mutex> lock(mu);
    log += ctx.loop().in_loop() ? "|removed-on-loop" : "|removed";
  }
  std::mutex mu;
  std::string log;
};

TEST(OffloadTest, RemovalRunsHandlerRemovedAfterQueuedEvents) {
  ExecutorGroup executors({.threads = 1});
  EventLoopGroup loops(epoll(), 1);
  auto rec = std::make_shared<Recorder>();
  std::atomic<Channel*> child{nullptr};
  ChannelPtr server = ServerBootstrap()
                          .group(loops)
                          .child_handler([&](Channel& ch) {
                            ch.pipeline().add_last(executors, "rec", rec);
                            child.store(&ch);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  Client client(server->local_address().port());
  ASSERT_TRUE(client.send_all("abc"));
  ASSERT_TRUE(eventually([&] { return child.load() != nullptr; }));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(rec->mu);
    return rec->log == "abc";
  }));
  client.close();  // EOF: the channel closes and its pipeline is torn down
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(rec->mu);
    return rec->log.find("|removed") != std::string::npos;
  }));
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_EQ(rec->log, "abc|removed");
  server->close().wait();
}

// Its removal outlasts the loop group: handler_removed runs on the executor while the group that
// owns the channel's loop is being destroyed, and then posts the context back to that loop.
class SlowRemoval final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&&) override { reads.fetch_add(1); }
  void handler_removed(Context&) override {
    removing.store(true);
    std::this_thread::sleep_for(300ms);
    removed.store(true);
  }
  std::atomic<int> reads{0};
  std::atomic<bool> removing{false};
  std::atomic<bool> removed{false};
};

TEST(OffloadTest, LoopGroupDestructionWaitsForOffloadedRemoval) {
  ExecutorGroup executors({.threads = 1});
  auto slow = std::make_shared<SlowRemoval>();
  {
    EventLoopGroup loops(epoll(), 1);
    ChannelPtr server = ServerBootstrap()
                            .group(loops)
                            .child_handler([&](Channel& ch) { ch.pipeline().add_last(executors, "slow", slow); })
                            .bind(SocketAddress::loopback(0))
                            .get();
    Client client(server->local_address().port());
    ASSERT_TRUE(client.send_all("x"));
    ASSERT_TRUE(eventually([&] { return slow->reads.load() == 1; }));
    server->close().wait();
    server.reset();
    // Leaving the scope shuts the loop down, which closes the connection and retires the handler.
  }
  // The executor thread used the loop after handler_removed; the loop had to stay valid until then.
  EXPECT_TRUE(slow->removing.load());
  EXPECT_TRUE(slow->removed.load());
}

}  // namespace
}  // namespace weft
