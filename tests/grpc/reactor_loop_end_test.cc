// A server reactor's call that outlives its event loop's last turn (server_reactor.h): an
// EmbeddedChannel's manual-clock loop shut down while a call is open whose stream ends itself at
// shutdown, so that the HTTP/2 connection stays (GOAWAY, the stream owed) and the call is live. The first
// request after the termination -- from another thread, or from the loop's own -- and the stream's
// end each end the call: on_cancel, the outstanding read fails, the write fails, on_done, on the
// thread that found the loop gone. Before, a request from another thread was dropped unheard and
// one from the loop's thread threw out of the call's coroutine: the reactor never heard of its end.

#include <gtest/gtest.h>

#include <any>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/grpc/server_reactor.h"
#include "weft/grpc/service_registry.h"

using namespace std::chrono_literals;

namespace weft::grpc {
namespace {

std::string one_message(std::string_view message) {
  std::string out(5, '\0');
  const auto n = static_cast<std::uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  out.append(message);
  return out;
}

// What the reactor heard, and on which thread ("loop": the test's, which drives the manual loop).
struct HeardByReactor {
  std::mutex mutex;
  std::vector<std::string> events;
  std::optional<ServerStream> stream;
  std::thread::id loop_thread = std::this_thread::get_id();

  void add(const std::string& event) {
    const std::lock_guard lock(mutex);
    events.push_back(event + (std::this_thread::get_id() == loop_thread ? "@loop" : "@other"));
  }
  std::vector<std::string> take() {
    const std::lock_guard lock(mutex);
    return std::exchange(events, {});
  }
};

// Hands its stream to the test and records what it hears; asks for nothing itself, except a read
// after the end (which must do nothing: the call is over).
class HeldReactor final : public ServerReactor {
 public:
  HeldReactor(ServerStream stream, std::shared_ptr<HeardByReactor> heard) : heard_(std::move(heard)) {
    heard_->stream = stream;
  }
  void on_read_done(std::optional<ByteBuf> message) override {
    heard_->add("read " + (message ? message->to_string() : std::string("end")));
  }
  void on_write_done(bool ok) override {
    heard_->add(ok ? "write ok" : "write failed");
    if (!ok && heard_->stream) heard_->stream->start_write(ByteBuf::copy_of("again"));  // does nothing now
  }
  void on_cancel() override { heard_->add("cancel"); }
  void on_done() override { heard_->add("done"); }

 private:
  std::shared_ptr<HeardByReactor> heard_;
};

// Finishes its stream its own way when the loop shuts down (Channel::end_for_shutdown_itself).
class EndsItselfAtShutdown final : public InboundHandler<http2::StreamMessage> {
 public:
  void channel_read(Context& ctx, http2::StreamMessage&& message) override { ctx.fire_read(std::move(message)); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) ctx.channel().end_for_shutdown_itself();
    ctx.fire_user_event(event);
  }
};

struct LoopEndFixture {
  LoopEndFixture() {
    ServiceRegistry services;
    auto h = heard;
    services.add_reactor("/test.R/Held",
                         [h](ServerStream s) { return std::make_shared<HeldReactor>(std::move(s), h); });
    http2::Settings settings;
    // The calls' streams end themselves at the loop's shutdown (a handler before the call's), so
    // that the shutdown leaves the call open: without it the shutdown closes the stream, and the
    // call ends on the loop before it terminates.
    settings.stream_initializer = [chooser = services.stream_chooser()](const http::RequestHead& head) {
      http2::StreamInitializer init = chooser(head);
      if (!init) return init;
      return http2::StreamInitializer([init](http2::StreamChannel& ch) {
        init(ch);
        ch.pipeline().add_first("ends-itself", std::make_shared<EndsItselfAtShutdown>());
      });
    };
    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(std::move(settings)));
  }
  void pump() {
    for (int round = 0; round < 100'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      ch.run_pending();
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  // Opens a call and has its first message read; then shuts the loop down: the connection's GOAWAY
  // owes the open stream, so the call stays live.
  void open_call_then_terminate_the_loop() {
    stream_id =
        client.request_streamed("POST", "/test.R/Held", {{"content-type", "application/grpc"}, {"te", "trailers"}});
    client.send(stream_id, one_message("first"));
    pump();
    ASSERT_TRUE(heard->stream.has_value());
    heard->stream->start_read();
    pump();
    ASSERT_EQ(heard->take(), std::vector<std::string>{"read first@loop"});
    ASSERT_TRUE(ch.loop().shutdown_gracefully(0ms, 0ms).is_done());
    ASSERT_TRUE(ch.is_open()) << "the connection ended itself: no call outlives the loop";
    ASSERT_TRUE(heard->take().empty()) << "the call ended before the loop did";
  }

  std::shared_ptr<HeardByReactor> heard = std::make_shared<HeardByReactor>();
  EmbeddedChannel ch;
  test::H2Client client;
  std::int32_t stream_id = 0;
};

// How the call ends after a request: the cancel, the request's own failure, the end.
std::vector<std::string> ended(const std::string& where, const std::string& failed = "") {
  std::vector<std::string> events{"cancel@" + where};
  if (!failed.empty()) events.push_back(failed + "@" + where);
  events.push_back("done@" + where);
  return events;
}

TEST(GrpcReactorLoopEnd, ARequestFromAnotherThreadAfterTheLoopTerminatedEndsTheCall) {
  for (const bool write : {false, true}) {
    LoopEndFixture f;
    f.open_call_then_terminate_the_loop();
    std::thread([&] {
      if (write) {
        f.heard->stream->start_write(ByteBuf::copy_of("late"));
      } else {
        f.heard->stream->start_read();
      }
    }).join();
    EXPECT_EQ(f.heard->take(), ended("other", write ? "write failed" : "read end"));
    // The call is over: later requests do nothing, from any thread.
    std::thread([&] {
      f.heard->stream->finish(Status(StatusCode::ok, ""));
      EXPECT_NO_THROW(f.heard->stream->start_write(ByteBuf::copy_of("later")));
    }).join();
    f.heard->stream->finish(Status(StatusCode::ok, ""));
    EXPECT_TRUE(f.heard->take().empty());
    f.ch.close();
    EXPECT_TRUE(f.heard->take().empty());
  }
}

TEST(GrpcReactorLoopEnd, ARequestOnTheLoopsOwnThreadAfterItTerminatedEndsTheCall) {
  for (const bool write : {true, false}) {
    LoopEndFixture f;
    f.open_call_then_terminate_the_loop();
    if (write) {
      f.heard->stream->start_write(ByteBuf::copy_of("late"));
      EXPECT_EQ(f.heard->take(), ended("loop", "write failed"));
    } else {
      f.heard->stream->finish(Status(StatusCode::ok, ""));
      EXPECT_EQ(f.heard->take(), ended("loop"));
    }
    f.heard->stream->start_read();  // after on_done: nothing
    EXPECT_TRUE(f.heard->take().empty());
  }
}

TEST(GrpcReactorLoopEnd, TheStreamsEndAfterTheLoopTerminatedEndsTheCall) {
  LoopEndFixture f;
  f.open_call_then_terminate_the_loop();
  f.ch.close();  // the stream's end wakes the call, which finds no turn left
  EXPECT_EQ(f.heard->take(), ended("loop"));
  EXPECT_NO_THROW(f.heard->stream->finish(Status(StatusCode::ok, "")));
  EXPECT_TRUE(f.heard->take().empty());
}

}  // namespace
}  // namespace weft::grpc
