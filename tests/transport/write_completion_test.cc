// Channel::write(message, done) on every transport: the completion fires once, after the bytes left
// the write queue for the socket -- not before a peer that never reads has read them -- and fails
// when the write is refused or the channel closes with it still queued.

#include <gtest/gtest.h>

#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/sanitizers.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/error.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class WriteCompletionTest : public test::TransportTest {
 protected:
  // Far more than the socket buffers hold (the server's send buffer is 64 KiB, the client's receive
  // buffer 64 KiB, loopback's may grow to a few MiB); less under a sanitizer.
#if defined(WEFT_TEST_SANITIZED)
  static constexpr std::size_t kQueuedBytes = std::size_t{4} << 20;
#else
  static constexpr std::size_t kQueuedBytes = std::size_t{16} << 20;
#endif
  static constexpr std::size_t kChunk = 256 << 10;

  // A server whose accepted channel (ch) the test drives, and a client that reads only when told.
  struct Connection {
    explicit Connection(WriteCompletionTest& t) : group(t.transport(), t.loops(1, 3)) {
      ServerBootstrap b;
      b.group(group).child_option(option::send_buffer_size, 64 << 10).child_handler([this](Channel& ch) {
        ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
      });
      server = b.bind(SocketAddress::loopback(0)).get();
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

  static std::string payload(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i / 4099 + i) % 26);
    return s;
  }

  // Writes `data` in chunks from this thread, each with a completion; returns them in write order.
  static std::vector<Future<void>> write_in_chunks(const ChannelPtr& ch, const std::string& data) {
    std::vector<Future<void>> done;
    for (std::size_t at = 0; at < data.size(); at += kChunk) {
      Promise<void> written;
      done.push_back(written.future());
      ch->write_and_flush(ByteBuf::copy_of(std::string_view(data).substr(at, std::min(kChunk, data.size() - at))),
                          written);
    }
    return done;
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

TEST_P(WriteCompletionTest, ASmallWriteCompletesOnceWrittenOnTheLoop) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  std::promise<bool> on_loop;
  Promise<void> done;
  done.future().add_listener([&, ch = c.ch](const Future<void>&) { on_loop.set_value(ch->loop().in_loop()); });
  c.ch->write_and_flush(ByteBuf::copy_of("hello"), done);
  EXPECT_EQ(c.client.recv_exact(5), "hello");
  ASSERT_TRUE(done.future().wait_for(5s));
  EXPECT_EQ(done.future().error(), nullptr);
  auto ran_on_loop = on_loop.get_future();
  ASSERT_EQ(ran_on_loop.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(ran_on_loop.get()) << "a completion runs on the channel's loop";
}

TEST_P(WriteCompletionTest, StaysPendingUntilAPeerThatDoesNotReadHasReadTheBytes) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string data = payload(kQueuedBytes);
  std::vector<Future<void>> done = write_in_chunks(c.ch, data);
  ASSERT_NO_FATAL_FAILURE(let_loop_catch_up(c.ch));
  EXPECT_FALSE(done.back().is_done()) << "the last chunk cannot have left: the peer has read nothing";

  std::string received;
  ASSERT_EQ(c.client.recv_exact(data.size(), 60s).value_or(""), data) << "every byte, in order";
  for (std::size_t i = 0; i < done.size(); ++i) {
    ASSERT_TRUE(done[i].wait_for(10s)) << "chunk " << i;
    EXPECT_EQ(done[i].error(), nullptr) << "chunk " << i;
  }
}

TEST_P(WriteCompletionTest, CompletionsFireInWriteOrderExactlyOnce) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string data = payload(kQueuedBytes / 4);
  std::mutex mutex;
  std::vector<std::size_t> order;
  std::size_t chunks = 0;
  for (std::size_t at = 0; at < data.size(); at += kChunk, ++chunks) {
    Promise<void> written;
    written.future().add_listener([&, i = chunks](const Future<void>&) {
      std::lock_guard lock(mutex);
      order.push_back(i);
    });
    c.ch->write(ByteBuf::copy_of(std::string_view(data).substr(at, std::min(kChunk, data.size() - at))), written);
  }
  c.ch->flush();
  ASSERT_EQ(c.client.recv_exact(data.size(), 60s).value_or(""), data);
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex);
    return order.size() >= chunks;
  }));
  ASSERT_NO_FATAL_FAILURE(let_loop_catch_up(c.ch));  // a second completion would have run by now
  std::lock_guard lock(mutex);
  ASSERT_EQ(order.size(), chunks);
  for (std::size_t i = 0; i < chunks; ++i) EXPECT_EQ(order[i], i);
}

