// What the server sees when peers misbehave over real loopback sockets: resets, half-closes, a
// client that never reads, and writes to a peer that has gone (SIGPIPE).

#include <signal.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/events.h"
#include "weft/core/error.h"
#include "support/transports.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class PeerBehaviourTest : public test::TransportTest {};

using test::BlockingClient;
using test::ProbeRegistry;
using test::StreamEnd;

std::string describe(const std::vector<std::string>& events) {
  std::string out;
  for (const auto& e : events) out += (out.empty() ? "" : ", ") + e;
  return "[" + out + "]";
}

// A server whose accepted channels run probe + the given handler (made per channel).
template <class MakeHandler>
ChannelPtr start_server(EventLoopGroup& group, ProbeRegistry& probes, MakeHandler make, ChannelConfig child = {}) {
  ServerBootstrap b;
  b.group(group)
      .child_option(option::allow_half_closure, child.allow_half_closure)
      .child_option(option::auto_read, child.auto_read)
      .child_option(option::send_buffer_size, child.send_buffer_size)
      .child_handler([&probes, make](Channel& ch) {
        ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
        ch.pipeline().add_last("handler", make());
      });
  return b.bind(SocketAddress::loopback(0)).get();
}

// ---------------------------------------------------------------------------------------------
// A peer that resets

TEST_P(PeerBehaviourTest, ResetByPeerIsAnExceptionThenInactiveAndTheServerKeepsServing) {
  ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  // Blocking: the listener, the reset channel, and each polite client's channel, which may still be
  // closing (its thread has not seen the EOF yet) when the next client connects.
  EventLoopGroup group(transport(), loops(2, 8));
  ChannelPtr server = start_server(group, probes, [] { return std::make_shared<test::BackpressureEcho>(); });
  const std::uint16_t port = server->local_address().port();

  BlockingClient rude(port);
  ASSERT_TRUE(rude.is_open());
  ASSERT_TRUE(rude.round_trip("before the reset"));  // the server channel is active and has read
  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  rude.reset();  // SO_LINGER {1, 0}: RST instead of FIN

  ASSERT_TRUE(probe->inactive.future().wait_for(5s)) << "events: " << describe(probe->events());
  ASSERT_TRUE(probe->exception.future().is_done()) << "a reset must be reported as an exception event; events: "
                                                   << describe(probe->events());
  EXPECT_EQ(probe->first_error_code(), ECONNRESET);
  try {
    std::rethrow_exception(probe->first_error());
  } catch (const IoError&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected IoError, got: " << e.what();
  }
  EXPECT_LT(probe->index_of("exception"), probe->index_of("inactive")) << describe(probe->events());
  auto events = probe->events();
  EXPECT_EQ(std::count(events.begin(), events.end(), "inactive"), 1) << describe(events);

  // The server (and the loop that ran the reset channel) still serves others.
  for (int i = 0; i < 4; ++i) {
    BlockingClient polite(port);
    ASSERT_TRUE(polite.is_open());
    EXPECT_TRUE(polite.round_trip("after the reset " + std::to_string(i)));
  }
  EXPECT_TRUE(server->is_active());
}

// ---------------------------------------------------------------------------------------------
// A peer that half-closes

// Collects what arrives; when the input is shut down, replies with what it got, then closes.
class ReplyOnInputShutdown final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context&, ByteBuf&& buf) override {
    received_.append(reinterpret_cast<const char*>(buf.read_ptr()), buf.readable_bytes());
  }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
      active_at_event.store(ctx.channel().is_active());
      ctx.write_and_flush(ByteBuf::copy_of("got: " + received_));
      ctx.channel().close_after_flush();
    }
    ctx.fire_user_event(event);
  }
  std::atomic<bool> active_at_event{false};

 private:
  std::string received_;
};

TEST_P(PeerBehaviourTest, HalfClosureAllowedDeliversInputShutdownAndTheServerCanStillReply) {
  ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 3));
  auto replier = std::make_shared<ReplyOnInputShutdown>();
  ChannelConfig child;
  child.allow_half_closure = true;
  ChannelPtr server = start_server(group, probes, [replier] { return replier; }, child);

  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("hello, "));
  ASSERT_TRUE(client.send_all("half-closed world"));
  client.shutdown_write();

  std::string reply;
  EXPECT_EQ(client.recv_until_end(&reply), StreamEnd::eof);
  EXPECT_EQ(reply, "got: hello, half-closed world");

  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(probe->inactive.future().wait_for(5s)) << describe(probe->events());
  EXPECT_TRUE(probe->input_shutdown.future().is_done()) << describe(probe->events());
  EXPECT_TRUE(replier->active_at_event.load()) << "the channel must stay active after the peer's FIN";
  EXPECT_LT(probe->index_of("input_shutdown"), probe->index_of("inactive")) << describe(probe->events());
  EXPECT_FALSE(probe->exception.future().is_done()) << describe(probe->events());
}

