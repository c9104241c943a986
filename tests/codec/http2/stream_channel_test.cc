// The HTTP/2 stream API (http2::StreamChannel) in an EmbeddedChannel, driven by an nghttp2 client
// session: request bodies in chunks and response bodies streamed byte for byte, trailers both ways,
// flow control as backpressure both ways (a child that stops reading stops its client at the
// stream's window; a client that stops reading makes the child unwritable), resets both ways,
// GOAWAY while a stream is open, a coroutine on a stream, and whole requests beside the streams.

#include "weft/codec/http2/stream_channel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <any>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "buffer/counting_allocator.h"
#include "support/h2_client.h"
#include "support/h2_frames.h"
#include "weft/channel/connection.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::H2Client;

std::string patterned(std::size_t n, std::size_t from = 0) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = from + i;
    s[i] = static_cast<char>('a' + (k * 7 + k / 251) % 26);
  }
  return s;
}

// Records what a stream's channel sees; `on_message` and `on_writable` let a test act on it.
class Recorder final : public InboundHandler<StreamMessage, StreamMessage> {
 public:
  void channel_read(Context& ctx, StreamMessage&& message) override {
    if (auto* h = std::get_if<StreamHeaders>(&message)) {
      path = std::string(h->request.path());
      method = std::string(h->request.method());
      header_x = std::string(h->request.header("x-test").value_or(""));
      stream_id = h->request.sequence();
      events.push_back(std::string("headers") + (h->end_stream ? " end" : ""));
    } else if (auto* d = std::get_if<StreamData>(&message)) {
      body += d->data.to_string();
      ++data_messages;
      events.push_back("data " + std::to_string(d->data.readable_bytes()) + (d->end_stream ? " end" : ""));
    } else if (auto* t = std::get_if<StreamTrailers>(&message)) {
      for (const auto& f : t->fields) trailers.emplace_back(f.name, f.value);
      events.push_back("trailers");
    }
    auto* channel = dynamic_cast<StreamChannel*>(&ctx.channel());
    if (channel != nullptr) max_buffered = std::max(max_buffered, channel->buffered_inbound_bytes());
    if (on_message) on_message(ctx, message);
  }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
  void user_event(Context&, const std::any& event) override {
    if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) input_shutdown = true;
  }
  void writability_changed(Context& ctx) override {
    writability.push_back(ctx.channel().is_writable());
    if (on_writable) on_writable(ctx);
  }
  void exception_caught(Context&, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const StreamResetError& e) {
      reset_code = e.error_code();
    } catch (const std::exception& e) {
      other_error = e.what();
    }
  }
  void channel_inactive(Context&) override { inactive = true; }

  std::function<void(Context&, StreamMessage&)> on_message;
  std::function<void(Context&)> on_writable;
  std::vector<std::string> events;
  std::string path, method, header_x, body, other_error;
  std::vector<std::pair<std::string, std::string>> trailers;
  std::uint64_t stream_id = 0;
  int data_messages = 0;
  std::size_t max_buffered = 0;
  std::vector<bool> writability;
  std::optional<std::uint32_t> reset_code;
  bool input_shutdown = false;
  bool inactive = false;
};

