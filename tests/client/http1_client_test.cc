// client::HttpClient over HTTP/1.1 on every transport: 1,000 URLs 16 at a time against a server
// that closes after every answer and against keep-alive; the retry of a request whose keep-alive
// connection the server dropped unanswered; the coroutine, future and foreign-thread forms.

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <stdexcept>
#include <thread>

#include "client/origin_servers.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using test::OriginKind;

class Http1ClientTest : public test::ClientTest {
 protected:
  // Fetches `url` `total` times, `window` at a time, from this thread; every answer must be "hello".
  void fetch_many(HttpClient& client, const std::string& url, int total, int window) {
    std::deque<Future<http::HttpClientResponse>> in_flight;
    int ok = 0;
    for (int i = 0; i < total || !in_flight.empty();) {
      if (i < total && in_flight.size() < static_cast<std::size_t>(window)) {
        in_flight.push_back(client.get(url));
        ++i;
        continue;
      }
      const http::HttpClientResponse& r = test::answer_of(in_flight.front());
      EXPECT_EQ(r.status(), 200);
      EXPECT_EQ(r.body_view(), "hello");
      ok += r.status() == 200 ? 1 : 0;
      in_flight.pop_front();
    }
    EXPECT_EQ(ok, total);
  }
};

TEST_P(Http1ClientTest, ServerThatClosesAfterEveryAnswer) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1_closing, accepted_);
  ClientOptions options;
  options.max_connections_per_origin = 16;
  HttpClient client(clients_, options);
  fetch_many(client, test::url_of(server, "http", "/hello"), 1000, 16);
  const client::ClientStats stats = client.stats();
  EXPECT_EQ(stats.connections_reused, 0u);     // a connection that said close is never handed out again
  EXPECT_GE(stats.connections_opened, 1000u);  // one per request: the reconnects
  EXPECT_EQ(stats.connections_opened - stats.connect_failures, static_cast<std::uint64_t>(accepted_->load()));
}

TEST_P(Http1ClientTest, KeepAliveReusesConnections) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ClientOptions options;
  options.max_connections_per_origin = 16;
  HttpClient client(clients_, options);
  fetch_many(client, test::url_of(server, "http", "/hello"), 1000, 16);
  const client::ClientStats stats = client.stats();
  // At most 16 per loop's pool: the client's loops each keep their own.
  EXPECT_LE(stats.connections_opened, 16u * clients_.size());
  EXPECT_GE(stats.connections_reused, 1000u - stats.connections_opened);
  EXPECT_EQ(stats.retries, 0u);
}

TEST_P(Http1ClientTest, PostsABodyAndReadsItBack) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  HttpClient client(clients_);
  const std::string body(100'000, 'b');
  auto f = client.request("POST", test::url_of(server, "http", "/echo"), ByteBuf::copy_of(body));
  EXPECT_EQ(test::answer_of(f).body_view(), body);
  http::HttpClientRequest request("POST", test::url_of(server, "http", "/echo"));
  request.header("X-Test", "1").body(ByteBuf::copy_of("abc"));
  EXPECT_EQ(test::answer_of(client.request(std::move(request))).body_view(), "abc");
}

// The value of `f` once it completes (moved out: StreamedResponse is move-only).
template <class T>
T taken(const Future<T>& f) {
  if (!f.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no answer within 60 s");
  return f.take();
}

// A request whose target is origin-form goes to the origin it is given (its path is not used):
// whole, streamed and uploaded; an absolute-form target fails typed, before anything is sent.
TEST_P(Http1ClientTest, ARequestGoesToTheOriginItIsGiven) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  HttpClient client(clients_);
  const client::Url origin = client::Url::parse(test::url_of(server, "http", "/not-this-path"));
  http::HttpClientRequest post("POST", "/echo");
  post.header("X-Test", "1").body(ByteBuf::copy_of("abc"));
  EXPECT_EQ(test::answer_of(client.request(origin, std::move(post))).body_view(), "abc");

  client::StreamedResponse streamed = taken(client.stream(origin, http::HttpClientRequest("GET", "/hello")));
  EXPECT_EQ(streamed.head.status(), 200);
  std::string body;
  while (std::optional<ByteBuf> chunk = taken(streamed.body.next())) body += chunk->to_string();
  EXPECT_EQ(body, "hello");

  client::Upload up = client.upload(origin, http::HttpClientRequest("POST", "/echo"), 2);
  up.body.write(ByteBuf::copy_of("hi")).get();
  up.body.finish().get();
  client::StreamedResponse echoed = taken(up.response);
  std::string echoed_body;
  while (std::optional<ByteBuf> chunk = taken(echoed.body.next())) echoed_body += chunk->to_string();
  EXPECT_EQ(echoed_body, "hi");

  EXPECT_THROW(client.request(origin, http::HttpClientRequest("GET", "http://other/x")).get(), client::UrlError);
  EXPECT_THROW(taken(client.stream(origin, http::HttpClientRequest("GET", "/a b"))), client::UrlError);
}

// Requests by parsed URLs from the caller's loop, alternating between two origins: each answer's
// body ("hello", or the body echoed), counted when it is right.
Task<int> alternate(HttpClient& client, client::Url hello_a, client::Url echo_b) {
  int right = 0;
  for (int i = 0; i < 4; ++i) {
    http::HttpClientResponse a = co_await client.get(hello_a);
    const std::string body = "round " + std::to_string(i);
    http::HttpClientResponse b = co_await client.request("POST", echo_b, ByteBuf::copy_of(body));
    right += (a.body_view() == "hello" ? 1 : 0) + (b.body_view() == body ? 1 : 0);
  }
  co_return right;
}

