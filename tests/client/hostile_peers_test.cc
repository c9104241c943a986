// client::HttpClient against careless servers on every transport: an answer written a byte at a
// time, a server that never reads a large upload (the request timeout ends it, the connection is
// not reused), and a malformed answer (typed, the connection not reused).

#include <gtest/gtest.h>

#include "client/origin_servers.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;

class ClientHostilePeerTest : public test::ClientTest {};

TEST_P(ClientHostilePeerTest, AnswerOneByteAtATime) {
  ChannelPtr server = test::serve_raw(servers_, [](Context& ctx, int) {
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello";
    for (char c : answer) ctx.write_and_flush(ByteBuf::copy_of(std::string_view(&c, 1)));
  });
  HttpClient client(clients_);
  const std::string url = test::url_of(server, "http", "/");
  for (int i = 0; i < 3; ++i) {
    auto f = client.get(url);
    const http::HttpClientResponse& r = test::answer_of(f);
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.header("x-a").value_or(""), "b");
    EXPECT_EQ(r.body_view(), "hello");
  }
}

TEST_P(ClientHostilePeerTest, ServerThatNeverReadsAnUpload) {
  ChannelPtr server = ServerBootstrap()
                          .group(servers_)
                          .child_handler([](Channel& ch) { ch.config().auto_read = false; })
                          .bind(SocketAddress::loopback(0))
                          .get();
  ClientOptions options;
  options.request_timeout = std::chrono::milliseconds(200);
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/upload");
  auto f = client.request("POST", url, ByteBuf::copy_of(std::string(16 << 20, 'u')));
  EXPECT_EQ(test::timeout_kind(f), client::TimeoutError::Kind::request);
  EXPECT_EQ(test::timeout_kind(client.request("POST", url, ByteBuf::copy_of("small"))),
            client::TimeoutError::Kind::request);
  EXPECT_EQ(client.stats().connections_reused, 0u);
}

TEST_P(ClientHostilePeerTest, MalformedAnswerFailsTypedAndTheConnectionGoes) {
  ChannelPtr server = test::serve_raw(
      servers_, [](Context& ctx, int) { ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 2x0 Nope\r\n\r\n")); });
  HttpClient client(clients_);
  const std::string url = test::url_of(server, "http", "/");
  test::failure_of<http::HttpProtocolError>(client.get(url));
  test::failure_of<http::HttpProtocolError>(client.get(url));
  EXPECT_EQ(client.stats().connections_reused, 0u);
  EXPECT_EQ(client.stats().retries, 0u);
}

WEFT_ON_EVERY_TRANSPORT(ClientHostilePeerTest);

}  // namespace
}  // namespace weft