std::shared_ptr<http::Router> whole_routes() {
  auto router = std::make_shared<http::Router>();
  router->get("/plaintext",
              [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
  router->post("/echo", [](Context& ctx, HttpRequest& request) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
  });
  return router;
}

// A codec whose streams under /stream/ are channels, each with a Recorder (set up further by
// `setup`), the rest served whole by a Router.
struct Fixture {
  using Setup = std::function<void(StreamChannel&, Recorder&)>;
  explicit Fixture(Setup setup_child = {}, Settings settings = {}, bool with_recorder = true)
      : setup(std::move(setup_child)) {
    settings.stream_initializer = [this, with_recorder](const http::RequestHead& head) -> StreamInitializer {
      if (head.path.substr(0, 8) != "/stream/") return {};
      return [this, with_recorder](StreamChannel& ch) {
        auto recorder = std::make_shared<Recorder>();
        if (with_recorder) ch.pipeline().add_last("recorder", recorder);
        if (setup) setup(ch, *recorder);
        children.push_back(std::static_pointer_cast<StreamChannel>(ch.shared_from_this()));
        recorders.push_back(recorder);
      };
    };
    ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(std::move(settings)));
    ch.pipeline().add_last("app", whole_routes());
  }
  void pump(H2Client& client) {
    for (int round = 0; round < 1'000'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      ch.run_pending();
      const std::string in = output();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  std::string output() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  ServerCodec& codec() { return *ch.pipeline().get_as<ServerCodec>("http2"); }

  Setup setup;
  std::vector<std::shared_ptr<StreamChannel>> children;
  std::vector<std::shared_ptr<Recorder>> recorders;
  EmbeddedChannel ch;
};

// The echo: the head answered at once, each chunk written back as it comes, the end with the last.
void echo(StreamChannel&, Recorder& r) {
  r.on_message = [](Context& ctx, StreamMessage& message) {
    if (std::holds_alternative<StreamHeaders>(message)) {
      ctx.write(ResponseHeaders{HttpResponse(200).header("X-Echo", "yes"), false});
    } else if (auto* d = std::get_if<StreamData>(&message)) {
      ctx.write(StreamData{std::move(d->data), d->end_stream});
    } else {
      ctx.write(StreamData{ByteBuf(), true});  // trailers end the request: end the answer
    }
  };
}

TEST(Http2StreamChannelTest, AStreamingEchoSendsEachChunkBackAsItComesByteForByte) {
  Fixture f(echo);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo", {{"x-test", "v"}});
  f.pump(client);
  ASSERT_EQ(f.recorders.size(), 1u);
  Recorder& r = *f.recorders[0];
  EXPECT_EQ(r.path, "/stream/echo");
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.header_x, "v");
  EXPECT_EQ(r.stream_id, static_cast<std::uint64_t>(id));
  EXPECT_EQ(f.children[0]->stream_id(), id);
  EXPECT_EQ(client.response(id).status, 200) << "the head leaves before any body";
  EXPECT_EQ(client.response(id).header("x-echo"), "yes");
  std::string sent;
  for (int i = 0; i < 5; ++i) {
    const std::string chunk = patterned(3000 + 1000 * i, sent.size());
    client.send(id, chunk);
    sent += chunk;
    f.pump(client);
    // Streamed, not gathered: what was sent so far is back, and the stream is still open.
    EXPECT_EQ(client.response(id).body, sent) << i;
    EXPECT_FALSE(client.response(id).closed);
  }
  client.finish(id);
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.body, sent);
  EXPECT_FALSE(response.header("content-length").has_value());
  EXPECT_EQ(r.body, sent);
  EXPECT_GE(r.data_messages, 5);
  EXPECT_EQ(r.events.front(), "headers");
  EXPECT_NE(r.events.back().find(" end"), std::string::npos) << r.events.back();
  EXPECT_TRUE(r.input_shutdown);
  EXPECT_TRUE(r.inactive) << "the child closes with its stream";
  EXPECT_FALSE(r.reset_code.has_value());
  EXPECT_EQ(f.codec().open_streams(), 0u);
  EXPECT_EQ(client.error(), 0);
}

TEST(Http2StreamChannelTest, TrailersGoBothWays) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [&r](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamTrailers>(message)) {
        ctx.write(ResponseHeaders{HttpResponse(200).content_type("application/grpc"), false});
        ctx.write(StreamData{ByteBuf::copy_of("got " + r.body), false});
        ctx.write(StreamTrailers{Fields().add("grpc-status", "0").add("Grpc-Message", "fine")});
      }
    };
  });
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/rpc");
  client.send(id, "payload");
  client.finish(id, {{"x-checksum", "abc"}, {"x-count", "1"}});
  f.pump(client);
  Recorder& r = *f.recorders.at(0);
  ASSERT_EQ(r.trailers.size(), 2u);
  EXPECT_EQ(r.trailers[0], (std::pair<std::string, std::string>{"x-checksum", "abc"}));
  EXPECT_EQ(r.trailers[1], (std::pair<std::string, std::string>{"x-count", "1"}));
  EXPECT_EQ(r.events.back(), "trailers");
  EXPECT_TRUE(r.input_shutdown);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.header("content-type"), "application/grpc");
  EXPECT_EQ(response.body, "got payload");
  ASSERT_EQ(response.trailers.size(), 2u);
  EXPECT_EQ(response.trailers[0], (std::pair<std::string, std::string>{"grpc-status", "0"}));
  EXPECT_EQ(response.trailers[1], (std::pair<std::string, std::string>{"grpc-message", "fine"})) << "lowercased";
  EXPECT_THROW(Fields().add("bad name", "v"), std::invalid_argument);
  EXPECT_THROW(Fields().add("x", "a\r\nb"), std::invalid_argument);
}

// Writes `total` bytes in chunks while the channel is writable, then the end; goes on when it
// turns writable again.
struct Producer {
  std::size_t total = 0;
  std::size_t chunk = 0;
  std::size_t written = 0;
  std::size_t max_queued = 0;
  bool ended = false;
  void produce(Context& ctx) {
    while (!ended && ctx.channel().is_writable()) {
      const std::size_t n = std::min(chunk, total - written);
      ctx.write(StreamData{ByteBuf::copy_of(patterned(n, written)), written + n == total});
      written += n;
      ended = written == total;
      auto& channel = static_cast<StreamChannel&>(ctx.channel());
      max_queued = std::max(max_queued, channel.queued_outbound_bytes());
    }
    ctx.flush();
  }
};