TEST_P(PeerBehaviourTest, HalfClosureNotAllowedClosesTheChannelOnThePeersFin) {
  ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 3));
  auto replier = std::make_shared<ReplyOnInputShutdown>();
  ChannelConfig child;
  child.allow_half_closure = false;
  ChannelPtr server = start_server(group, probes, [replier] { return replier; }, child);

  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("hello"));
  client.shutdown_write();

  std::string reply;
  EXPECT_EQ(client.recv_until_end(&reply), StreamEnd::eof);
  EXPECT_EQ(reply, "") << "no input-shutdown event (and so no reply) without allow_half_closure";

  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(probe->inactive.future().wait_for(5s)) << describe(probe->events());
  EXPECT_FALSE(probe->input_shutdown.future().is_done()) << describe(probe->events());
  EXPECT_EQ(probe->received(), "hello");
  EXPECT_FALSE(probe->exception.future().is_done()) << describe(probe->events());
}

TEST_P(PeerBehaviourTest, WithoutHalfClosureEveryByteEchoedBeforeThePeersFinStillReachesIt) {
  // The peer sends 1 MiB and then FIN, reading all the while: the echo of every byte it sent must
  // come back before the server closes (the FIN used to drop what was still queued or in flight).
  ProbeRegistry probes;
  EventLoopGroup group(transport(), loops(1, 3));
  ChannelPtr server = start_server(group, probes, [] { return std::make_shared<test::BackpressureEcho>(); });
  for (int round = 0; round < 3; ++round) {
    BlockingClient client(server->local_address().port());
    ASSERT_TRUE(client.is_open());
    const std::string payload(1 << 20, static_cast<char>('a' + round));
    std::thread sender([&client, &payload] {
      std::size_t sent = 0;
      while (sent < payload.size()) {
        const ssize_t n = ::send(client.fd(), payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::shutdown(client.fd(), SHUT_WR);
    });
    std::string echoed;
    const StreamEnd end = client.recv_until_end(&echoed, 20s);
    sender.join();
    EXPECT_EQ(end, StreamEnd::eof) << "round " << round;
    EXPECT_EQ(echoed.size(), payload.size()) << "round " << round;
    EXPECT_TRUE(echoed == payload) << "round " << round;
  }
}

// ---------------------------------------------------------------------------------------------
// A client that never reads

// Writes `total` bytes in 64 KiB chunks, but only while the channel is writable; resumes when the
// channel turns writable again, then closes after the last flush.
class Flooder final : public InboundHandler<ByteBuf> {
 public:
  static constexpr std::size_t kChunk = 64 * 1024;
  explicit Flooder(std::size_t total) : total_(total) {}

  void channel_active(Context& ctx) override {
    ctx.fire_channel_active();
    pump(ctx);
  }
  void channel_read(Context&, ByteBuf&&) override {}
  void writability_changed(Context& ctx) override {
    if (ctx.channel().is_writable()) {
      writable_again.set_value();
      pump(ctx);
    } else {
      unwritable_sent.store(sent_.load());
      unwritable_pending.store(ctx.channel().pending_write_bytes());
      unwritable.set_value();
    }
    ctx.fire_writability_changed();
  }

  // Loop thread.
  void pump(Context& ctx) {
    Channel& ch = ctx.channel();
    while (ch.is_writable() && sent_.load() < total_ && ch.is_open()) {
      ByteBuf chunk = ctx.allocator().buffer(kChunk);
      for (std::size_t i = 0; i < kChunk; ++i) chunk.write_u8(pattern(sent_.load() + i));
      sent_.fetch_add(kChunk);
      ctx.write_and_flush(std::move(chunk));
      std::size_t pending = ch.pending_write_bytes();
      if (pending > max_pending.load()) max_pending.store(pending);
    }
    if (sent_.load() >= total_ && !closing_) {
      closing_ = true;
      ch.close_after_flush();
    }
  }
  static std::uint8_t pattern(std::size_t i) { return static_cast<std::uint8_t>((i * 31) ^ (i >> 12)); }
  std::size_t sent() const { return sent_.load(); }

  Promise<void> unwritable;
  Promise<void> writable_again;
  std::atomic<std::size_t> max_pending{0};
  std::atomic<std::size_t> unwritable_sent{0};
  std::atomic<std::size_t> unwritable_pending{0};

 private:
  const std::size_t total_;
  std::atomic<std::size_t> sent_{0};
  bool closing_ = false;
};

TEST_P(PeerBehaviourTest, AClientThatNeverReadsMakesTheChannelUnwritableAndTheQueueStaysBounded) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark: "
                    "BlockingTransportTest.APeerThatNeverReadsBlocksTheWriterWithABoundedQueue";
  }
  ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 3));
  constexpr std::size_t kTotal = 8u << 20;
  constexpr std::size_t kHigh = ChannelConfig{}.write_buffer_high_water_mark;
  auto flooder = std::make_shared<Flooder>(kTotal);
  ChannelConfig child;
  child.send_buffer_size = 64 * 1024;  // keep the kernel's share small so the queue fills quickly
  ChannelPtr server = start_server(group, probes, [flooder] { return flooder; }, child);

  BlockingClient client(server->local_address().port(), {.receive_buffer = 32 * 1024});
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(flooder->unwritable.future().wait_for(10s)) << "the channel never turned unwritable; sent "
                                                          << flooder->sent();
  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  EXPECT_GE(probe->index_of("unwritable"), 0) << "writability_changed did not reach the pipeline";
  EXPECT_GT(flooder->unwritable_pending.load(), kHigh);
  EXPECT_LE(flooder->unwritable_pending.load(), kHigh + Flooder::kChunk);

  // While the client does not read, sending stalls and the queue stays where it stopped. On io_uring a
  // send is submitted at the loop's next turn, after the flusher queued past the mark, so the first
  // unwritable moment may pass once the kernel takes its share: wait until nothing moves for 100 ms.
  std::size_t sent_when_stuck = flooder->sent();
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(100ms);
    if (flooder->sent() == sent_when_stuck) break;
    sent_when_stuck = flooder->sent();
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(flooder->sent(), sent_when_stuck);
  EXPECT_LT(flooder->sent(), kTotal);
  EXPECT_LE(flooder->max_pending.load(), kHigh + Flooder::kChunk);
  ChannelPtr channel = probe->channel();
  ASSERT_NE(channel, nullptr);
  EXPECT_FALSE(channel->is_writable());
  Promise<std::size_t> pending_now;
  channel->loop().execute([&] {
    pending_now.set_value(channel->pending_write_bytes());
    EXPECT_EQ(channel->bytes_before_unwritable(), 0u);
  });
  ASSERT_TRUE(pending_now.future().wait_for(5s));
  EXPECT_LE(pending_now.future().get(), kHigh + Flooder::kChunk);

  // The client starts reading: the channel turns writable again and everything arrives, in order.
  std::string data;
  EXPECT_EQ(client.recv_until_end(&data, 30s), StreamEnd::eof);
  EXPECT_TRUE(flooder->writable_again.future().is_done());
  EXPECT_GE(probe->index_of("writable"), 0);
  ASSERT_EQ(data.size(), kTotal);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (static_cast<std::uint8_t>(data[i]) != Flooder::pattern(i)) FAIL() << "byte " << i << " differs";
  }
  EXPECT_LE(flooder->max_pending.load(), kHigh + Flooder::kChunk);
  EXPECT_TRUE(probe->inactive.future().wait_for(5s));
}

