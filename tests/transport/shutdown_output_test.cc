// Channel::shutdown_output() on every transport: the FIN follows every byte written before it, even
// when most of them still wait in the write queue for a peer that has not started reading.

#include <gtest/gtest.h>

#include <cstddef>
#include <future>
#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/sanitizers.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class ShutdownOutputTest : public test::TransportTest {
 protected:
  // Far more than the socket buffers hold (the server's send buffer is 64 KiB, the client's receive
  // buffer 64 KiB); less under a sanitizer.
#if defined(WEFT_TEST_SANITIZED)
  static constexpr std::size_t kQueuedBytes = std::size_t{2} << 20;
#else
  static constexpr std::size_t kQueuedBytes = std::size_t{16} << 20;
#endif
  static constexpr std::size_t kChunk = 256 << 10;

  // A server channel and a client connected to it: the accepted channel (ch) with its probe. The
  // client's receive buffer is small: nearly all of a payload waits in the server's write queue.
  struct Connection {
    explicit Connection(ShutdownOutputTest& t) : group(t.transport(), t.loops(1, 3)) {
      server = t.start_probed_server(group, probes);
    }
    void open() {
      client = test::BlockingClient(server->local_address().port(), {.receive_buffer = 64 << 10});
      ASSERT_TRUE(client.is_open());
      probe = probes.wait(0);
      ASSERT_NE(probe, nullptr);
      ASSERT_TRUE(probe->active.future().wait_for(5s));
      ch = probe->channel();
      ASSERT_NE(ch, nullptr);
    }
    test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
    EventLoopGroup group;
    ChannelPtr server;
    test::BlockingClient client;
    std::shared_ptr<test::ProbeState> probe;
    ChannelPtr ch;
  };

  // A server whose accepted channels only carry a probe; the test drives the accepted channel.
  ChannelPtr start_probed_server(EventLoopGroup& group, test::ProbeRegistry& probes) {
    ServerBootstrap b;
    // A small send buffer: the kernel cannot take the queue at once (loopback's grows to MiBs).
    b.group(group).child_option(option::send_buffer_size, 64 << 10).child_handler([&probes](Channel& ch) {
      ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
    });
    return b.bind(SocketAddress::loopback(0)).get();
  }

  // Bytes that tell a lost or reordered chunk from the right one.
  static std::string shutdown_payload(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i / 4099 + i) % 26);
    return s;
  }

  // Queues `payload` on `ch` from this thread: all of it flushed but the last chunk, which is only
  // written (shutdown_output() must send it too).
  static void queue_shutdown_payload(const ChannelPtr& ch, const std::string& payload) {
    for (std::size_t at = 0; at < payload.size(); at += kChunk) {
      const std::size_t n = std::min(kChunk, payload.size() - at);
      ch->write(ByteBuf::copy_of(std::string_view(payload).substr(at, n)));
      if (at + n < payload.size()) ch->flush();
    }
  }

  // Waits until `ch`'s loop has run what was posted to it so far. The blocking transport's loop is
  // inside a send to the peer that does not read: nothing to wait for there.
  void let_loop_catch_up(const ChannelPtr& ch) {
    if (is_blocking()) return;
    std::promise<void> ran;
    ch->loop().execute([&ran] { ran.set_value(); });
    ASSERT_EQ(ran.get_future().wait_for(10s), std::future_status::ready);
  }
};

TEST_P(ShutdownOutputTest, TheFinFollowsEveryQueuedByteToAPeerThatReadsLate) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  test::BlockingClient& client = c.client;
  auto& probe = c.probe;
  ChannelPtr& ch = c.ch;

  const std::string payload = shutdown_payload(kQueuedBytes);
  queue_shutdown_payload(ch, payload);
  Future<void> fin = ch->shutdown_output();
  let_loop_catch_up(ch);  // the shutdown has been asked for while the peer had read nothing

  std::string received;
  EXPECT_EQ(client.recv_until_end(&received, 30s), test::StreamEnd::eof);
  EXPECT_EQ(received.size(), payload.size());
  EXPECT_TRUE(received == payload) << "the bytes arrived changed or out of order";
  ASSERT_TRUE(fin.wait_for(5s));
  EXPECT_EQ(fin.error(), nullptr);

  // Half-closed only: the channel still reads what the peer sends.
  ASSERT_TRUE(client.send_all("still reading"));
  EXPECT_TRUE(test::eventually([&] { return probe->received() == "still reading"; }));
  EXPECT_TRUE(ch->is_active());
  EXPECT_GE(probe->index_of("output_shutdown"), 0);
  EXPECT_FALSE(probe->exception.future().is_done());
}

TEST_P(ShutdownOutputTest, AWriteAfterShutdownOutputFailsVisiblyAndNeverReachesThePeer) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  test::BlockingClient& client = c.client;
  auto& probe = c.probe;
  ChannelPtr& ch = c.ch;

  const std::string payload = shutdown_payload(kQueuedBytes);
  queue_shutdown_payload(ch, payload);
  Future<void> fin = ch->shutdown_output();
  ch->write_and_flush(ByteBuf::copy_of("written after shutdown_output"));  // while the FIN waits

  std::string received;
  EXPECT_EQ(client.recv_until_end(&received, 30s), test::StreamEnd::eof);
  EXPECT_EQ(received.size(), payload.size());
  EXPECT_TRUE(received == payload);
  ASSERT_TRUE(probe->exception.future().wait_for(5s)) << "the refused write must be reported";
  EXPECT_THROW(std::rethrow_exception(probe->first_error()), ChannelOutputShutdownError);
  ASSERT_TRUE(fin.wait_for(5s));
  EXPECT_EQ(fin.error(), nullptr);
  // A second call completes as the first did.
  Future<void> again = ch->shutdown_output();
  ASSERT_TRUE(again.wait_for(5s));
  EXPECT_EQ(again.error(), nullptr);
}

TEST_P(ShutdownOutputTest, CloseBeforeTheQueuedBytesLeaveFailsThePendingShutdown) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  auto& probe = c.probe;
  ChannelPtr& ch = c.ch;

  queue_shutdown_payload(ch, shutdown_payload(kQueuedBytes));
  Future<void> fin = ch->shutdown_output();
  let_loop_catch_up(ch);
  EXPECT_FALSE(fin.is_done()) << "the FIN may not leave before the queued bytes";
  ch->close();

  ASSERT_TRUE(fin.wait_for(5s)) << "a pending shutdown_output must complete when the channel closes";
  ASSERT_NE(fin.error(), nullptr);
  EXPECT_THROW(std::rethrow_exception(fin.error()), ChannelClosedError);
  EXPECT_TRUE(probe->inactive.future().wait_for(5s));
  EXPECT_FALSE(ch->is_open());
  // What was queued is released with the channel (the binary's leak check counts buffers).
}

WEFT_ON_EVERY_TRANSPORT(ShutdownOutputTest);

}  // namespace
}  // namespace weft
