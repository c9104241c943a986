// client::HttpClient's timeouts, redirects and body bound on every transport. Each timeout is
// provoked by a server that cannot meet it (it never answers, stops in the middle of a body, never
// finishes the TLS handshake), and the test asserts which one fired, not when.

#include <gtest/gtest.h>

#include "client/origin_servers.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using client::TimeoutError;
using test::OriginKind;

class ClientTimeoutTest : public test::ClientTest {};

TEST_P(ClientTimeoutTest, ConnectTimeoutWhenTheTlsHandshakeNeverEnds) {
  ChannelPtr silent = test::serve_raw(servers_, [](Context&, int) {});  // takes the ClientHello, says nothing
  ClientOptions options;
  options.connect_timeout = std::chrono::milliseconds(100);
  options.request_timeout = Duration::zero();
  HttpClient client(clients_, options);
  EXPECT_EQ(test::timeout_kind(client.get(test::url_of(silent, "https", "/"))), TimeoutError::Kind::connect);
}

TEST_P(ClientTimeoutTest, ConnectTimeoutWhenHttp2SettingsNeverCome) {
  ChannelPtr silent = test::serve_raw(servers_, [](Context&, int) {});
  ClientOptions options;
  options.connect_timeout = std::chrono::milliseconds(100);
  options.request_timeout = Duration::zero();
  options.http2_prior_knowledge = true;
  HttpClient client(clients_, options);
  EXPECT_EQ(test::timeout_kind(client.get(test::url_of(silent, "http", "/"))), TimeoutError::Kind::connect);
}

TEST_P(ClientTimeoutTest, RequestTimeoutWhenNoAnswerComes) {
  ChannelPtr silent = test::serve_raw(servers_, [](Context&, int) {});
  ClientOptions options;
  options.request_timeout = std::chrono::milliseconds(100);
  options.idle_timeout = Duration::zero();
  HttpClient client(clients_, options);
  const std::string url = test::url_of(silent, "http", "/");
  EXPECT_EQ(test::timeout_kind(client.get(url)), TimeoutError::Kind::request);
  // The connection that carried it is not handed out again: the next request opens another.
  EXPECT_EQ(test::timeout_kind(client.get(url)), TimeoutError::Kind::request);
  EXPECT_EQ(client.stats().connections_reused, 0u);
}

TEST_P(ClientTimeoutTest, IdleTimeoutWhenTheBodyStops) {
  ChannelPtr stalled = test::serve_raw(servers_, [](Context& ctx, int) {
    ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nthe first bytes"));
  });
  ClientOptions options;
  options.request_timeout = Duration::zero();
  options.idle_timeout = std::chrono::milliseconds(100);
  HttpClient client(clients_, options);
  // Its message names the request's URL, target included.
  const std::string url = test::url_of(stalled, "http", "/stalled/body?part=2");
  auto answer = client.get(url);
  ASSERT_EQ(test::timeout_kind(answer), TimeoutError::Kind::idle);
  try {
    std::rethrow_exception(answer.error());
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string_view(e.what()).find(url), std::string_view::npos) << e.what();
  }
}

TEST_P(ClientTimeoutTest, RedirectsFollowedUpToTheLimit) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  {
    HttpClient plain(clients_);  // not followed unless asked
    EXPECT_EQ(test::answer_of(plain.get(test::url_of(server, "http", "/r/1"))).status(), 302);
  }
  ClientOptions options;
  options.follow_redirects = true;
  options.max_redirects = 3;
  HttpClient client(clients_, options);
  auto followed = client.get(test::url_of(server, "http", "/r/3"));
  const http::HttpClientResponse& r = test::answer_of(followed);
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body_view(), "done");
  const std::string message =
      test::failure_of<client::TooManyRedirectsError>(client.get(test::url_of(server, "http", "/r/4")));
  EXPECT_NE(message.find("/r/1"), std::string::npos) << message;  // the last URL reached
  // 303 after a POST: GET the new location.
  auto see_other = client.request("POST", test::url_of(server, "http", "/see-other"), ByteBuf::copy_of("x"));
  EXPECT_EQ(test::answer_of(see_other).body_view(), "hello");
}

TEST_P(ClientTimeoutTest, BodyPastTheBoundFailsTyped) {
  ChannelPtr http1 = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ChannelPtr h2c = test::serve_origin(servers_, OriginKind::h2c, accepted_);
  ClientOptions options;
  options.max_response_body = 100'000;
  HttpClient client(clients_, options);
  test::failure_of<client::ResponseTooLargeError>(client.get(test::url_of(http1, "http", "/big")));
  EXPECT_EQ(test::answer_of(client.get(test::url_of(http1, "http", "/hello"))).body_view(), "hello");
  ClientOptions h2 = options;
  h2.http2_prior_knowledge = true;
  HttpClient h2_client(clients_, h2);
  test::failure_of<client::ResponseTooLargeError>(h2_client.get(test::url_of(h2c, "http", "/big")));
  EXPECT_EQ(test::answer_of(h2_client.get(test::url_of(h2c, "http", "/hello"))).body_view(), "hello");
}

WEFT_ON_EVERY_TRANSPORT(ClientTimeoutTest);

}  // namespace
}  // namespace weft