void produce_on_headers(StreamChannel& ch, Recorder& r, Producer& p) {
  r.on_message = [&p](Context& ctx, StreamMessage& message) {
    if (!std::holds_alternative<StreamHeaders>(message)) return;
    ctx.write(ResponseHeaders{HttpResponse(200), false});
    p.produce(ctx);
  };
  r.on_writable = [&p](Context& ctx) {
    if (ctx.channel().is_writable()) p.produce(ctx);
  };
  (void)ch;
}

TEST(Http2StreamChannelTest, AResponseStreamsAtAClientWindowOfOneAndItsWriterWaitsForIt) {
  Producer p{.total = 3000, .chunk = 600};
  Fixture f([&p](StreamChannel& ch, Recorder& r) {
    ch.config().write_buffer_high_water_mark = 1000;
    ch.config().write_buffer_low_water_mark = 500;
    produce_on_headers(ch, r, p);
  });
  H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1}});
  const auto id = client.request("GET", "/stream/download");
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.body, patterned(3000));
  Recorder& r = *f.recorders.at(0);
  // The window held the bytes back: the writer was stopped at the water mark and let go again.
  ASSERT_GE(r.writability.size(), 2u);
  EXPECT_FALSE(r.writability[0]);
  EXPECT_TRUE(r.writability[1]);
  EXPECT_LE(p.max_queued, 1000u + 600u) << "never more than the water mark and one chunk";
  EXPECT_EQ(r.events.front(), "headers end") << "a GET: no body";
  EXPECT_EQ(client.error(), 0);
}

TEST(Http2StreamChannelTest, AClientThatStopsReadingMakesTheChildUnwritableAndReadingAgainWritable) {
  Producer p{.total = 1 << 20, .chunk = 16384};
  Fixture f([&p](StreamChannel& ch, Recorder& r) { produce_on_headers(ch, r, p); });
  H2Client client({}, /*manual_windows=*/true);
  const auto id = client.request("GET", "/stream/download");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  StreamChannel& child = *f.children[0];
  Recorder& r = *f.recorders[0];
  // The client's windows (64 KiB - 1) are spent and it returns nothing: the child's bytes wait.
  EXPECT_EQ(client.response(id).body_size, 65535u);
  EXPECT_FALSE(child.is_writable());
  EXPECT_GT(child.queued_outbound_bytes(), child.config().write_buffer_high_water_mark);
  EXPECT_LE(child.queued_outbound_bytes(), child.config().write_buffer_high_water_mark + p.chunk);
  EXPECT_EQ(child.pending_write_bytes(), child.queued_outbound_bytes());
  EXPECT_LT(p.written, p.total) << "the writer stopped";
  ASSERT_FALSE(r.writability.empty());
  EXPECT_FALSE(r.writability.back());
  const std::size_t stalled_at = r.writability.size();
  // Nothing moves while the client reads nothing.
  f.pump(client);
  EXPECT_EQ(client.response(id).body_size, 65535u);
  EXPECT_EQ(r.writability.size(), stalled_at);
  // The client reads: its windows open, the bytes leave, the child turns writable, and so on.
  std::uint64_t consumed = 0;
  for (int round = 0; round < 1000 && !client.response(id).closed; ++round) {
    const std::uint64_t seen = client.response(id).body_size;
    client.consume(id, static_cast<std::size_t>(seen - consumed));
    consumed = seen;
    f.pump(client);
  }
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.body, patterned(1 << 20));
  ASSERT_GT(r.writability.size(), stalled_at);
  EXPECT_TRUE(r.writability[stalled_at]) << "writable again once the client read";
  EXPECT_LE(p.max_queued, child.config().write_buffer_high_water_mark + p.chunk);
}

