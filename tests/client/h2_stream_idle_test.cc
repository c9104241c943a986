// client::HttpClient's idle timeout on HTTP/2 streams, on every transport: a stream whose server
// never answers fails with TimeoutError idle and is reset, while another stream on the same
// connection is answered and the connection serves the next request; a request held by the
// server's SETTINGS_MAX_CONCURRENT_STREAMS (a whole answer, an upload's waiting write) is not idle
// while it waits for a slot.

#include <gtest/gtest.h>

#include "client/origin_servers.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::h2_stream_idle_test {

using client::ClientOptions;
using client::HttpClient;

// GET /never: no answer, ever; GET /hello: "hello". h2c.
ChannelPtr serve_h2c(EventLoopGroup& group) {
  auto router = std::make_shared<http::Router>();
  router->get("/never", [](Context&, http::HttpRequest&) {});
  router->get("/hello", [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body("hello")); });
  return ServerBootstrap()
      .group(group)
      .child_handler([router](Channel& ch) {
        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>());
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

struct Pair {
  Future<http::HttpClientResponse> never;
  Future<http::HttpClientResponse> hello;
};

// Both requests from one loop, so that they share its pool (and its one HTTP/2 connection).
Task<Pair> both(HttpClient& client, std::string never, std::string hello) {
  Pair p{client.get(never), client.get(hello)};
  co_return p;
}
Task<http::HttpClientResponse> one(HttpClient& client, std::string url) { co_return co_await client.get(url); }

class Http2StreamIdleTest : public test::ClientTest {};

TEST_P(Http2StreamIdleTest, UnansweredStreamTimesOutIdleWhileTheConnectionServes) {
  ChannelPtr server = serve_h2c(servers_);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.idle_timeout = std::chrono::milliseconds(150);
  options.request_timeout = std::chrono::seconds(30);  // without the stream's idle timeout: this fires
  HttpClient client(clients_, options);
  Future<Pair> started = spawn(
      clients_.at(0), both(client, test::url_of(server, "http", "/never"), test::url_of(server, "http", "/hello")));
  ASSERT_TRUE(started.wait_for(std::chrono::seconds(60)));
  Pair p = started.take();
  EXPECT_EQ(test::answer_of(p.hello).body_view(), "hello");
  EXPECT_EQ(test::timeout_kind(p.never), client::TimeoutError::Kind::idle);
  // The connection goes on: the next request is a stream on it.
  Future<http::HttpClientResponse> next = spawn(clients_.at(0), one(client, test::url_of(server, "http", "/hello")));
  EXPECT_EQ(test::answer_of(next).body_view(), "hello");
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

constexpr Duration kIdle = std::chrono::milliseconds(100);

// SETTINGS_MAX_CONCURRENT_STREAMS 1. GET /slow: a streamed answer whose head comes at once and whose
// body ("slow", END_STREAM) comes 4 idle timeouts later; GET /hello: "hello"; POST /size: the
// body's size.
ChannelPtr serve_one_stream_at_a_time(EventLoopGroup& group) {
  class Slow final : public InboundHandler<http2::StreamMessage> {
   public:
    void channel_read(Context& ctx, http2::StreamMessage&& message) override {
      if (!std::holds_alternative<http2::StreamHeaders>(message)) return;
      ctx.write_and_flush(http2::ResponseHeaders{http::HttpResponse(200), false});
      ChannelPtr stream = ctx.channel().shared_from_this();
      stream->loop().schedule(4 * kIdle, [stream] {
        stream->write_and_flush(http2::StreamData{ByteBuf::copy_of("slow"), true});
      });
    }
  };
  auto router = std::make_shared<http::Router>();
  router->get("/hello", [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body("hello")); });
  router->post("/size", [](Context& ctx, http::HttpRequest& request) {
    ctx.write(http::HttpResponse(200).body(std::to_string(request.body_view().size())));
  });
  return ServerBootstrap()
      .group(group)
      .child_handler([router](Channel& ch) {
        http2::Settings settings;
        settings.max_concurrent_streams = 1;
        settings.stream_initializer = [](const http::RequestHead& head) -> http2::StreamInitializer {
          if (head.path != "/slow") return nullptr;
          return [](http2::StreamChannel& stream) { stream.pipeline().add_last("slow", std::make_shared<Slow>()); };
        };
        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// The slow stream first, then `next` from the same loop: it reaches the connection when the slow
// one's head has come (the pool gives a streamed request's slot back then), and waits there for the
// server's one slot until the slow body has ended.
struct Behind {
  Future<client::StreamedResponse> slow;
  Future<http::HttpClientResponse> hello;
  client::Upload upload;
};
Task<Behind> behind_slow(HttpClient& client, std::string slow, std::string next, bool upload) {
  Behind b;
  b.slow = client.stream("GET", slow);
  if (upload) {
    b.upload = client.upload("POST", next);
  } else {
    b.hello = client.get(next);
  }
  co_return b;
}

std::string failure_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "(not a std::exception)";
}

std::string body_of(client::StreamedResponse& r) {
  std::string out;
  for (;;) {
    Future<std::optional<ByteBuf>> chunk = r.body.next();
    if (!chunk.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no body within 60 s");
    std::optional<ByteBuf> bytes = chunk.take();
    if (!bytes) return out;
    out += bytes->view();
  }
}

TEST_P(Http2StreamIdleTest, RequestHeldByTheServersConcurrencyLimitIsNotIdle) {
  ChannelPtr server = serve_one_stream_at_a_time(servers_);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.idle_timeout = kIdle;
  options.request_timeout = std::chrono::seconds(30);
  options.max_connections_per_origin = 1;  // the next request waits for the slow one's connection
  // Two clients (a connection each, run side by side): a whole answer, and an upload, behind a slow stream.
  HttpClient whole(clients_, options);
  HttpClient uploads(clients_, options);
  const std::string slow = test::url_of(server, "http", "/slow");
  Future<Behind> a = spawn(clients_.at(0), behind_slow(whole, slow, test::url_of(server, "http", "/hello"), false));
  Future<Behind> b = spawn(clients_.at(0), behind_slow(uploads, slow, test::url_of(server, "http", "/size"), true));
  ASSERT_TRUE(a.wait_for(std::chrono::seconds(60)) && b.wait_for(std::chrono::seconds(60)));
  Behind held_get = a.take();
  Behind held_upload = b.take();
  // The upload's second chunk passes ClientSettings::max_buffered_upload: its write waits for the
  // stream to open, then for the window.
  const std::size_t piece = http2::ClientSettings{}.max_buffered_upload * 3 / 4;
  const ByteBuf chunk = ByteBuf::copy_of(std::string(piece, 'u'));
  for (int i = 0; i < 2; ++i) {
    Future<void> written = held_upload.upload.body.write(chunk.slice());
    ASSERT_TRUE(written.wait_for(std::chrono::seconds(60)));
    EXPECT_FALSE(written.error()) << "write " << i << ": " << failure_text(written.error());
  }
  Future<void> finished = held_upload.upload.body.finish();
  ASSERT_TRUE(finished.wait_for(std::chrono::seconds(60)));
  EXPECT_FALSE(finished.error());
  EXPECT_EQ(test::answer_of(held_get.hello).body_view(), "hello");
  ASSERT_TRUE(held_upload.upload.response.wait_for(std::chrono::seconds(60)));
  ASSERT_FALSE(held_upload.upload.response.error()) << failure_text(held_upload.upload.response.error());
  client::StreamedResponse sized = held_upload.upload.response.take();
  EXPECT_EQ(body_of(sized), std::to_string(2 * piece));
  for (Behind* held : {&held_get, &held_upload}) {
    ASSERT_TRUE(held->slow.wait_for(std::chrono::seconds(60)));
    client::StreamedResponse r = held->slow.take();
    EXPECT_EQ(body_of(r), "slow");
  }
  EXPECT_EQ(whole.stats().connections_opened, 1u);
  EXPECT_EQ(uploads.stats().connections_opened, 1u);
}

WEFT_ON_EVERY_TRANSPORT(Http2StreamIdleTest);

}  // namespace weft::h2_stream_idle_test
