// client::HttpClient reaching origins by name, on every transport: names served by a real DNS
// server (dnsmasq on 127.0.0.1 with the test's records) and by a hosts file; an unknown name; a name
// with an AAAA record whose address drops the SYNs and an A record that listens (Happy Eyeballs);
// a DNS server that never answers (under the connect timeout, and under the resolver's own);
// close() while a resolution is in flight; IP literals connected to without any query.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "client/origin_servers.h"
#include "support/dns_servers.h"
#include "weft/dns/dns_error.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using test::OriginKind;

bool have_ipv6_loopback() {
  test::TestListener probe("::1", 1);
  return probe.ok();
}

// An HTTP/1.1 origin (origin_routes) on `address`; null when the address is taken.
ChannelPtr serve_http1_on(EventLoopGroup& group, const SocketAddress& address) {
  auto router = test::origin_routes(false);
  Future<ChannelPtr> bound = ServerBootstrap()
                                 .group(group)
                                 .child_handler([router](Channel& ch) {
                                   ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>());
                                   ch.pipeline().add_last("router", router);
                                 })
                                 .bind(address);
  bound.wait();
  return bound.error() ? nullptr : bound.get();
}

class NameResolutionTest : public test::ClientTest {
 protected:
  void SetUp() override {
    WEFT_REQUIRE_DNSMASQ();
    ASSERT_TRUE(dns_.start(
        {"--local-ttl=300", "--host-record=origin.weft.test,127.0.0.1", "--host-record=both.weft.test,127.0.0.1,::1"}));
  }
  // Options whose resolver asks dnsmasq only (no hosts file, no search domains).
  ClientOptions options() const {
    ClientOptions o;
    o.resolver.servers = {dns_.address()};
    o.resolver.hosts_file = "";
    o.resolver.search_domains = false;
    return o;
  }
  static std::string url(const std::string& host, std::uint16_t port, const std::string& path) {
    return "http://" + host + ":" + std::to_string(port) + path;
  }

  test::Dnsmasq dns_;
};

TEST_P(NameResolutionTest, FetchesByName) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  const std::uint16_t port = server->local_address().port();
  HttpClient client(clients_, options());
  for (int i = 0; i < 4; ++i) {
    auto f = client.get(url("origin.weft.test", port, "/hello"));
    const http::HttpClientResponse& r = test::answer_of(f);
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body_view(), "hello");
  }
  EXPECT_GE(dns_.queries_logged("origin.weft.test"), 1);  // asked DNS (not a hosts file)
  // A redirect to the same origin by name, and a POST with a body.
  ClientOptions follow = options();
  follow.follow_redirects = true;
  HttpClient redirected(clients_, follow);
  EXPECT_EQ(test::answer_of(redirected.get(url("origin.weft.test", port, "/r/2"))).body_view(), "done");
}

TEST_P(NameResolutionTest, UnknownNameFailsWithHostResolutionError) {
  HttpClient client(clients_, options());
  const client::HostResolutionError* error = nullptr;
  auto f = client.get("http://missing.weft.test:8080/");
  const std::string what = test::failure_of<client::HostResolutionError>(f, &error);
  EXPECT_NE(what.find("missing.weft.test"), std::string::npos) << what;
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->host(), "missing.weft.test");
  EXPECT_EQ(error->code(), DnsErrorCode::not_found);
  ASSERT_TRUE(error->cause());
  try {
    std::rethrow_exception(error->cause());
  } catch (const DnsError& cause) {
    EXPECT_EQ(cause.code(), DnsErrorCode::not_found);
    EXPECT_EQ(cause.host(), "missing.weft.test");
  }
  // A name the URL accepts but DNS does not (a label over 63 bytes).
  const std::string long_label(64, 'a');
  test::failure_of<client::HostResolutionError>(client.get("http://" + long_label + ".weft.test/"));
  EXPECT_EQ(client.stats().connect_failures, 2u);
}