TEST(Http2StreamChannelTest, AChildThatStopsReadingRunsItsClientsWindowOutAndReadingReopensIt) {
  Settings settings;
  settings.initial_window_size = 16384;
  Fixture f([](StreamChannel& ch, Recorder&) { ch.config().auto_read = false; }, settings);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/upload");
  f.pump(client);  // (the client learns the server's window: before, it may use the protocol's 64 KiB)
  client.send(id, patterned(100'000));
  client.finish(id);
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  StreamChannel& child = *f.children[0];
  Recorder& r = *f.recorders[0];
  // Nothing read, so no WINDOW_UPDATE for the stream: the client stopped at the stream's window,
  // and that is all the codec holds for the child.
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(child.buffered_inbound_bytes(), 16384u);
  EXPECT_EQ(nghttp2_session_get_stream_remote_window_size(client.session(), id), 0);
  EXPECT_EQ(client.unsent(id), 100'000u - 16384u);
  f.pump(client);
  EXPECT_EQ(child.buffered_inbound_bytes(), 16384u) << "still nothing moves";
  // One read: what is held is delivered, the window reopens, the client goes on (and stops again).
  child.read();
  f.ch.run_pending();
  f.pump(client);
  EXPECT_GE(r.body.size(), 16384u);
  EXPECT_LT(r.body.size(), 100'000u);
  EXPECT_LE(child.buffered_inbound_bytes(), 16384u);
  // Reading on: the whole body, never more than the window held.
  child.set_auto_read(true);
  f.ch.run_pending();
  f.pump(client);
  EXPECT_EQ(r.body, patterned(100'000));
  EXPECT_LE(r.max_buffered, 16384u);
  EXPECT_TRUE(r.input_shutdown);
  EXPECT_EQ(client.unsent(id), 0u);
}

TEST(Http2StreamChannelTest, AClientResetReachesTheChildAsStreamResetErrorAndClosesIt) {
  Fixture f(echo);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo");
  client.send(id, "first");
  f.pump(client);
  ASSERT_EQ(f.recorders.size(), 1u);
  Recorder& r = *f.recorders[0];
  EXPECT_EQ(r.body, "first");
  client.reset(id, NGHTTP2_CANCEL);
  f.pump(client);
  ASSERT_TRUE(r.reset_code.has_value());
  EXPECT_EQ(*r.reset_code, std::uint32_t{NGHTTP2_CANCEL});
  EXPECT_TRUE(r.inactive);
  EXPECT_FALSE(f.children[0]->is_open());
  EXPECT_EQ(f.codec().open_streams(), 0u);
  // The connection goes on.
  const auto again = client.request("GET", "/plaintext");
  f.pump(client);
  EXPECT_EQ(client.response(again).body, "Hello, World!");
}

TEST(Http2StreamChannelTest, AStreamResetInTheReadThatOpenedItNeverStartsAChannel) {
  int initialized = 0;
  Fixture f([&initialized](StreamChannel&, Recorder&) { ++initialized; });
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo");
  std::string bytes = client.take_output();  // the preface, SETTINGS, the HEADERS
  client.reset(id, NGHTTP2_CANCEL);
  bytes += client.take_output();  // RST_STREAM: in the same read as the HEADERS
  f.ch.write_inbound(ByteBuf::copy_of(bytes));
  f.pump(client);
  EXPECT_EQ(client.response(id).close_error, std::uint32_t{NGHTTP2_CANCEL});
  EXPECT_EQ(initialized, 0);
  EXPECT_EQ(f.codec().open_streams(), 0u);
  const auto again = client.request("GET", "/plaintext");
  f.pump(client);
  EXPECT_EQ(client.response(again).body, "Hello, World!");
}

TEST(Http2StreamChannelTest, AChildClosedBeforeItsResponseEndedResetsTheStreamWithCancelAndSpendsNoBudget) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamHeaders>(message)) {
        ctx.write(ResponseHeaders{HttpResponse(200), false});
        ctx.write(StreamData{ByteBuf::copy_of("partial"), false});
        ctx.flush();
        ctx.close();
      }
    };
  });
  H2Client client;
  // More streams than the glitch budget (200) holds: the application's resets are not the client's doing.
  std::vector<std::int32_t> ids;
  for (int batch = 0; batch < 3; ++batch) {
    for (int i = 0; i < 90; ++i) ids.push_back(client.request_streamed("POST", "/stream/cancel"));
    f.pump(client);
  }
  for (const auto id : ids) {
    const auto& response = client.response(id);
    ASSERT_TRUE(response.closed) << id;
    EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_CANCEL}) << id;
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, "partial");
  }
  EXPECT_FALSE(client.goaway_error().has_value());
  EXPECT_TRUE(f.ch.is_open());
  EXPECT_EQ(f.codec().open_streams(), 0u);
}

