// Coroutine connection handlers over real loopback sockets: echo, every way a connection ends
// while the coroutine waits on it, and 10,000 coroutine connections alive at once.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/sanitizers.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/connection.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/core/awaitables.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::BlockingClient;
using test::eventually;
using test::StreamEnd;

constexpr std::size_t kChunk = 16 * 1024;

enum Outcome : int { kRunning = 0, kReturned, kClosedError, kOtherError };

struct Observed {
  std::atomic<int> outcome{kRunning};
  std::atomic<int> live{0};
  std::atomic<int> peak{0};
  std::atomic<long> writes{0};
  std::string error_type;  // written by the loop before outcome is published
};

// Runs `body` and records how it ended.
template <class Body>
Task<> observe(Observed& seen, Body body) {
  int now = seen.live.fetch_add(1) + 1;
  int peak = seen.peak.load();
  while (now > peak && !seen.peak.compare_exchange_weak(peak, now)) {
  }
  try {
    co_await body();
    seen.live.fetch_sub(1);
    seen.outcome = kReturned;
  } catch (const ChannelClosedError&) {
    seen.live.fetch_sub(1);
    seen.outcome = kClosedError;
    throw;
  } catch (const std::exception& e) {
    seen.live.fetch_sub(1);
    seen.error_type = typeid(e).name();
    seen.outcome = kOtherError;
    throw;
  }
}

// On each event-loop transport (the blocking transport's coroutines are the same code on a loop per channel).
class CoroutineServerTest : public ::testing::TestWithParam<Transport*> {};

template <class In, class Fn>
ChannelPtr start_server(EventLoopGroup& group, Fn fn, ChannelConfig child = {}, std::size_t max_line = 0) {
  ServerBootstrap b;
  b.group(group).option(option::backlog, 4096);
  b.child_option(option::write_buffer_high_water_mark, child.write_buffer_high_water_mark);
  b.child_option(option::write_buffer_low_water_mark, child.write_buffer_low_water_mark);
  b.child_handler([fn, max_line](Channel& ch) {
    if (max_line > 0) ch.pipeline().add_last("lines", std::make_shared<LineBasedFrameDecoder>(max_line));
    serve<In>(ch, fn);
  });
  return b.bind(SocketAddress::loopback(0)).get();
}

TEST_P(CoroutineServerTest, EchoesEveryMessageInOrder) {
  EventLoopGroup group(*GetParam(), 1);
  ChannelPtr server = start_server<ByteBuf>(group, [](Connection<ByteBuf>& c) -> Task<> {
    for (;;) {
      ByteBuf data = co_await c.read();
      co_await c.write(std::move(data));
      c.flush();
    }
  });
  BlockingClient client(server->local_address().port());
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(client.round_trip("message " + std::to_string(i)));
  server->close().wait();
}

TEST_P(CoroutineServerTest, ASuspendedReadEndsWithChannelClosedWhenThePeerLeaves) {
  EventLoopGroup group(*GetParam(), 1);
  Observed seen;
  ChannelPtr server = start_server<ByteBuf>(group, [&seen](Connection<ByteBuf>& c) -> Task<> {
    return observe(seen, [&c]() -> Task<> {
      for (;;) (void)co_await c.read();
    });
  });
  {
    BlockingClient client(server->local_address().port());
    ASSERT_TRUE(eventually([&] { return seen.live.load() == 1; }));
  }
  ASSERT_TRUE(eventually([&] { return seen.outcome.load() != kRunning; }));
  EXPECT_EQ(seen.outcome.load(), kClosedError);
  EXPECT_EQ(seen.live.load(), 0);
  server->close().wait();
}

