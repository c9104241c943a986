#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "support/sanitizers.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"
#include "weft/transport/epoll.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// Channel-level socket behaviour that every transport shares; epoll-only tests are EpollTransportTest.
class SocketTransportTest : public test::TransportTest {};

class Echo final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.write(std::move(buf)); }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
};

ChannelPtr start_echo(EventLoopGroup& group, ChannelConfig child = {}) {
  ServerBootstrap b;
  b.group(group).child_handler([](Channel& ch) { ch.pipeline().add_last("echo", std::make_shared<Echo>()); });
  b.child_option(option::auto_read, child.auto_read);
  return b.bind(SocketAddress::loopback(0)).get();
}

int highest_open_descriptor() {
  int highest = -1;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  const int own = ::dirfd(dir);
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    highest = std::max(highest, static_cast<int>(fd));
  }
  ::closedir(dir);
  return highest;
}

int blocking_connect(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool round_trip(int fd, const std::string& msg) {
  if (::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) return false;
  std::string got(msg.size(), '\0');
  std::size_t have = 0;
  while (have < msg.size()) {
    ssize_t n = ::recv(fd, got.data() + have, msg.size() - have, 0);
    if (n <= 0) return false;
    have += static_cast<std::size_t>(n);
  }
  return got == msg;
}

TEST_P(SocketTransportTest, DriverWakesUpFromAnotherThread) {
  auto driver = transport().create_driver();
  std::thread t([&] {
    std::this_thread::sleep_for(30ms);
    driver->wakeup();
  });
  auto start = Clock::now();
  driver->poll(Duration(std::chrono::seconds(5)));
  EXPECT_LT(Clock::now() - start, 2s);
  t.join();
}

TEST_P(SocketTransportTest, BindingAPortInUseFailsWithTheErrno) {
  EventLoopGroup group(transport(), loops(1, 2));
  ChannelPtr first = start_echo(group);
  ServerBootstrap b;
  b.group(group).option(option::reuse_address, false).child_handler([](Channel&) {});
  try {
    b.bind(SocketAddress::loopback(first->local_address().port())).get();
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.code().value(), EADDRINUSE);
  }
  first->close().wait();
}

// Writes small messages while the channel is writable, flushes once, and does it again from every
// writability event, as a streaming producer does (weft-load stream). With a peer that reads as fast as it is written to, a send
// makes the channel writable inside the flush that a writability event started: the flush must not
// recurse into itself (it once did on epoll, one stack frame per 64 KiB, until the stack overflowed).
class StreamingProducer final : public InboundHandler<ByteBuf> {
 public:
  static constexpr std::size_t kMessage = 4096;
  explicit StreamingProducer(std::size_t total) : total_(total) {}
  void channel_active(Context& ctx) override {
    pump(ctx);
    ctx.fire_channel_active();
  }
  void channel_read(Context&, ByteBuf&&) override {}
  void writability_changed(Context& ctx) override {
    if (ctx.channel().is_writable()) pump(ctx);
    ctx.fire_writability_changed();
  }

 private:
  void pump(Context& ctx) {
    while (ctx.channel().is_writable() && sent_ < total_) {
      ByteBuf message = ctx.allocator().buffer(kMessage);
      message.write_zero(kMessage);
      sent_ += kMessage;
      ctx.write(std::move(message));
    }
    ctx.flush();
    if (sent_ >= total_ && !closing_) {
      closing_ = true;
      ctx.channel().close_after_flush();
    }
  }
  std::size_t total_;
  std::size_t sent_ = 0;
  bool closing_ = false;
};

TEST_P(SocketTransportTest, AProducerThatWritesFromWritabilityEventsToAFastReaderDoesNotRecurse) {
  static constexpr std::size_t kTotal = std::size_t{512} << 20;
  EventLoopGroup group(transport(), loops(1, 2));
  ServerBootstrap b;
  b.group(group).child_handler(
      [](Channel& ch) { ch.pipeline().add_last("producer", std::make_shared<StreamingProducer>(kTotal)); });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  int fd = blocking_connect(server->local_address().port());
  ASSERT_GE(fd, 0);
  std::vector<char> sink(1 << 20);
  std::size_t received = 0;
  for (;;) {
    ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
    if (n <= 0) {
      EXPECT_EQ(n, 0) << "errno " << errno;
      break;
    }
    received += static_cast<std::size_t>(n);
  }
  ::close(fd);
  EXPECT_EQ(received, kTotal);
  server->close().wait();
}

TEST(EpollTransportTest, GroupOfBasicLoopsIsRejectedWithAClearError) {
  EventLoopGroup group(basic_driver_factory(), 1);
  ServerBootstrap b;
  b.group(group);
  EXPECT_THROW(b.bind(SocketAddress::loopback(0)), std::invalid_argument);
}