TEST(Http2StreamChannelTest, AChildClosedAfterWritingTheEndLetsItsResponseFinishLeaving) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamHeaders>(message)) {
        ctx.write(ResponseHeaders{HttpResponse(200), false});
        ctx.write(StreamData{ByteBuf::copy_of(patterned(200'000)), true});
        ctx.flush();
        ctx.close();  // while most of the body still waits for the client's window
      }
    };
  });
  H2Client client;
  const auto id = client.request("GET", "/stream/closed-early");
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.body, patterned(200'000));
}

TEST(Http2StreamChannelTest, AGoawayWhileAStreamIsOpenLetsItFinish) {
  Fixture f(echo);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo");
  client.send(id, "before ");
  f.pump(client);
  f.codec().shutdown_gracefully(*f.ch.pipeline().context("http2"));
  f.pump(client);
  ASSERT_TRUE(client.goaway_error().has_value());
  EXPECT_EQ(*client.goaway_error(), std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_FALSE(client.response(id).closed);
  client.send(id, "after");
  client.finish(id);
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.body, "before after");
  EXPECT_FALSE(f.ch.is_open()) << "the connection ends once the open stream has";
}

TEST(Http2StreamChannelTest, AClientGoawayWhileAStreamIsOpenLetsItFinish) {
  Fixture f(echo);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo");
  client.send(id, "one ");
  f.pump(client);
  nghttp2_submit_goaway(client.session(), NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
  client.send(id, "two");
  client.finish(id);
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.body, "one two");
}

TEST(Http2StreamChannelTest, WholeRequestsOnTheSameConnectionAreServedAsBefore) {
  Fixture f(echo);
  H2Client client;
  const auto streamed = client.request_streamed("POST", "/stream/echo");
  const auto get = client.request("GET", "/plaintext");
  // A body four times the stream's window: served whole, its windows are returned by the codec.
  const auto post = client.request("POST", "/echo", patterned(256 * 1024));
  client.send(streamed, "streamed");
  client.finish(streamed);
  f.pump(client);
  EXPECT_EQ(client.response(get).body, "Hello, World!");
  EXPECT_EQ(client.response(get).header("content-length"), "13");
  EXPECT_EQ(client.response(post).body, patterned(256 * 1024));
  EXPECT_EQ(client.response(streamed).body, "streamed");
  EXPECT_EQ(f.children.size(), 1u) << "only the chosen stream is a channel";
  EXPECT_EQ(client.error(), 0);
}

TEST(Http2StreamChannelTest, AWholeResponseWrittenOnAStreamChannelEndsIt) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamHeaders>(message)) ctx.write(HttpResponse(404).body("no such stream"));
    };
  });
  H2Client client;
  const auto id = client.request("GET", "/stream/missing");
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.body, "no such stream");
  EXPECT_EQ(response.header("content-length"), "14");
}

// A stream channel's memory is kept for the next stream on the thread once the channel is freed
// (glibc's 64-byte-aligned allocation was 4% of a unary gRPC call): the next stream's channel is made
// in the same block.
TEST(Http2StreamChannelTest, AFreedStreamChannelsMemoryServesTheNextStream) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamHeaders>(message)) ctx.write(HttpResponse(200).body("ok"));
    };
  });
  H2Client client;
  const auto first = client.request("GET", "/stream/1");
  f.pump(client);
  ASSERT_TRUE(client.response(first).closed);
  ASSERT_EQ(f.children.size(), 1u);
  const void* block = f.children[0].get();
  f.children.clear();
  f.recorders.clear();
  f.ch.run_pending();
  const auto second = client.request("GET", "/stream/2");
  f.pump(client);
  ASSERT_TRUE(client.response(second).closed);
  EXPECT_EQ(client.response(second).body, "ok");
  ASSERT_EQ(f.children.size(), 1u);
  EXPECT_EQ(f.children[0].get(), block);
}

TEST(Http2StreamChannelTest, WritingDataBeforeTheHeadIsAnError) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (!std::holds_alternative<StreamHeaders>(message)) return;
      ctx.write(StreamData{ByteBuf::copy_of("x"), false});  // fails: an exception event
      ctx.write(HttpResponse(500));
    };
  });
  H2Client client;
  const auto id = client.request("GET", "/stream/x");
  f.pump(client);
  const std::string& error = f.recorders.at(0)->other_error;
  EXPECT_NE(error.find("before ResponseHeaders"), std::string::npos) << error;
  EXPECT_EQ(client.response(id).status, 500);
}

