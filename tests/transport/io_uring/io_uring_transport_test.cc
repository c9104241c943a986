// The io_uring transport's own behaviour: options, the probe and its fallback, receive-buffer
// exhaustion, zero-copy sends, and cancellation of what is in flight when channels close. The shared
// channel behaviour runs on it through WEFT_ON_EVERY_TRANSPORT.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"
#include "weft/transport/io_uring.h"
// The driver itself, for its test hook (the wake-up read is no public API).
#include "../src/transport/io_uring/io_uring_driver.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::BlockingClient;

ChannelPtr start_uring_echo(EventLoopGroup& group) {
  ServerBootstrap b;
  b.group(group).child_handler(
      [](Channel& ch) { ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>()); });
  return b.bind(SocketAddress::loopback(0)).get();
}

std::string pattern(std::size_t size, int seed) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed) * 7) % 251);
  return s;
}

// Each of `clients` threads sends `size` bytes and reads them back, concurrently.
void echo_from_many_clients(std::uint16_t port, int clients, std::size_t size) {
  std::vector<std::thread> threads;
  std::vector<int> ok(static_cast<std::size_t>(clients), 0);
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      BlockingClient client(port);
      if (!client.is_open()) return;
      const std::string sent = pattern(size, c);
      std::thread writer([&] { client.send_all(sent, 20s); });
      auto echoed = client.recv_exact(size, 20s);
      writer.join();
      ok[static_cast<std::size_t>(c)] = echoed.has_value() && *echoed == sent;
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < clients; ++c) EXPECT_TRUE(ok[static_cast<std::size_t>(c)]) << "client " << c;
}

#define SKIP_WITHOUT_IO_URING()                                                          \
  do {                                                                                   \
    std::string reason;                                                                  \
    if (!IoUringTransport::available(&reason)) GTEST_SKIP() << "no io_uring: " << reason; \
  } while (0)

TEST(IoUringTransportTest, InconsistentOptionsAreRejectedNamingTheOption) {
  auto message_of = [](IoUringOptions o) -> std::string {
    try {
      IoUringTransport t(o);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message_of({.buffer_count = 3}).find("buffer_count"), std::string::npos);
  EXPECT_NE(message_of({.buffer_size = 16}).find("buffer_size"), std::string::npos);
  EXPECT_NE(message_of({.submission_entries = 64, .completion_entries = 32}).find("completion_entries"),
            std::string::npos);
  EXPECT_NE(message_of({.single_issuer = false, .defer_taskrun = true}).find("defer_taskrun"), std::string::npos);
  EXPECT_EQ(message_of({}), "");
}

TEST(IoUringTransportTest, ChannelsRunOnTheRingWhenTheKernelOffersIt) {
  SKIP_WITHOUT_IO_URING();
  EventLoopGroup group(io_uring(), 1);
  ChannelPtr server = start_uring_echo(group);
  const Channel& server_channel = *server;
  EXPECT_NE(std::string(typeid(server_channel).name()).find("IoUringServerChannel"), std::string::npos)
      << typeid(server_channel).name();
  BlockingClient client(server->local_address().port());
  EXPECT_TRUE(client.round_trip("hello ring"));
}

// A process whose io_uring is switched off (as io_uring_disabled or a seccomp filter would) runs the
// transport on epoll and says so once.
TEST(IoUringTransportDeathTest, WhenTheKernelRefusesTheTransportRunsOnEpoll) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the probe runs once per process
  EXPECT_EXIT(
      {
        ::setenv("WEFT_IO_URING", "off", 1);
        std::string reason;
        if (IoUringTransport::available(&reason) || reason.find("WEFT_IO_URING") == std::string::npos) std::_Exit(2);
        EventLoopGroup group(io_uring(), 1);
        ChannelPtr server = start_uring_echo(group);
        const Channel& server_channel = *server;
        if (std::string(typeid(server_channel).name()).find("Epoll") == std::string::npos) std::_Exit(3);
        BlockingClient client(server->local_address().port());
        std::_Exit(client.round_trip("over epoll") ? 0 : 4);
      },
      ::testing::ExitedWithCode(0), "io_uring unavailable .*WEFT_IO_URING.*runs on epoll");
}

