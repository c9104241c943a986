// The connection pool on every transport: 64 requests at once to one origin never open more than
// max_connections_per_origin; past max_pending_requests a request fails with PoolQueueFullError at
// once; an idle connection is closed after idle_connection_timeout, an old one after
// max_connection_age; HTTP/2 streams fill a connection up to the server's limit before another opens.

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "client/origin_servers.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using test::OriginKind;

class ClientPoolTest : public test::ClientTest {
 protected:
  // `n` GETs of `url` issued in one task of the client's first loop (so one pool takes them all,
  // and nothing is answered while they are issued).
  std::vector<Future<http::HttpClientResponse>> burst(HttpClient& client, const std::string& url, int n) {
    std::vector<Future<http::HttpClientResponse>> answers;
    clients_.at(0).execute([&] {
      for (int i = 0; i < n; ++i) answers.push_back(client.get(url));
    });
    // The task above has run once a task posted after it has.
    Promise<void> after;
    clients_.at(0).execute([after]() mutable { after.set_value(); });
    after.future().get();
    return answers;
  }

  // Waits until the client holds `n` connections (they close on timers of their own).
  static bool wait_open_connections(const HttpClient& client, std::uint64_t n) {
    for (int i = 0; i < 6000 && client.stats().open_connections != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return client.stats().open_connections == n;
  }
};

TEST_P(ClientPoolTest, SixtyFourAtOnceNeverOpenMoreThanTheLimit) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ClientOptions options;
  options.max_connections_per_origin = 4;
  options.max_pending_requests = 64;
  HttpClient client(clients_, options);
  auto answers = burst(client, test::url_of(server, "http", "/hello"), 64);
  for (auto& f : answers) EXPECT_EQ(test::answer_of(f).body_view(), "hello");
  EXPECT_LE(client.stats().peak_connections, 4u);
  EXPECT_LE(accepted_->load(), 4);
  // Every request not carried by a connection's first is carried by a reused one.
  EXPECT_GE(client.stats().connections_reused, 64u - client.stats().connections_opened);
}

TEST_P(ClientPoolTest, QueueBoundRefusesWithATypedError) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ClientOptions options;
  options.max_connections_per_origin = 2;
  options.max_pending_requests = 10;
  HttpClient client(clients_, options);
  auto answers = burst(client, test::url_of(server, "http", "/hello"), 64);
  int ok = 0, refused = 0;
  for (auto& f : answers) {
    ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
    if (f.is_success()) {
      ++ok;
    } else {
      EXPECT_FALSE(test::failure_of<client::PoolQueueFullError>(f).empty());
      ++refused;
    }
  }
  // No connection is ready while the burst is issued: ten wait, the rest are refused.
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(refused, 54);
  EXPECT_EQ(client.stats().queue_full, 54u);
  EXPECT_LE(client.stats().peak_connections, 2u);
}

TEST_P(ClientPoolTest, IdleConnectionsAreClosedAndReplaced) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ClientOptions options;
  options.idle_connection_timeout = std::chrono::milliseconds(1);
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/hello");
  EXPECT_EQ(test::answer_of(client.get(url)).status(), 200);
  ASSERT_TRUE(wait_open_connections(client, 0));
  EXPECT_EQ(test::answer_of(client.get(url)).status(), 200);
  EXPECT_EQ(client.stats().connections_opened, 2u);
  EXPECT_EQ(client.stats().connections_reused, 0u);
}

TEST_P(ClientPoolTest, OldConnectionsAreNotReused) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  ClientOptions options;
  options.max_connection_age = std::chrono::milliseconds(1);
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/hello");
  EXPECT_EQ(test::answer_of(client.get(url)).status(), 200);
  ASSERT_TRUE(wait_open_connections(client, 0));
  EXPECT_EQ(test::answer_of(client.get(url)).status(), 200);
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

TEST_P(ClientPoolTest, Http2StreamsFillAConnectionUpToTheServersLimit) {
  http2::Settings settings;
  settings.max_concurrent_streams = 10;
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2c, accepted_, settings);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  options.max_connections_per_origin = 4;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/hello");
  // Ten fit on one connection.
  auto ten = burst(client, url, 10);
  for (auto& f : ten) {
    EXPECT_EQ(test::answer_of(f).body_view(), "hello");
    EXPECT_EQ(test::answer_of(f).version(), http::Version::http2);
  }
  EXPECT_EQ(client.stats().connections_opened, 1u);
  // Sixty-four need more connections, never more than the limit.
  auto many = burst(client, url, 64);
  for (auto& f : many) EXPECT_EQ(test::answer_of(f).body_view(), "hello");
  EXPECT_LE(client.stats().peak_connections, 4u);
  EXPECT_LE(accepted_->load(), 4);
}

WEFT_ON_EVERY_TRANSPORT(ClientPoolTest);

}  // namespace
}  // namespace weft