TEST(Http2StreamChannelTest, ServeRunsACoroutineOnAStream) {
  Fixture f([](StreamChannel& ch, Recorder&) {
    weft::serve<StreamMessage>(ch, [](Connection<StreamMessage>& c) -> Task<> {
      StreamMessage first = co_await c.read();
      const std::string path(std::get<StreamHeaders>(first).request.path());
      // (Messages are built before co_await: GCC 12 mishandles aggregate temporaries in co_await.)
      ResponseHeaders head{HttpResponse(200).header("X-Path", path), false};
      co_await c.write(std::move(head));
      std::size_t total = 0;
      for (;;) {
        StreamMessage m = co_await c.read();
        auto* d = std::get_if<StreamData>(&m);
        if (d == nullptr) break;  // trailers
        total += d->data.readable_bytes();
        const bool end = d->end_stream;
        StreamData echo{std::move(d->data), false};
        co_await c.write(std::move(echo));
        c.flush();
        if (end) break;
      }
      StreamTrailers trailers{Fields().add("x-total", std::to_string(total))};
      co_await c.write(std::move(trailers));
      c.flush();
    });  // returns: the channel closes, its response already ended
  }, {}, /*with_recorder=*/false);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/co");
  for (int i = 0; i < 4; ++i) {
    client.send(id, patterned(10'000, 10'000 * static_cast<std::size_t>(i)));
    f.pump(client);
  }
  client.finish(id);
  f.pump(client);
  const auto& response = client.response(id);
  ASSERT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(response.header("x-path"), "/stream/co");
  EXPECT_EQ(response.body, patterned(40'000));
  ASSERT_EQ(response.trailers.size(), 1u);
  EXPECT_EQ(response.trailers[0].second, "40000");
  EXPECT_FALSE(f.children.at(0)->is_open());
}

// A server stream written from a loop task (no read on the stack), each message flushed as it is
// written: the codec sends once for the turn, not once per flush (a syscall per message before).
TEST(Http2StreamChannelTest, FlushesOutsideAReadLeaveInOneSendPerLoopTurn) {
  Fixture f([](StreamChannel&, Recorder& r) {
    r.on_message = [](Context& ctx, StreamMessage& message) {
      if (std::holds_alternative<StreamHeaders>(message)) ctx.write(ResponseHeaders{HttpResponse(200), false});
    };
  });
  H2Client client;
  const auto id = client.request("GET", "/stream/server-stream");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  ASSERT_EQ(client.response(id).status, 200);
  StreamChannel& child = *f.children[0];
  constexpr int kMessages = 10;
  child.loop().execute([&child] {
    for (int i = 0; i < kMessages; ++i) {
      child.write(StreamData{ByteBuf::copy_of("message " + std::to_string(i) + ";"), i + 1 == kMessages});
      child.flush();
    }
  });
  f.ch.run_pending();
  std::string sent;
  int sends = 0;
  while (auto b = f.ch.read_outbound<ByteBuf>()) {
    sent += b->to_string();
    ++sends;
  }
  EXPECT_EQ(sends, 1) << "one send for the ten flushes of one turn";
  client.receive(sent);
  std::string expected;
  for (int i = 0; i < kMessages; ++i) expected += "message " + std::to_string(i) + ";";
  EXPECT_EQ(client.response(id).body, expected);
  EXPECT_TRUE(client.response(id).closed);
  EXPECT_EQ(client.error(), 0);
}

TEST(Http2StreamChannelTest, TheClientsFinResetsAStreamWhoseRequestCanNoLongerEnd) {
  Fixture f(echo);
  H2Client client;
  const auto open = client.request_streamed("POST", "/stream/echo");
  client.send(open, "half");
  f.pump(client);
  ASSERT_EQ(f.recorders.size(), 1u);
  f.ch.pipeline().fire_user_event(ChannelInputShutdownEvent{});  // what the transport fires on FIN
  f.ch.run_pending();
  f.pump(client);
  Recorder& r = *f.recorders[0];
  ASSERT_TRUE(r.reset_code.has_value());
  EXPECT_EQ(*r.reset_code, std::uint32_t{NGHTTP2_CANCEL});
  EXPECT_TRUE(r.inactive);
  EXPECT_EQ(client.response(open).close_error, std::uint32_t{NGHTTP2_CANCEL});
  EXPECT_TRUE(client.goaway_error().has_value());
}

TEST(Http2StreamChannelTest, TheConnectionsCloseClosesItsStreamChannels) {
  Fixture f(echo);
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/echo");
  client.send(id, "x");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  EXPECT_TRUE(f.children[0]->is_open());
  f.ch.close();
  f.ch.run_pending();
  EXPECT_FALSE(f.children[0]->is_open());
  EXPECT_TRUE(f.recorders[0]->inactive);
  // A write to it now is dropped, not a crash.
  f.children[0]->write_and_flush(StreamData{ByteBuf::copy_of("late"), true});
  f.ch.run_pending();
}

// Closes the channel from inside a write of a large ByteBuf, as TLS does when encrypt fails (or a
// handler does on the writability change the write causes); the write is dropped.
class CloseOnLargeWriteForStreams final : public OutboundHandler<ByteBuf> {
 public:
  void write(Context& ctx, ByteBuf&& bytes) override {
    if (bytes.readable_bytes() >= 8192) {
      ++closes;
      ctx.channel().close();
      return;
    }
    ctx.write(std::move(bytes));
  }
  int closes = 0;
};

// The close runs channel_inactive (which detaches the children) inside the session's send, while
// the codec frames a child's DATA from the child's queued chunks: the frame must not go on with a
// queue emptied under it (the child's counts stay whole: nothing queued, nothing owed).
TEST(Http2StreamChannelTest, AConnectionClosedWhileAChildsDataIsFramedDetachesTheChildCleanly) {
  Producer p{.total = 1 << 20, .chunk = 16384};  // more than the client's window: the stream stays open
  Fixture f([&p](StreamChannel& ch, Recorder& r) { produce_on_headers(ch, r, p); });
  auto closer = std::make_shared<CloseOnLargeWriteForStreams>();
  f.ch.pipeline().add_first("closer", closer);
  H2Client client;
  client.request("GET", "/stream/download");
  f.pump(client);
  f.ch.run_pending();
  EXPECT_GE(closer->closes, 1) << "a DATA payload was written by reference";
  EXPECT_FALSE(f.ch.is_open());
  ASSERT_EQ(f.children.size(), 1u);
  StreamChannel& child = *f.children[0];
  EXPECT_FALSE(child.is_open());
  EXPECT_TRUE(f.recorders[0]->inactive);
  EXPECT_EQ(child.queued_outbound_bytes(), 0u) << "the frame was taken from a detached child's emptied queue";
}

// Children that do not read, each sent its window in 8 KiB DATA frames that arrive one per 64 KiB
// read buffer (the worst case for slices of the input): what they keep alive, as the allocator
// counts it, is about their windows, not a read buffer per frame.
TEST(Http2StreamChannelTest, ChildrenThatDoNotReadPinAboutTheirWindowsNotAReadBufferPerFrame) {
  constexpr std::size_t kStreams = 20, kFrames = 7, kFrame = 8192, kReadBuffer = 64 * 1024;
  test::CountingAllocator counting;
  std::vector<std::shared_ptr<StreamChannel>> idle;
  Settings settings;
  ASSERT_LE(kFrames * kFrame, settings.initial_window_size);
  settings.stream_initializer = [&idle](const http::RequestHead&) -> StreamInitializer {
    return [&idle](StreamChannel& ch) {
      ch.config().auto_read = false;
      idle.push_back(std::static_pointer_cast<StreamChannel>(ch.shared_from_this()));
    };
  };
  EmbeddedChannel ch(ChannelConfig{}, counting);
  ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
  auto feed = [&](std::string_view bytes) {
    ByteBuf buf = counting.buffer(std::max(bytes.size(), kReadBuffer));
    buf.write_bytes(bytes.data(), bytes.size());
    ch.write_inbound(std::move(buf));
    while (ch.read_outbound<ByteBuf>()) {
    }
  };
  feed(test::raw_preface());
  for (std::uint32_t i = 0; i < kStreams; ++i) {
    feed(test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1 + 2 * i, test::request_block("POST", "/stream/up")));
  }
  const std::string payload(kFrame, 'd');
  for (std::size_t f = 0; f < kFrames; ++f) {
    for (std::uint32_t i = 0; i < kStreams; ++i) feed(test::frame(NGHTTP2_DATA, 0, 1 + 2 * i, payload));
  }
  ch.run_pending();
  ASSERT_EQ(idle.size(), kStreams);
  std::size_t held = 0;
  for (const auto& child : idle) held += child->buffered_inbound_bytes();
  EXPECT_EQ(held, kStreams * kFrames * kFrame) << "every payload is held for its child";
  // Each child: its window, plus the one read buffer its first slice keeps.
  EXPECT_LE(counting.live_bytes(), kStreams * (settings.initial_window_size + kReadBuffer))
      << "held " << held << " bytes";
  // Read, the children's chunks are what they were sent.
  idle[0]->pipeline().add_last("take", std::make_shared<Recorder>());
  idle[0]->read();
  ch.run_pending();
  EXPECT_EQ(idle[0]->pipeline().get_as<Recorder>("take")->body, std::string(kFrames * kFrame, 'd'));
  ch.close();
  ch.run_pending();
  idle.clear();
}

// ---- a loop that has terminated: no later turn comes (LoopCallback::schedule refuses)

// A child that finishes its stream its own way when the loop shuts down (as a response still being
// written may): Channel::end_for_shutdown_itself, so that the shutdown does not reset it.
class EndsItselfAtShutdown final : public InboundHandler<StreamMessage> {
 public:
  void channel_read(Context& ctx, StreamMessage&& message) override { ctx.fire_read(std::move(message)); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) ctx.channel().end_for_shutdown_itself();
    ctx.fire_user_event(event);
  }
};