// ---------------------------------------------------------------------------------------------
// SIGPIPE

TEST_P(PeerBehaviourTest, WritingToAPeerThatClosedDoesNotRaiseSigpipe) {
  // The default action of SIGPIPE kills the process: make sure that is what is in force.
  struct sigaction old_action{};
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ASSERT_EQ(::sigaction(SIGPIPE, &dfl, &old_action), 0);

  ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 3));
  ChannelConfig child;
  child.auto_read = false;  // do not notice the FIN by reading: keep writing until the kernel refuses
  ChannelPtr server = start_server(group, probes, [] { return std::make_shared<test::BackpressureEcho>(); }, child);

  BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(probe->active.future().wait_for(5s));
  ChannelPtr channel = probe->channel();
  ASSERT_NE(channel, nullptr);
  client.close();  // FIN; the first write after it draws a RST, the next one fails with EPIPE

  // One batch of writes at a time: the next is posted once the loop ran the last, so that on a slow
  // (sanitized, loaded) machine batches never pile up in the loop's queue ahead of the failure. The
  // limit is for a hang only.
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (channel->is_open() && std::chrono::steady_clock::now() < deadline) {
    Promise<void> written;
    channel->loop().execute([channel, written]() mutable {
      for (int i = 0; i < 16 && channel->is_open(); ++i) {
        channel->write_and_flush(ByteBuf::copy_of(std::string(16 * 1024, 'p')));
      }
      written.set_value();
    });
    written.future().wait_for(60s);
    channel->close_future().wait_for(10ms);
  }
  ASSERT_TRUE(channel->close_future().wait_for(60s)) << "writing to a closed peer never failed";
  ASSERT_TRUE(probe->exception.future().is_done()) << describe(probe->events());
  int code = probe->first_error_code();
  EXPECT_TRUE(code == EPIPE || code == ECONNRESET) << "errno " << code;
  EXPECT_LT(probe->index_of("exception"), probe->index_of("inactive")) << describe(probe->events());

  ::sigaction(SIGPIPE, &old_action, nullptr);
}

WEFT_ON_EVERY_TRANSPORT(PeerBehaviourTest);

}  // namespace
}  // namespace weft