TEST_P(CoroutineServerTest, ASuspendedWriteWaitsForWritabilityAndEndsWithChannelClosed) {
  EventLoopGroup group(*GetParam(), 1);
  Observed seen;
  ChannelConfig small;
  small.write_buffer_high_water_mark = 64 * 1024;
  small.write_buffer_low_water_mark = 32 * 1024;
  ChannelPtr server = start_server<ByteBuf>(group, [&seen](Connection<ByteBuf>& c) -> Task<> {
    return observe(seen, [&c, &seen]() -> Task<> {
      (void)co_await c.read();  // start once the client is ready
      for (;;) {
        ByteBuf chunk = c.channel().allocator().buffer(kChunk);
        chunk.write_zero(kChunk);
        co_await c.write(std::move(chunk));
        c.flush();
        seen.writes.fetch_add(1);
      }
    });
  }, small);
  BlockingClient::Options tiny;
  tiny.receive_buffer = 16 * 1024;
  BlockingClient client(server->local_address().port(), tiny);
  ASSERT_TRUE(client.send_all("go"));
  // The client never reads: the writes stop once kernel buffers and the queue's high water mark fill.
  long settled = -1;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(20ms);
    long now = seen.writes.load();
    if (now == settled) break;
    settled = now;
  }
  EXPECT_EQ(seen.outcome.load(), kRunning);
  EXPECT_LT(seen.writes.load(), 400) << "writes did not wait for writability";
  client.reset();
  ASSERT_TRUE(eventually([&] { return seen.outcome.load() != kRunning; }));
  EXPECT_EQ(seen.outcome.load(), kClosedError);
  server->close().wait();
}

TEST_P(CoroutineServerTest, AnExceptionInsideTheCoroutineClosesTheChannel) {
  EventLoopGroup group(*GetParam(), 1);
  Observed seen;
  ChannelPtr server = start_server<ByteBuf>(group, [&seen](Connection<ByteBuf>& c) -> Task<> {
    return observe(seen, [&c]() -> Task<> {
      (void)co_await c.read();
      throw std::runtime_error("application bug");
    });
  });
  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.send_all("x"));
  EXPECT_EQ(client.recv_until_end(), StreamEnd::eof);
  EXPECT_EQ(seen.outcome.load(), kOtherError);
  server->close().wait();
}

TEST_P(CoroutineServerTest, ReturningFlushesWhatWasWrittenThenCloses) {
  EventLoopGroup group(*GetParam(), 1);
  ChannelPtr server = start_server<ByteBuf>(group, [](Connection<ByteBuf>& c) -> Task<> {
    (void)co_await c.read();
    co_await sleep(10ms);
    co_await c.write(ByteBuf::copy_of("bye"));
  });
  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.send_all("hi"));
  std::string data;
  EXPECT_EQ(client.recv_until_end(&data), StreamEnd::eof);
  EXPECT_EQ(data, "bye");
  server->close().wait();
}

TEST_P(CoroutineServerTest, ADecoderErrorIsThrownByTheNextReadAfterEarlierMessages) {
  EventLoopGroup group(*GetParam(), 1);
  Observed seen;
  std::atomic<int> lines{0};
  ChannelPtr server = start_server<ByteBuf>(
      group,
      [&seen, &lines](Connection<ByteBuf>& c) -> Task<> {
        return observe(seen, [&c, &lines]() -> Task<> {
          for (;;) {
            (void)co_await c.read();
            lines.fetch_add(1);
          }
        });
      },
      ChannelConfig{}, 16);
  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.send_all("short\nanother\n" + std::string(100, 'x') + "\n"));
  EXPECT_EQ(client.recv_until_end(), StreamEnd::eof);
  ASSERT_TRUE(eventually([&] { return seen.outcome.load() != kRunning; }));
  EXPECT_EQ(lines.load(), 2);
  EXPECT_EQ(seen.outcome.load(), kOtherError);
  EXPECT_EQ(seen.error_type, typeid(TooLongFrameError).name());
  server->close().wait();
}