// The kernel tells every task that used a ring when the ring goes away, with a signal-like
// notification that makes a blocking call with a timeout fail with EINTR. The thread that makes a group
// (the application's) must not be one of those tasks.
TEST(IoUringTransportTest, MakingAndDestroyingGroupsDoesNotInterruptTheCallersBlockingCalls) {
  SKIP_WITHOUT_IO_URING();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  timeval timeout{0, 200'000};
  ASSERT_EQ(::setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout), 0);
  for (int i = 0; i < 5; ++i) {
    {
      IoUringTransport transport;
      EventLoopGroup group(transport, 2);
    }
    char byte;
    errno = 0;
    EXPECT_EQ(::recv(pair[0], &byte, 1, 0), -1);
    EXPECT_EQ(errno, EAGAIN) << "round " << i << ": " << std::strerror(errno);
  }
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(IoUringTransportTest, AReceiveBufferRingFarSmallerThanTheTrafficStillDeliversEveryByteInOrder) {
  SKIP_WITHOUT_IO_URING();
  // Two 64-byte buffers for eight clients: receives run out of buffers (ENOBUFS) and are re-armed.
  IoUringTransport tiny({.buffer_count = 2, .buffer_size = 64});
  EventLoopGroup group(tiny, 1);
  ChannelPtr server = start_uring_echo(group);
  echo_from_many_clients(server->local_address().port(), 8, 256 * 1024);
}

TEST(IoUringTransportTest, ZeroCopySendsDeliverEveryByteInOrder) {
  SKIP_WITHOUT_IO_URING();
  IoUringTransport zero_copy({.zero_copy_threshold = 1});
  EventLoopGroup group(zero_copy, 2);
  ChannelPtr server = start_uring_echo(group);
  echo_from_many_clients(server->local_address().port(), 4, 2 * 1024 * 1024);
}

// Turns auto-read off in its first and third reads; records every byte.
class PauseAfterFirstRead final : public InboundHandler<ByteBuf> {
 public:
  struct State {
    std::mutex mutex;
    std::string received;
    int reads = 0;
    Promise<ChannelPtr> active;
  };
  explicit PauseAfterFirstRead(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void channel_active(Context& ctx) override {
    state_->active.set_value(ctx.channel().shared_from_this());
    ctx.fire_channel_active();
  }
  void channel_read(Context& ctx, ByteBuf&& buf) override {
    std::lock_guard lock(state_->mutex);
    state_->received.append(reinterpret_cast<const char*>(buf.read_ptr()), buf.readable_bytes());
    ++state_->reads;
    if (state_->reads == 1 || state_->reads == 3) ctx.channel().set_auto_read(false);
  }

 private:
  std::shared_ptr<State> state_;
};

TEST(IoUringTransportTest, BytesReceivedAfterReadingStoppedWaitAndArriveInOrderWhenItResumes) {
  SKIP_WITHOUT_IO_URING();
  // 64-byte buffers: 4000 bytes sent at once complete as many receives in one turn, so most of them
  // land after the handler stopped reading and before the kernel saw the cancellation.
  IoUringTransport small({.buffer_count = 128, .buffer_size = 64});
  EventLoopGroup group(small, 1);
  auto state = std::make_shared<PauseAfterFirstRead::State>();
  ServerBootstrap b;
  b.group(group).child_handler(
      [state](Channel& ch) { ch.pipeline().add_last("pause", std::make_shared<PauseAfterFirstRead>(state)); });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port());
  ChannelPtr child = state->active.future().get();
  const std::string sent = pattern(4000, 3);
  ASSERT_TRUE(client.send_all(sent));
  auto reads_reach = [&](int n) {
    return test::eventually([&] {
      std::lock_guard lock(state->mutex);
      return state->reads >= n;
    });
  };
  ASSERT_TRUE(reads_reach(1));
  std::this_thread::sleep_for(150ms);  // time for reads that should not happen
  {
    std::lock_guard lock(state->mutex);
    EXPECT_EQ(state->reads, 1);
    EXPECT_TRUE(state->received == sent.substr(0, 64)) << state->received.size() << " bytes";
  }
  // Resumed, the waiting bytes flow until the handler stops again (its third read), not past it.
  child->set_auto_read(true);
  ASSERT_TRUE(reads_reach(3));
  std::this_thread::sleep_for(150ms);
  {
    std::lock_guard lock(state->mutex);
    EXPECT_EQ(state->reads, 3);
    EXPECT_TRUE(state->received == sent.substr(0, 3 * 64)) << state->received.size() << " bytes";
  }
  child->set_auto_read(true);
  EXPECT_TRUE(test::eventually([&] {
    std::lock_guard lock(state->mutex);
    return state->received.size() == sent.size();
  }));
  std::lock_guard lock(state->mutex);
  EXPECT_TRUE(state->received == sent) << state->received.size() << " bytes";
}

// Writes `size` bytes when active, to a client that never reads: a send stays in flight.
class BigWriter final : public InboundHandler<ByteBuf> {
 public:
  explicit BigWriter(std::shared_ptr<test::ProbeState> probe) : probe_(std::move(probe)) {}
  void channel_active(Context& ctx) override {
    probe_->set_channel(ctx.channel().shared_from_this());
    ByteBuf big = ctx.allocator().buffer(8 << 20);
    big.write_zero(8 << 20);
    ctx.write_and_flush(std::move(big));
    probe_->active.set_value();
    ctx.fire_channel_active();
  }
  void channel_read(Context&, ByteBuf&&) override {}

 private:
  std::shared_ptr<test::ProbeState> probe_;
};

TEST(IoUringTransportTest, ClosingWithASendAndAReceiveInFlightCancelsThemAndFreesTheChannel) {
  SKIP_WITHOUT_IO_URING();
  std::weak_ptr<Channel> watched;
  {
    EventLoopGroup group(io_uring(), 1);
    auto probe = std::make_shared<test::ProbeState>();
    ServerBootstrap b;
    b.group(group).child_handler([probe](Channel& ch) { ch.pipeline().add_last("w", std::make_shared<BigWriter>(probe)); });
    ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
    BlockingClient client(server->local_address().port(), {.receive_buffer = 16 * 1024});
    ASSERT_TRUE(probe->active.future().wait_for(5s));
    ChannelPtr channel = probe->channel();
    ASSERT_NE(channel, nullptr);
    std::this_thread::sleep_for(50ms);  // the send has filled the socket and waits in the kernel
    Promise<std::size_t> pending;
    channel->loop().execute([&] { pending.set_value(channel->pending_write_bytes()); });
    EXPECT_GT(pending.future().get(), 0u);
    watched = channel;
    channel->close().get();
    channel.reset();
    // The peer sees the connection end even though a send was in flight.
    EXPECT_NE(client.recv_until_end(nullptr, 10s), test::StreamEnd::timeout);
    // Once the cancellations landed nothing holds the channel: it is freed while the loop still runs.
    EXPECT_TRUE(test::eventually([&] { return watched.expired(); }, 5s));
    server->close().get();
  }
  EXPECT_TRUE(watched.expired());
}

TEST(IoUringTransportTest, AGroupShutDownWithOpenConnectionsCompletesEverythingInFlight) {
  SKIP_WITHOUT_IO_URING();
  std::vector<std::weak_ptr<Channel>> watched;
  std::vector<BlockingClient> clients;
  {
    EventLoopGroup group(io_uring(), 2);
    test::ProbeRegistry probes;
    ServerBootstrap b;
    b.group(group).child_handler([&probes](Channel& ch) {
      ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
    });
    ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
    for (int i = 0; i < 16; ++i) clients.emplace_back(server->local_address().port());
    for (int i = 0; i < 16; ++i) {
      auto probe = probes.wait(static_cast<std::size_t>(i));
      ASSERT_NE(probe, nullptr);
      watched.push_back(probe->channel());
    }
    watched.push_back(server);
    server.reset();
    ASSERT_TRUE(group.shutdown_gracefully(0ms, 5s).wait_for(10s));
  }
  for (auto& w : watched) EXPECT_TRUE(w.expired());
}

// A listener that never accepts, its queue full: the kernel drops further SYNs, so a connect to it
// stays in flight until the kernel gives up (tcp_syn_retries: about two minutes by default).
class FullListener {
 public:
  FullListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 0) == 0;
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    for (int i = 0; i < 4; ++i) {  // the first fills the queue (backlog 0 holds one); the rest wait
      int fd = ::socket(AF_INET, SOCK_STREAM | (i == 0 ? 0 : SOCK_NONBLOCK), 0);
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
      fillers_.push_back(fd);
    }
  }
  ~FullListener() {
    for (int fd : fillers_) ::close(fd);
    ::close(fd_);
  }
  bool ok() const { return ok_; }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::uint16_t port_ = 0;
  std::vector<int> fillers_;
};