void ends_itself_at_shutdown(StreamChannel& ch) {
  ch.pipeline().add_first("ends-itself", std::make_shared<EndsItselfAtShutdown>());
}

// The loop's shutdown on an open stream whose child ends itself: GOAWAY, and the connection stays
// for the stream owed (a manual-clock loop terminates at once; a running one closes what is left at
// its deadline first).
void terminate_the_loop(Fixture& f, H2Client& client) {
  ASSERT_TRUE(f.ch.loop().shutdown_gracefully(0ms, 0ms).is_done());
  ASSERT_TRUE(f.ch.loop().is_terminated());
  client.receive(f.output());
  ASSERT_TRUE(client.goaway_error().has_value());
  ASSERT_TRUE(f.ch.is_open()) << "the stream owed keeps the connection";
}

// What a child writes and flushes outside a read would leave from the loop's next turn
// (ServerCodec::post_flush): with none left it leaves at once. The work the send makes for the
// children (their framed bytes, the stream's end) cannot be handed to them nested in the writer's
// call nor later (post_children): it is given up, and the connection, its last stream answered
// after GOAWAY, closes and closes the children with it.
TEST(Http2StreamChannelTest, OnATerminatedLoopAFlushLeavesAtOnceAndTheConnectionThenEnds) {
  Fixture f([](StreamChannel& ch, Recorder&) { ends_itself_at_shutdown(ch); });
  H2Client client;
  const auto id = client.request("GET", "/stream/late");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  terminate_the_loop(f, client);
  StreamChannel& child = *f.children[0];
  const std::vector<std::string> before = f.recorders[0]->events;
  child.write(ResponseHeaders{HttpResponse(200), false});
  child.write(StreamData{ByteBuf::copy_of("after the loop"), true});
  EXPECT_NO_THROW(child.flush());
  EXPECT_EQ(f.recorders[0]->events, before) << "nothing is handed to the child nested in its flush";
  client.receive(f.output());
  EXPECT_EQ(client.response(id).status, 200);
  EXPECT_EQ(client.response(id).body, "after the loop");
  EXPECT_TRUE(client.response(id).closed);
  EXPECT_EQ(client.response(id).close_error, 0u);
  EXPECT_FALSE(f.ch.is_open()) << "GOAWAY sent and nothing owed: the connection ends";
  EXPECT_FALSE(child.is_open());
  EXPECT_TRUE(f.recorders[0]->inactive);
}

