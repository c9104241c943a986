// client::HttpClient's idle timeout on an HTTP/2 whole answer, on every transport: a stream whose
// server never answers fails with TimeoutError idle and is reset, while another stream on the same
// connection is answered and the connection serves the next request.

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

WEFT_ON_EVERY_TRANSPORT(Http2StreamIdleTest);

}  // namespace weft::h2_stream_idle_test