TEST_P(WriteCompletionTest, ClosingWithWritesQueuedFailsEveryPendingCompletion) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  std::vector<Future<void>> done = write_in_chunks(c.ch, payload(kQueuedBytes));
  ASSERT_NO_FATAL_FAILURE(let_loop_catch_up(c.ch));
  c.ch->close();
  std::size_t failed = 0;
  for (auto& f : done) {
    ASSERT_TRUE(f.wait_for(10s)) << "every completion completes";
    if (f.error() == nullptr) continue;  // written before the close
    EXPECT_THROW(std::rethrow_exception(f.error()), ChannelClosedError);
    ++failed;
  }
  EXPECT_GT(failed, 0u);
  EXPECT_NE(done.back().error(), nullptr) << "the last chunk had not left when the channel closed";
}

TEST_P(WriteCompletionTest, ARefusedWriteFailsItsCompletion) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  ASSERT_TRUE(c.ch->shutdown_output().wait_for(5s));
  Promise<void> after_shutdown;
  c.ch->write_and_flush(ByteBuf::copy_of("late"), after_shutdown);
  ASSERT_TRUE(after_shutdown.future().wait_for(5s));
  EXPECT_THROW(std::rethrow_exception(after_shutdown.future().error()), ChannelOutputShutdownError);

  ASSERT_TRUE(c.ch->close().wait_for(5s));
  Promise<void> after_close;
  c.ch->write_and_flush(ByteBuf::copy_of("later"), after_close);
  ASSERT_TRUE(after_close.future().wait_for(5s));
  EXPECT_THROW(std::rethrow_exception(after_close.future().error()), ChannelClosedError);
}

TEST_P(WriteCompletionTest, ShutdownOutputInTheLastWritesCompletionLosesNothing) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string data = payload(kQueuedBytes);
  std::vector<Future<void>> done = write_in_chunks(c.ch, data);
  std::promise<Future<void>> fin;
  done.back().add_listener([&, ch = c.ch](const Future<void>& f) {
    if (f.error() == nullptr) fin.set_value(ch->shutdown_output());
  });
  std::string received;
  EXPECT_EQ(c.client.recv_until_end(&received, 60s), test::StreamEnd::eof);
  EXPECT_TRUE(received == data) << "got " << received.size() << " of " << data.size() << " bytes";
  auto fin_future = fin.get_future();
  ASSERT_EQ(fin_future.wait_for(5s), std::future_status::ready);
  Future<void> sent = fin_future.get();
  ASSERT_TRUE(sent.wait_for(5s));
  EXPECT_EQ(sent.error(), nullptr);
  ASSERT_TRUE(c.client.send_all("half-closed only"));
  EXPECT_TRUE(test::eventually([&] { return c.probe->received() == "half-closed only"; }));
}

TEST_P(WriteCompletionTest, CloseInTheLastWritesCompletionLosesNothing) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string data = payload(kQueuedBytes);
  std::vector<Future<void>> done = write_in_chunks(c.ch, data);
  done.back().add_listener([ch = c.ch](const Future<void>&) { ch->close(); });
  std::string received;
  EXPECT_EQ(c.client.recv_until_end(&received, 60s), test::StreamEnd::eof);
  EXPECT_TRUE(received == data) << "got " << received.size() << " of " << data.size() << " bytes";
  EXPECT_TRUE(c.probe->inactive.future().wait_for(5s));
}