// A child that asks to read outside the codec's loop over its children would be delivered to from
// the loop's next turn (StreamChannel::post_delivery): with none left, what is held is not
// delivered (nor nested in the read() call), and the channel's close still closes the child.
TEST(Http2StreamChannelTest, OnATerminatedLoopAReadDeliversNothingAndTheCloseStillClosesTheChild) {
  Fixture f([](StreamChannel& ch, Recorder&) {
    ch.config().auto_read = false;
    ends_itself_at_shutdown(ch);
  });
  H2Client client;
  const auto id = client.request_streamed("POST", "/stream/upload");
  client.send(id, "held for the child");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  StreamChannel& child = *f.children[0];
  ASSERT_GT(child.buffered_inbound_bytes(), 0u);
  terminate_the_loop(f, client);
  EXPECT_NO_THROW(child.read());
  EXPECT_TRUE(f.recorders[0]->events.empty());
  EXPECT_EQ(f.ch.run_pending(), 0u);
  EXPECT_TRUE(f.recorders[0]->events.empty()) << "nothing runs after the loop's end";
  f.ch.close();
  EXPECT_FALSE(child.is_open());
  EXPECT_TRUE(f.recorders[0]->inactive);
}

// A coroutine on a stream (Connection<StreamMessage>, which holds its channel) whose loop ended
// before the stream did: the connection's close ends the stream, resumes the coroutine with
// ChannelClosedError, and frees the stream's channel, its handlers and the coroutine's state.
TEST(Http2StreamChannelTest, OnATerminatedLoopAStreamServedByACoroutineIsFreedWhenTheConnectionCloses) {
  std::vector<std::weak_ptr<Connection<StreamMessage>>> served;
  auto ended = std::make_shared<bool>(false);
  Fixture f(
      [&served, ended](StreamChannel& ch, Recorder&) {
        ends_itself_at_shutdown(ch);
        served.push_back(serve<StreamMessage>(ch, [ended](Connection<StreamMessage>& c) -> Task<> {
          try {
            for (;;) co_await c.read();
          } catch (const ChannelClosedError&) {
            *ended = true;
          }
        }));
      },
      {}, /*with_recorder=*/false);
  H2Client client;
  client.request_streamed("POST", "/stream/coroutine");
  f.pump(client);
  ASSERT_EQ(f.children.size(), 1u);
  terminate_the_loop(f, client);
  const std::weak_ptr<StreamChannel> child = f.children[0];
  f.children.clear();
  ASSERT_FALSE(child.expired()) << "the open stream keeps its channel";
  f.ch.close();
  EXPECT_TRUE(*ended);
  EXPECT_TRUE(served[0].expired()) << "the coroutine's connection is freed";
  EXPECT_TRUE(child.expired()) << "the stream's channel is freed";
}

}  // namespace
}  // namespace weft::http2