TEST_P(NameResolutionTest, HappyEyeballsFallsBackFromABlackholedFamily) {
  if (!have_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
  // both.weft.test has ::1 (tried first: IPv6 is preferred) and 127.0.0.1 on one port: ::1 drops
  // every SYN (a listener whose accept queue is full), 127.0.0.1 serves. Without Happy Eyeballs the
  // request would wait for the connect timeout (1 hour) on ::1.
  std::unique_ptr<test::TestListener> blackhole;
  ChannelPtr server;
  for (int attempt = 0; attempt < 20 && !server; ++attempt) {
    blackhole = std::make_unique<test::TestListener>("::1", 0);
    ASSERT_TRUE(blackhole->ok());
    server = serve_http1_on(servers_, SocketAddress::from("127.0.0.1", blackhole->port()));
  }
  ASSERT_TRUE(server) << "no port free on both ::1 and 127.0.0.1";
  ASSERT_TRUE(blackhole->fill_accept_queue());
  ClientOptions o = options();
  o.connect_timeout = std::chrono::hours(1);
  o.request_timeout = std::chrono::hours(1);
  o.connection_attempt_delay = std::chrono::milliseconds(20);
  HttpClient client(clients_, o);
  auto f = client.get(url("both.weft.test", blackhole->port(), "/hello"));
  const http::HttpClientResponse& r = test::answer_of(f);
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body_view(), "hello");
  EXPECT_EQ(client.stats().connect_failures, 0u);
}

TEST_P(NameResolutionTest, HappyEyeballsRaceBetweenListeningFamiliesHasOneWinner) {
  if (!have_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
  // Both addresses of both.weft.test serve, and both attempts start at once: each attempt's
  // pipeline is set up, the loser's is closed, and the connection is the winner's alone (neither
  // its readiness nor its close reaches the pool).
  ChannelPtr v4, v6;
  for (int attempt = 0; attempt < 20 && !v6; ++attempt) {
    v4 = test::serve_origin(servers_, OriginKind::http1, accepted_);
    v6 = serve_http1_on(servers_, SocketAddress::from("::1", v4->local_address().port()));
    if (!v6) v4->close().get();
  }
  ASSERT_TRUE(v6) << "no port free on both ::1 and 127.0.0.1";
  for (bool h2c : {false, true}) {
    ChannelPtr h2_v4, h2_v6;
    if (h2c) {
      for (int attempt = 0; attempt < 20 && !h2_v6; ++attempt) {
        h2_v4 = test::serve_origin(servers_, OriginKind::h2c, accepted_);
        auto router = test::origin_routes(false);
        Future<ChannelPtr> bound = ServerBootstrap()
                                       .group(servers_)
                                       .child_handler([router](Channel& ch) {
                                         ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>());
                                         ch.pipeline().add_last("router", router);
                                       })
                                       .bind(SocketAddress::from("::1", h2_v4->local_address().port()));
        bound.wait();
        if (bound.error()) {
          h2_v4->close().get();
        } else {
          h2_v6 = bound.get();
        }
      }
      ASSERT_TRUE(h2_v6);
    }
    const std::uint16_t port = h2c ? h2_v4->local_address().port() : v4->local_address().port();
    for (int i = 0; i < 10; ++i) {
      ClientOptions o = options();
      o.connection_attempt_delay = Duration::zero();
      o.http2_prior_knowledge = h2c;
      HttpClient client(clients_, o);
      auto f = client.get(url("both.weft.test", port, "/hello"));
      const http::HttpClientResponse& r = test::answer_of(f);
      EXPECT_EQ(r.status(), 200);
      EXPECT_EQ(r.body_view(), "hello");
      const client::ClientStats stats = client.stats();
      EXPECT_EQ(stats.connections_opened, 1u);
      EXPECT_EQ(stats.connect_failures, 0u);
      EXPECT_EQ(stats.retries, 0u);
    }
  }
}

TEST_P(NameResolutionTest, SilentDnsServerFailsWithTheConnectTimeout) {
  test::SilentServer silent;
  ClientOptions o = options();
  o.resolver.servers = {silent.address()};
  o.resolver.timeout = std::chrono::hours(1);
  o.connect_timeout = std::chrono::milliseconds(50);
  HttpClient client(clients_, o);
  auto f = client.get("http://origin.weft.test:8080/hello");
  EXPECT_EQ(test::timeout_kind(f), client::TimeoutError::Kind::connect);
}