TEST_P(SocketTransportTest, AutoReadOffReadsOnlyWhenAsked) {
  EventLoopGroup group(transport(), loops(1, 2));
  std::atomic<int> reads{0};
  Promise<ChannelPtr> accepted;
  class Counter final : public InboundHandler<ByteBuf> {
   public:
    Counter(std::atomic<int>& n, Promise<ChannelPtr> p) : n_(n), p_(std::move(p)) {}
    void channel_active(Context& ctx) override { p_.set_value(ctx.channel().shared_from_this()); }
    void channel_read(Context&, ByteBuf&&) override { ++n_; }

   private:
    std::atomic<int>& n_;
    Promise<ChannelPtr> p_;
  };
  ServerBootstrap b;
  b.group(group).child_option(option::auto_read, false).child_handler([&](Channel& ch) {
    ch.pipeline().add_last("count", std::make_shared<Counter>(reads, accepted));
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  int fd = blocking_connect(server->local_address().port());
  ASSERT_GE(fd, 0) << "errno " << errno << " port " << server->local_address().port();
  ChannelPtr child = accepted.future().get();
  ASSERT_EQ(::send(fd, "x", 1, 0), 1);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(reads.load(), 0);
  child->read();
  for (int i = 0; i < 200 && reads.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(reads.load(), 1);
  ::close(fd);
  server->close().wait();
}

TEST_P(SocketTransportTest, ConnectTimeoutFailsTheConnectFuture) {
  // A listener that never accepts, with its queue full: further SYNs are dropped.
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 0), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::uint16_t port = ntohs(a.sin_port);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(50ms);
  EventLoopGroup group(transport(), loops(1, 1));
  Bootstrap c;
  c.group(group).option(option::connect_timeout, Duration(200ms)).handler([](Channel&) {});
  auto start = Clock::now();
  auto f = c.connect(SocketAddress::loopback(port));
  ASSERT_TRUE(f.wait_for(5s));
  EXPECT_THROW(f.get(), ConnectTimeoutError);
  EXPECT_GE(Clock::now() - start, 190ms);
  for (int fd : fillers) ::close(fd);
  ::close(lfd);
}

// On the event-loop transports (the blocking transport bounds its channels by threads instead).
class DescriptorLimitTest : public ::testing::TestWithParam<Transport*> {};

TEST_P(DescriptorLimitTest, RunningOutOfDescriptorsShedsConnectionsAndRecovers) {
#if defined(WEFT_TEST_ASAN)
  // The ASan runtime opens descriptors of its own (to symbolize the paranoid leak detector's
  // backtraces), taking the one the server frees to shed a connection: the condition this test
  // sets up cannot be held still there. It runs in the release and tsan presets.
  GTEST_SKIP() << "not meaningful under AddressSanitizer";
#endif
  EventLoopGroup group(*GetParam(), 1);
  // The server starts accepting only once the limit is low: io_uring's multishot accept takes the
  // descriptor limit when it is armed, not at each accept.
  ServerBootstrap b;
  b.group(group).option(option::auto_read, false).child_handler([](Channel& ch) {
    ch.pipeline().add_last("echo", std::make_shared<Echo>());
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  std::uint16_t port = server->local_address().port();
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);

  // Clients are created before the limit drops; connecting them needs no new descriptor.
  constexpr int kClients = 5;
  std::vector<int> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // The limit sits just above the highest descriptor open anywhere in the process (not only the
  // clients: an inherited descriptor, or a gap the clients filled, can leave the server's reserve
  // above them, and a reserve above the limit frees nothing usable).
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest_open_descriptor() + 1);  // no new descriptor can be created
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> holes;  // occupy any free descriptor below the limit
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) holes.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  server->set_auto_read(true);
  std::this_thread::sleep_for(50ms);  // armed; take any descriptor that a background close freed meanwhile
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) holes.push_back(fd);

  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int fd : clients) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  // Each one is shed (accepted and closed at once: EOF or reset) instead of hanging or making the
  // loop spin. A descriptor freed meanwhile by someone else (a sanitizer runtime) lets a connection
  // through normally; it is then echoed. None may hang.
  int shed = 0;
  for (int fd : clients) {
    ::send(fd, "p", 1, MSG_NOSIGNAL);
    char c;
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n == 1) {
      EXPECT_EQ(c, 'p');
    } else {
      EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "n " << n << " errno " << errno;
      ++shed;
    }
    if (fd == clients.front()) {
      // Nothing has been freed yet, so every accept4 still fails with EMFILE even with an empty
      // queue: the loop must go back to its other work instead of spinning in accept.
      auto ran = std::make_shared<std::promise<void>>();
      std::future<void> done = ran->get_future();
      group.next().execute([ran] { ran->set_value(); });
      EXPECT_EQ(done.wait_for(2s), std::future_status::ready) << "the event loop is stuck accepting";
    }
  }
  // Closed only now: a client closed earlier frees a descriptor that lets a later connection through.
  for (int fd : clients) ::close(fd);
  EXPECT_GE(shed, kClients - 1);
  for (int fd : holes) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  std::this_thread::sleep_for(150ms);  // past any accept back-off

  int fd = blocking_connect(port);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(round_trip(fd, "still serving"));
  ::close(fd);
  server->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(SocketTransportTest);
INSTANTIATE_TEST_SUITE_P(On, DescriptorLimitTest, ::testing::Values(&epoll(), &io_uring()),
                         [](const ::testing::TestParamInfo<Transport*>& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace weft