// A Url parsed once serves many requests (get and request), each on its own origin's connections:
// from one loop, requests alternate between two servers that differ by their port only.
TEST_P(Http1ClientTest, AParsedUrlIsRequestedManyTimesOnItsOwnOrigin) {
  auto accepted_b = std::make_shared<std::atomic<int>>(0);
  ChannelPtr a = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ChannelPtr b = test::serve_origin(servers_, OriginKind::http1, accepted_b);
  HttpClient client(clients_);
  const client::Url hello_a = client::Url::parse(test::url_of(a, "http", "/hello"));
  const client::Url echo_b = client::Url::parse(test::url_of(b, "http", "/echo"));
  EXPECT_EQ(spawn(clients_.at(0), alternate(client, hello_a, echo_b)).get(), 8);
  EXPECT_GE(accepted_->load(), 1);
  EXPECT_GE(accepted_b->load(), 1);  // b's requests went to b's own pool
}

// Completes `to` with what `from` ends with (the response moved: it is move-only).
void forward(const Future<http::HttpClientResponse>& from, Promise<http::HttpClientResponse> to) {
  from.add_listener([to](const Future<http::HttpClientResponse>& f) mutable {
    if (f.error()) {
      to.set_error(f.error());
    } else {
      to.set_value(f.take());
    }
  });
}

// The server answers the first request of a connection and drops the connection at the second:
// a keep-alive connection closed under a request, before any byte of its answer.
ChannelPtr serve_dropping_second(EventLoopGroup& group) {
  return test::serve_raw(group, [](Context& ctx, int n) {
    if (n == 1) {
      ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    } else {
      ctx.channel().close();
    }
  });
}

TEST_P(Http1ClientTest, IdempotentRequestDroppedOnAKeepAliveConnectionIsRetriedOnAFreshOne) {
  ChannelPtr server = serve_dropping_second(servers_);
  ClientOptions options;
  options.max_connections_per_origin = 1;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/x");
  // From one loop, so that both requests share its pool.
  Promise<http::HttpClientResponse> second;
  clients_.at(0).execute([&] {
    client.get(url).add_listener([&](const Future<http::HttpClientResponse>& first) {
      EXPECT_EQ(first.get().status(), 200);
      forward(client.get(url), second);
    });
  });
  Future<http::HttpClientResponse> answer = second.future();
  ASSERT_TRUE(answer.wait_for(std::chrono::seconds(60)));
  const http::HttpClientResponse& r = test::answer_of(answer);
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body_view(), "ok");
  EXPECT_EQ(client.stats().retries, 1u);
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

TEST_P(Http1ClientTest, NonIdempotentRequestDroppedIsNotRetried) {
  ChannelPtr server = serve_dropping_second(servers_);
  ClientOptions options;
  options.max_connections_per_origin = 1;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/x");
  Promise<http::HttpClientResponse> second;
  clients_.at(0).execute([&] {
    client.get(url).add_listener([&](const Future<http::HttpClientResponse>&) {
      forward(client.request("POST", url, ByteBuf::copy_of("once")), second);
    });
  });
  Future<http::HttpClientResponse> answer = second.future();
  ASSERT_TRUE(answer.wait_for(std::chrono::seconds(60)));
  test::failure_of<ChannelClosedError>(answer);
  EXPECT_EQ(client.stats().retries, 0u);
}

Task<int> fetch_status(HttpClient& client, std::string url) {
  http::HttpClientResponse r = co_await client.get(url);
  co_return r.status();
}

TEST_P(Http1ClientTest, CoroutineFormAndAnswersOnTheCallersLoop) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  HttpClient client(clients_);
  const std::string url = test::url_of(server, "http", "/hello");
  EXPECT_EQ(spawn(clients_.at(0), fetch_status(client, url)).get(), 200);
  // A caller on a loop outside the client's group still hears the answer there.
  EventLoopGroup callers(transport(), 1);
  Promise<bool> on_callers_loop;
  callers.at(0).execute([&] {
    client.get(url).add_listener([&](const Future<http::HttpClientResponse>& f) {
      on_callers_loop.set_value(callers.at(0).in_loop() && f.is_success());
    });
  });
  EXPECT_TRUE(on_callers_loop.future().get());
}

TEST_P(Http1ClientTest, RequestsFromManyForeignThreads) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  HttpClient client(clients_);
  const std::string url = test::url_of(server, "http", "/hello");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) ok += test::answer_of(client.get(url)).status() == 200 ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
}

TEST_P(Http1ClientTest, BadUrlsAndUnreachableHostsFailTyped) {
  HttpClient client(clients_);
  EXPECT_NE(test::failure_of<client::UrlError>(client.get("ftp://127.0.0.1/")).find("scheme"), std::string::npos);
  // (Names that do not resolve: name_resolution_test.cc.)
  // A port nothing listens on (the server's, closed).
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  const std::string url = test::url_of(server, "http", "/hello");
  server->close().get();
  test::failure_of<IoError>(client.get(url));
}

TEST_P(Http1ClientTest, CloseFailsWhatWaitsAndWhatComesAfter) {
  ChannelPtr silent = test::serve_raw(servers_, [](Context&, int) {});
  HttpClient client(clients_);
  auto waiting = client.get(test::url_of(silent, "http", "/"));
  client.close().get();
  test::failure_of<client::ClientClosedError>(waiting);
  test::failure_of<client::ClientClosedError>(client.get(test::url_of(silent, "http", "/")));
}

WEFT_ON_EVERY_TRANSPORT(Http1ClientTest);

}  // namespace
}  // namespace weft