TEST_P(NameResolutionTest, SilentDnsServerFailsWithTheResolverTimeout) {
  test::SilentServer silent;
  ClientOptions o = options();
  o.resolver.servers = {silent.address()};
  o.resolver.timeout = std::chrono::milliseconds(50);
  o.connect_timeout = std::chrono::hours(1);
  HttpClient client(clients_, o);
  const client::HostResolutionError* error = nullptr;
  auto f = client.get("http://origin.weft.test:8080/hello");
  test::failure_of<client::HostResolutionError>(f, &error);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), DnsErrorCode::timeout);
}

TEST_P(NameResolutionTest, CloseWhileResolvingFailsTheRequest) {
  // A DNS server that never answers, and tells when the first query came: the resolution is then
  // in flight, with no timeout to end it.
  Promise<void> asked;
  std::atomic<bool> told{false};
  test::ScriptedDnsServer quiet([&](std::string) {
    if (!told.exchange(true)) asked.set_value();
    return std::string();
  });
  ClientOptions o = options();
  o.resolver.servers = {quiet.address()};
  o.resolver.timeout = std::chrono::hours(1);
  o.connect_timeout = Duration::zero();
  o.request_timeout = Duration::zero();
  HttpClient client(clients_, o);
  auto f = client.get("http://origin.weft.test:8080/hello");
  asked.future().get();
  client.close().get();
  test::failure_of<client::ClientClosedError>(f);
  test::failure_of<client::ClientClosedError>(client.get("http://origin.weft.test:8080/hello"));
}

TEST_P(NameResolutionTest, NamesFromTheHostsFile) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1, accepted_);
  const std::uint16_t port = server->local_address().port();
  const std::string hosts = ::testing::TempDir() + "weft-client-hosts-" + std::to_string(::getpid());
  {
    std::ofstream out(hosts);
    out << "127.0.0.1 web.hosts.test\n";
  }
  test::SilentServer silent;  // any DNS query would go unanswered (and the request time out)
  ClientOptions o = options();
  o.resolver.servers = {silent.address()};
  o.resolver.hosts_file = hosts;
  o.resolver.timeout = std::chrono::hours(1);
  o.connect_timeout = std::chrono::hours(1);
  HttpClient client(clients_, o);
  EXPECT_EQ(test::answer_of(client.get(url("web.hosts.test", port, "/hello"))).body_view(), "hello");
  // localhost is loopback (RFC 6761) though this file lacks it; ::1 refuses (its port held by a
  // socket that does not listen), 127.0.0.1 serves.
  test::TestListener refusing("::1", -1, port);
  if (have_ipv6_loopback() && !refusing.ok()) GTEST_SKIP() << "port " << port << " of ::1 is taken";
  EXPECT_EQ(test::answer_of(client.get(url("localhost", port, "/hello"))).body_view(), "hello");
  std::remove(hosts.c_str());
}

TEST_P(NameResolutionTest, IpLiteralsAreNotLookedUp) {
  test::SilentServer silent;  // a query would go unanswered: the request would time out
  ClientOptions o = options();
  o.resolver.servers = {silent.address()};
  o.resolver.timeout = std::chrono::hours(1);
  o.connect_timeout = std::chrono::hours(1);
  HttpClient client(clients_, o);
  ChannelPtr v4 = test::serve_origin(servers_, OriginKind::http1, accepted_);
  EXPECT_EQ(test::answer_of(client.get(url("127.0.0.1", v4->local_address().port(), "/hello"))).body_view(), "hello");
  if (!have_ipv6_loopback()) return;
  ChannelPtr v6 = serve_http1_on(servers_, SocketAddress::from("::1", 0));
  ASSERT_TRUE(v6);
  EXPECT_EQ(test::answer_of(client.get(url("[::1]", v6->local_address().port(), "/hello"))).body_view(), "hello");
}

WEFT_ON_EVERY_TRANSPORT(NameResolutionTest);

}  // namespace
}  // namespace weft