TEST(IoUringTransportTest, AConnectTimeoutCancelsTheConnectInFlightAndFreesTheChannel) {
  SKIP_WITHOUT_IO_URING();
  FullListener listener;
  ASSERT_TRUE(listener.ok());
  EventLoopGroup group(io_uring(), 1);
  std::mutex mutex;
  std::weak_ptr<Channel> watched;
  Bootstrap c;
  c.group(group).option(option::connect_timeout, Duration(100ms)).handler([&](Channel& ch) {
    std::lock_guard lock(mutex);
    watched = ch.shared_from_this();
  });
  auto f = c.connect(SocketAddress::loopback(listener.port()));
  ASSERT_TRUE(f.wait_for(20s));
  EXPECT_THROW(f.get(), ConnectTimeoutError);
  // The cancelled connect completes at once; without the cancel the kernel holds it for minutes.
  EXPECT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return watched.expired();
  }, 20s));
}

// The descriptor number of the IPv4 socket bound to `local` and connected to `remote` (a port of 0:
// not connected, a listener), or -1.
int descriptor_of(const SocketAddress& local, std::uint16_t remote_port) {
  for (int fd = 0; fd < 4096; ++fd) {
    sockaddr_storage a{}, b{};
    socklen_t al = sizeof(a), bl = sizeof(b);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &al) != 0 || a.ss_family != AF_INET) continue;
    if (ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port) != local.port()) continue;
    const bool connected = ::getpeername(fd, reinterpret_cast<sockaddr*>(&b), &bl) == 0;
    if (!connected && remote_port == 0) return fd;
    if (connected && ntohs(reinterpret_cast<const sockaddr_in&>(b).sin_port) == remote_port) return fd;
  }
  return -1;
}