TEST_P(WriteCompletionTest, AFlushsCompletionCoversEveryByteWrittenBeforeIt) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  const std::string data = payload(kQueuedBytes);
  for (std::size_t at = 0; at < data.size(); at += kChunk) {
    c.ch->write(ByteBuf::copy_of(std::string_view(data).substr(at, std::min(kChunk, data.size() - at))));
  }
  Promise<void> flushed;
  c.ch->flush(flushed);
  ASSERT_NO_FATAL_FAILURE(let_loop_catch_up(c.ch));
  EXPECT_FALSE(flushed.future().is_done()) << "the peer has read nothing";
  ASSERT_EQ(c.client.recv_exact(data.size(), 60s).value_or(""), data);
  ASSERT_TRUE(flushed.future().wait_for(10s));
  EXPECT_EQ(flushed.future().error(), nullptr);
}

// Bytes from a std::string: an encoder between a handler's context and the socket.
class StringEncoder final : public OutboundHandler<std::string, ByteBuf> {
 public:
  void write(Context& ctx, std::string&& text) override { ctx.write(ByteBuf::copy_of(text)); }
};

TEST_P(WriteCompletionTest, AHandlersContextWritesThroughAnEncoderWithACompletion) {
  Connection c(*this);
  ASSERT_NO_FATAL_FAILURE(c.open());
  Promise<void> rejected, written;
  std::promise<void> queued;
  c.ch->loop().execute([&, ch = c.ch] {
    Context* ctx = ch->pipeline().context("probe");
    ctx->write_and_flush(std::string("no encoder yet"), rejected);  // a std::string reaches the socket
    ch->pipeline().add_first("encoder", std::make_shared<StringEncoder>());
    ctx->write_and_flush(std::string("encoded"), written);
    queued.set_value();
  });
  ASSERT_EQ(queued.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(rejected.future().wait_for(5s));
  EXPECT_THROW(std::rethrow_exception(rejected.future().error()), PipelineTypeError);
  EXPECT_EQ(c.client.recv_exact(7), "encoded");
  ASSERT_TRUE(written.future().wait_for(5s));
  EXPECT_EQ(written.future().error(), nullptr);
}

// Writes what it reads to `target`, a channel on the same loop, and logs when its call returned.
class ForwardingHandler final : public InboundHandler<ByteBuf> {
 public:
  ForwardingHandler(ChannelPtr target, std::vector<std::string>& log, std::promise<void>& completed)
      : target_(std::move(target)), log_(log), completed_(completed) {}
  void channel_read(Context&, ByteBuf&& bytes) override {
    Promise<void> done;
    done.future().add_listener([this](const Future<void>&) {
      log_.push_back("completed");
      completed_.set_value();
    });
    target_->write_and_flush(std::move(bytes), done);  // written at once: the completion is due now
    log_.push_back("handler returned");
  }

 private:
  ChannelPtr target_;
  std::vector<std::string>& log_;
  std::promise<void>& completed_;
};

TEST_P(WriteCompletionTest, ACompletionDueInsideAnotherChannelsHandlerRunsAfterIt) {
  if (is_blocking()) GTEST_SKIP() << "a blocking loop serves one channel: no two channels share its thread";
  EventLoopGroup group(transport(), 1);
  ServerBootstrap sink_bootstrap;
  sink_bootstrap.group(group).child_handler([](Channel&) {});
  ChannelPtr sink = sink_bootstrap.bind(SocketAddress::loopback(0)).get();
  ChannelPtr target = Bootstrap().group(group.at(0)).connect(sink->local_address()).get();
  std::vector<std::string> log;  // used on the loop only until `completed`
  std::promise<void> completed;
  ServerBootstrap b;
  b.group(group).child_handler([&](Channel& ch) {
    ch.pipeline().add_last("forward", std::make_shared<ForwardingHandler>(target, log, completed));
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.send_all("x"));
  ASSERT_EQ(completed.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(log, (std::vector<std::string>{"handler returned", "completed"}))
      << "another channel's completion ran inside this channel's handler";
  target->close().get();
}

WEFT_ON_EVERY_TRANSPORT(WriteCompletionTest);

}  // namespace
}  // namespace weft