TEST_P(CoroutineServerTest, InboundMessagesQueueWhileTheCoroutineIsBusyAndArriveInOrder) {
  EventLoopGroup group(*GetParam(), 1);
  ChannelPtr server = start_server<ByteBuf>(
      group,
      [](Connection<ByteBuf>& c) -> Task<> {
        for (;;) {
          ByteBuf line = co_await c.read();
          co_await sleep(1ms);  // slower than the client: lines pile up, reading pauses and resumes
          co_await c.write(std::move(line));
          co_await c.write(ByteBuf::copy_of("\n"));
          c.flush();
        }
      },
      ChannelConfig{}, 64);
  BlockingClient client(server->local_address().port());
  std::string sent;
  for (int i = 0; i < 300; ++i) sent += "line " + std::to_string(i) + "\n";
  ASSERT_TRUE(client.send_all(sent));
  auto echoed = client.recv_exact(sent.size(), 20000ms);
  ASSERT_TRUE(echoed.has_value());
  EXPECT_EQ(*echoed, sent);
  server->close().wait();
}

// 10,000 connections, each with its own coroutine suspended in read() at the same time. The client
// side runs in a child process so that each process needs only 10,000 descriptors. Under a sanitizer,
// which looks for races and lifetimes rather than scale, 2,000 (10,000 took 19 s of TSan's time).
TEST_P(CoroutineServerTest, TenThousandConcurrentCoroutineConnections) {
#if !defined(WEFT_TEST_SANITIZED)
  constexpr int kConnections = 10000;
#else
  constexpr int kConnections = 2000;
#endif
  rlim_t limit = test::raise_fd_limit();
  if (limit < kConnections + 200) GTEST_SKIP() << "RLIMIT_NOFILE hard limit is only " << limit;

  EventLoopGroup group(*GetParam(), 1);
  Observed seen;
  ChannelPtr server = start_server<ByteBuf>(group, [&seen](Connection<ByteBuf>& c) -> Task<> {
    return observe(seen, [&c]() -> Task<> {
      for (;;) {
        ByteBuf data = co_await c.read();
        co_await c.write(std::move(data));
        c.flush();
      }
    });
  });
  const std::uint16_t port = server->local_address().port();
  int release_pipe[2];
  ASSERT_EQ(::pipe(release_pipe), 0);
  std::vector<int> fds(kConnections, -1);  // allocated before fork: the child does not allocate

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(release_pipe[1]);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < kConnections; ++i) {
      fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
      timeval tv{20, 0};
      ::setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      if (fds[i] < 0 || ::connect(fds[i], reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(10);
    }
    for (int i = 0; i < kConnections; ++i) {
      char out[4];
      std::memcpy(out, &i, 4);
      if (::send(fds[i], out, 4, MSG_NOSIGNAL) != 4) ::_exit(11);
    }
    for (int i = 0; i < kConnections; ++i) {
      char in[4];
      std::size_t got = 0;
      while (got < 4) {
        ssize_t n = ::recv(fds[i], in + got, 4 - got, 0);
        if (n <= 0) ::_exit(12);
        got += static_cast<std::size_t>(n);
      }
      if (std::memcmp(in, &i, 4) != 0) ::_exit(13);
    }
    char go;
    if (::read(release_pipe[0], &go, 1) != 1) ::_exit(14);  // hold every connection open until told
    for (int fd : fds) ::close(fd);
    ::_exit(0);
  }
  ::close(release_pipe[0]);
  bool all_alive = eventually([&] { return seen.live.load() == kConnections; }, 60000ms);
  EXPECT_TRUE(all_alive) << "live coroutines: " << seen.live.load();
  (void)::write(release_pipe[1], "g", 1);
  ::close(release_pipe[1]);
  int status = 0;
  bool exited = eventually([&] { return ::waitpid(child, &status, WNOHANG) == child; }, 60000ms);
  if (!exited) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  ASSERT_TRUE(exited);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client process status " << status;
  EXPECT_TRUE(eventually([&] { return seen.live.load() == 0; }, 30000ms)) << "still live: " << seen.live.load();
  EXPECT_EQ(seen.peak.load(), kConnections);
  server->close().wait();
}

INSTANTIATE_TEST_SUITE_P(On, CoroutineServerTest, ::testing::Values(&epoll(), &io_uring()),
                         [](const ::testing::TestParamInfo<Transport*>& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace weft