// Runs three timers on `loop`: timers run after a poll, so by the third anything queued in an
// earlier turn has been submitted and answered.
void let_the_ring_turn(EventLoop& loop) {
  for (int i = 0; i < 3; ++i) {
    Promise<void> turn;
    loop.execute([&] { loop.schedule(std::chrono::milliseconds(1), [&] { turn.set_value(); }); });
    ASSERT_TRUE(turn.future().wait_for(10s));
  }
}

// A receive is prepared in a loop turn and submitted at the end of it; the channel closing in that
// same turn must keep its descriptor number until the receive is done with it, or a socket opened in
// between takes the number and the stale receive reads that socket's bytes (an h2c request was lost
// this way: a new connection's first bytes went to a closed channel).
TEST(IoUringTransportTest, ADescriptorClosedWithAReceiveNotYetSubmittedIsNotReusedUnderIt) {
  SKIP_WITHOUT_IO_URING();
  EventLoopGroup group(io_uring(), 1);
  test::ProbeRegistry probes;
  ServerBootstrap b;
  b.group(group).child_handler([&](Channel& ch) {
    ch.set_auto_read(false);
    ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(probe->active.future().wait_for(5s));
  ChannelPtr ch = probe->channel();
  ASSERT_NE(ch, nullptr);
  const int number = descriptor_of(ch->local_address(), ch->remote_address().port());
  ASSERT_GE(number, 0);

  // In one task: arm a receive, close, then open sockets until one has the closed number (the
  // kernel hands out the lowest free one) and put bytes where that socket reads.
  std::vector<int> opened;
  int reused = -1;
  Promise<void> done;
  ch->loop().execute([&] {
    ch->read();
    ch->close();
    for (int i = 0; i < 256 && reused < 0; ++i) {
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) break;
      opened.insert(opened.end(), {pair[0], pair[1]});
      if (pair[0] == number || pair[1] == number) {
        reused = number;
        const int writer = pair[0] == number ? pair[1] : pair[0];
        EXPECT_EQ(::write(writer, "mine", 4), 4);
      }
      if (pair[0] > number && pair[1] > number) break;  // the number is still held
    }
    done.set_value();
  });
  ASSERT_TRUE(done.future().wait_for(10s));
  ASSERT_TRUE(ch->close_future().wait_for(10s));
  let_the_ring_turn(ch->loop());
  if (reused >= 0) {
    char bytes[8] = {};
    EXPECT_EQ(::recv(reused, bytes, sizeof(bytes), MSG_DONTWAIT), 4) << "the closed channel's receive took them";
  }
  for (int fd : opened) ::close(fd);
  server->close().get();
}

// As above for a listener: an accept armed and closed in one turn must not accept from a listener
// that took the closed number.
TEST(IoUringTransportTest, AListenerClosedWithAnAcceptNotYetSubmittedIsNotReusedUnderIt) {
  SKIP_WITHOUT_IO_URING();
  EventLoopGroup group(io_uring(), 1);
  ServerBootstrap b;
  b.group(group).child_handler([](Channel&) {});
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  EventLoop& loop = server->loop();
  loop.execute([&] { server->set_auto_read(false); });  // its accept is cancelled
  let_the_ring_turn(loop);
  const int number = descriptor_of(server->local_address(), 0);
  ASSERT_GE(number, 0);

  std::vector<int> opened;
  int reused = -1;
  std::uint16_t reused_port = 0;
  Promise<void> done;
  loop.execute([&] {
    server->read();  // an accept prepared in this turn
    server->close();
    for (int i = 0; i < 256 && reused < 0; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) break;
      opened.push_back(fd);
      if (fd == number) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t al = sizeof(a);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd, 8) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &al) == 0) {
          reused = fd;
          reused_port = ntohs(a.sin_port);
        }
        break;
      }
      if (fd > number) break;  // the number is still held
    }
    done.set_value();
  });
  ASSERT_TRUE(done.future().wait_for(10s));
  std::optional<BlockingClient> client;
  if (reused >= 0) client.emplace(reused_port);  // waits in the new listener's queue
  let_the_ring_turn(loop);
  if (reused >= 0) {
    ASSERT_TRUE(client->is_open());
    const int accepted = ::accept4(reused, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    EXPECT_GE(accepted, 0) << "the closed listener's accept took the connection: errno " << errno;
    if (accepted >= 0) ::close(accepted);
  }
  for (int fd : opened) ::close(fd);
}

TEST(IoUringTransportTest, AFailedReArmOfTheWakeUpReadIsRetriedSoPostsStillWakeTheLoop) {
  SKIP_WITHOUT_IO_URING();
  EventLoopGroup group(io_uring(), 1);
  EventLoop& loop = group.next();
  auto round_trip = [&](UniqueFunction<void()> also) {
    Promise<void> done;
    loop.execute([&done, also = std::move(also)]() mutable {
      also();
      done.set_value();
    });
    return done.future().wait_for(10s);
  };
  // The wake-up that delivers the next post re-arms the read, and that re-arm fails.
  ASSERT_TRUE(round_trip([&] { IoUringDriver::of(loop).fail_wake_arms_for_testing(1); }));
  ASSERT_TRUE(round_trip([] {}));
  // Nothing else happens on this loop (no I/O, no timer): only a re-armed read can wake it. Several
  // round trips, so that the loop is asleep when at least one post arrives.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(round_trip([] {})) << "round trip " << i;
  // Looked at from a timer: it runs after a poll, which is where a failed re-arm is retried. (A task
  // may run in the same drain of the queue as the round trips before it, with no poll in between.)
  Promise<bool> armed;
  loop.execute([&] {
    loop.schedule(std::chrono::milliseconds(1), [&] { armed.set_value(IoUringDriver::of(loop).wake_read_armed()); });
  });
  EXPECT_TRUE(armed.future().get());
}

}  // namespace
}  // namespace weft
