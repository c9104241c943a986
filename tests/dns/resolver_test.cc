// The resolver against a real DNS server (dnsmasq) on every transport's loops: A, AAAA, both in the
// preferred order, NXDOMAIN, SERVFAIL, a server that never answers, the cache (positive, negative,
// the record's TTL), the hosts file first, numeric hosts without a query, shared queries, several
// loops at once, calls from other threads, and destruction with queries in flight.

#include "weft/dns/resolver.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "support/dns_servers.h"
#include "support/transports.h"
#include "weft/core/event_loop_group.h"
#include "weft/dns/dns_error.h"

namespace weft {
namespace {

using Addresses = std::vector<SocketAddress>;

std::vector<std::string> hosts_of(const Addresses& addresses) {
  std::vector<std::string> out;
  for (const SocketAddress& a : addresses) out.push_back(a.to_string());
  return out;
}

// What a failed resolution failed with; fails the test when it did not fail with DnsError.
DnsError dns_error_of(const Future<Addresses>& f) {
  f.wait();
  try {
    f.get();
  } catch (const DnsError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a DnsError: " << e.what();
  }
  ADD_FAILURE() << "resolved, not failed";
  return DnsError(DnsErrorCode::failure, "");
}

class ResolverTest : public test::TransportTest {
 protected:
  void SetUp() override { WEFT_REQUIRE_DNSMASQ(); }

  void start_server() {
    // Answers live 300 s (dnsmasq's default for its own records is 0: not to be cached), short's 0 s.
    ASSERT_TRUE(dns_.start(
        {"--local-ttl=300", "--host-record=a.weft.test,192.0.2.10", "--host-record=six.weft.test,2001:db8::6",
         "--host-record=both.weft.test,192.0.2.20,2001:db8::20", "--host-record=short.weft.test,192.0.2.30,0"}));
  }
  ResolverOptions options_for(const SocketAddress& server) const {
    ResolverOptions o;
    o.servers = {server};
    o.hosts_file = "";
    o.search_domains = false;
    return o;
  }
  // A resolver on `loop`, destroyed there at the end of the test.
  Resolver& make_resolver(EventLoop& loop, ResolverOptions options) {
    resolvers_.push_back(std::make_unique<Resolver>(loop, std::move(options)));
    return *resolvers_.back();
  }
  void TearDown() override {
    for (auto& r : resolvers_) {
      EventLoop& loop = r->loop();
      test::on_loop(loop, [&] { r.reset(); });
    }
  }
  ResolverStats stats(Resolver& r) {
    return test::on_loop(r.loop(), [&] { return r.stats(); });
  }

  EventLoopGroup& group(std::size_t loops = 1) {
    if (!group_) group_ = std::make_unique<EventLoopGroup>(transport(), loops);
    return *group_;
  }

  test::Dnsmasq dns_;
  std::unique_ptr<EventLoopGroup> group_;
  std::vector<std::unique_ptr<Resolver>> resolvers_;
};

TEST_P(ResolverTest, ResolvesAnARecord) {
  start_server();
  ResolverOptions o = options_for(dns_.address());
  o.family = AddressFamily::ipv4;
  Resolver& r = make_resolver(group().next(), o);
  EXPECT_EQ(hosts_of(r.resolve("a.weft.test", 80).get()), std::vector<std::string>{"192.0.2.10:80"});
}

TEST_P(ResolverTest, ResolvesAnAaaaRecord) {
  start_server();
  ResolverOptions o = options_for(dns_.address());
  o.family = AddressFamily::ipv6;
  Resolver& r = make_resolver(group().next(), o);
  EXPECT_EQ(hosts_of(r.resolve("six.weft.test", 443).get()), std::vector<std::string>{"[2001:db8::6]:443"});
}

TEST_P(ResolverTest, ResolvesBothFamiliesPreferredFirst) {
  start_server();
  Resolver& v6_first = make_resolver(group().next(), options_for(dns_.address()));
  EXPECT_EQ(hosts_of(v6_first.resolve("both.weft.test", 80).get()),
            (std::vector<std::string>{"[2001:db8::20]:80", "192.0.2.20:80"}));
  ResolverOptions o = options_for(dns_.address());
  o.preferred = AddressFamily::ipv4;
  Resolver& v4_first = make_resolver(group().next(), o);
  EXPECT_EQ(hosts_of(v4_first.resolve("BOTH.weft.test.", 80).get()),
            (std::vector<std::string>{"192.0.2.20:80", "[2001:db8::20]:80"}));
}

TEST_P(ResolverTest, NameWithOneFamilyAnswersWithIt) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  EXPECT_EQ(hosts_of(r.resolve("a.weft.test", 80).get()), std::vector<std::string>{"192.0.2.10:80"});
}

TEST_P(ResolverTest, NxdomainIsNotFoundNamingTheHost) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  DnsError e = dns_error_of(r.resolve("nope.weft.test", 80));
  EXPECT_EQ(e.code(), DnsErrorCode::not_found) << e.what();
  EXPECT_EQ(e.host(), "nope.weft.test");
  EXPECT_NE(std::string(e.what()).find("nope.weft.test"), std::string::npos);
}

TEST_P(ResolverTest, NoRecordOfTheFamilyIsNoAddress) {
  start_server();
  ResolverOptions o = options_for(dns_.address());
  o.family = AddressFamily::ipv6;
  Resolver& r = make_resolver(group().next(), o);
  EXPECT_EQ(dns_error_of(r.resolve("a.weft.test", 80)).code(), DnsErrorCode::no_address);
}

TEST_P(ResolverTest, ServerThatNeverAnswersTimesOut) {
  test::SilentServer silent;
  ResolverOptions o = options_for(silent.address());
  o.timeout = std::chrono::milliseconds(200);
  Resolver& r = make_resolver(group().next(), o);
  DnsError e = dns_error_of(r.resolve("a.weft.test", 80));
  EXPECT_EQ(e.code(), DnsErrorCode::timeout) << e.what();
  EXPECT_EQ(e.host(), "a.weft.test");
}

TEST_P(ResolverTest, ServfailIsServerFailure) {
  test::ScriptedDnsServer servfail(&test::ScriptedDnsServer::servfail);
  Resolver& r = make_resolver(group().next(), options_for(servfail.address()));
  DnsError e = dns_error_of(r.resolve("a.weft.test", 80));
  EXPECT_EQ(e.code(), DnsErrorCode::server_failure) << e.what();
  EXPECT_GE(servfail.queries(), 1);
}

TEST_P(ResolverTest, MalformedAnswerIsAnErrorNotAnAddress) {
  test::ScriptedDnsServer garbage(&test::ScriptedDnsServer::malformed);
  ResolverOptions o = options_for(garbage.address());
  o.timeout = std::chrono::milliseconds(300);
  Resolver& r = make_resolver(group().next(), o);
  DnsError e = dns_error_of(r.resolve("a.weft.test", 80));
  // c-ares drops an answer it cannot parse and waits for a good one: the timeout ends the wait.
  EXPECT_TRUE(e.code() == DnsErrorCode::timeout || e.code() == DnsErrorCode::server_failure) << e.what();
  EXPECT_GE(garbage.queries(), 1);
}

TEST_P(ResolverTest, TruncatedAnswerIsFetchedOverTcp) {
  // 60 A records do not fit a 512-byte UDP answer: dnsmasq truncates it, c-ares asks again over TCP.
  std::vector<std::string> records{"--local-ttl=300"};
  for (int i = 1; i <= 60; ++i) records.push_back("--host-record=big.weft.test,192.0.2." + std::to_string(i));
  ASSERT_TRUE(dns_.start(records));
  ResolverOptions o = options_for(dns_.address());
  o.family = AddressFamily::ipv4;
  Resolver& r = make_resolver(group().next(), o);
  Addresses all = r.resolve("big.weft.test", 80).get();
  EXPECT_EQ(all.size(), 60u);
}

TEST_P(ResolverTest, CacheKeepsAtMostMaxEntries) {
  start_server();
  ResolverOptions o = options_for(dns_.address());
  o.max_cache_entries = 2;
  o.timeout = std::chrono::milliseconds(300);
  Resolver& r = make_resolver(group().next(), o);
  r.resolve("a.weft.test", 80).get();
  r.resolve("six.weft.test", 80).get();
  r.resolve("both.weft.test", 80).get();  // evicts a.weft.test, the oldest
  dns_.stop();
  EXPECT_EQ(r.resolve("both.weft.test", 80).get().size(), 2u);
  EXPECT_EQ(r.resolve("six.weft.test", 80).get().size(), 1u);
  EXPECT_NE(dns_error_of(r.resolve("a.weft.test", 80)).code(), DnsErrorCode::cancelled);  // asked again: no server
  EXPECT_EQ(stats(r).queries, 4u);
}

TEST_P(ResolverTest, ChangedHostsFileIsReadAgain) {
  test::SilentServer silent;
  std::string path = "/tmp/weft-hosts-change-" + std::to_string(::getpid()) + "-" + std::string(transport().name());
  { std::ofstream(path) << "192.0.2.1 web.weft.test\n"; }
  ResolverOptions o = options_for(silent.address());
  o.hosts_file = path;
  o.hosts_file_check_interval = Duration::zero();
  Resolver& r = make_resolver(group().next(), o);
  EXPECT_EQ(hosts_of(r.resolve("web.weft.test", 80).get()), std::vector<std::string>{"192.0.2.1:80"});
  { std::ofstream(path) << "192.0.2.2 web.weft.test\n# a longer file: its size differs\n"; }
  EXPECT_EQ(hosts_of(r.resolve("web.weft.test", 80).get()), std::vector<std::string>{"192.0.2.2:80"});
  std::remove(path.c_str());
}

TEST_P(ResolverTest, SecondResolveComesFromTheCache) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  Addresses first = r.resolve("both.weft.test", 80).get();
  dns_.stop();  // nothing could answer a second query
  EXPECT_EQ(hosts_of(r.resolve("both.weft.test", 8080).get()),
            (std::vector<std::string>{"[2001:db8::20]:8080", "192.0.2.20:8080"}));
  ResolverStats s = stats(r);
  EXPECT_EQ(s.queries, 1u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(dns_.queries_logged("both.weft.test"), 2);  // A and AAAA, once each
  EXPECT_EQ(first.size(), 2u);
}

TEST_P(ResolverTest, NegativeAnswerIsCachedBriefly) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  EXPECT_EQ(dns_error_of(r.resolve("nope.weft.test", 80)).code(), DnsErrorCode::not_found);
  dns_.stop();
  DnsError again = dns_error_of(r.resolve("nope.weft.test", 80));
  EXPECT_EQ(again.code(), DnsErrorCode::not_found);
  EXPECT_EQ(stats(r).cache_hits, 1u);
}

TEST_P(ResolverTest, RecordTtlBoundsTheCache) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  r.resolve("short.weft.test", 80).get();  // TTL 0: never cached
  r.resolve("short.weft.test", 80).get();
  EXPECT_EQ(stats(r).queries, 2u);
  ResolverOptions no_cache = options_for(dns_.address());
  no_cache.max_ttl = Duration::zero();
  Resolver& capped = make_resolver(group().next(), no_cache);
  capped.resolve("a.weft.test", 80).get();
  capped.resolve("a.weft.test", 80).get();
  EXPECT_EQ(stats(capped).queries, 2u);
}

TEST_P(ResolverTest, HostsFileComesFirst) {
  start_server();
  std::string path = "/tmp/weft-hosts-" + std::to_string(::getpid()) + "-" + std::string(transport().name());
  { std::ofstream(path) << "# test hosts\n192.0.2.99  A.weft.test  alias.weft.test # comment\n::1 six.weft.test\n"; }
  ResolverOptions o = options_for(dns_.address());
  o.hosts_file = path;
  Resolver& r = make_resolver(group().next(), o);
  EXPECT_EQ(hosts_of(r.resolve("a.weft.test", 80).get()), std::vector<std::string>{"192.0.2.99:80"});
  EXPECT_EQ(hosts_of(r.resolve("alias.weft.test", 80).get()), std::vector<std::string>{"192.0.2.99:80"});
  EXPECT_EQ(hosts_of(r.resolve("six.weft.test", 80).get()), std::vector<std::string>{"[::1]:80"});
  EXPECT_EQ(hosts_of(r.resolve("both.weft.test", 80).get()).size(), 2u);  // not in the file: DNS
  ResolverStats s = stats(r);
  EXPECT_EQ(s.hosts_hits, 3u);
  EXPECT_EQ(s.queries, 1u);
  std::remove(path.c_str());
}

TEST_P(ResolverTest, NumericHostsNeverQuery) {
  test::SilentServer silent;  // a query would time out
  Resolver& r = make_resolver(group().next(), options_for(silent.address()));
  EXPECT_EQ(hosts_of(r.resolve("127.0.0.1", 80).get()), std::vector<std::string>{"127.0.0.1:80"});
  EXPECT_EQ(hosts_of(r.resolve("::1", 81).get()), std::vector<std::string>{"[::1]:81"});
  EXPECT_EQ(hosts_of(r.resolve("[2001:db8::1]", 82).get()), std::vector<std::string>{"[2001:db8::1]:82"});
  ResolverStats s = stats(r);
  EXPECT_EQ(s.numeric, 3u);
  EXPECT_EQ(s.queries, 0u);
}

TEST_P(ResolverTest, LocalhostIsLoopbackWithoutQuery) {
  test::SilentServer silent;  // a query would time out
  Resolver& r = make_resolver(group().next(), options_for(silent.address()));
  EXPECT_EQ(hosts_of(r.resolve("localhost", 80).get()), (std::vector<std::string>{"[::1]:80", "127.0.0.1:80"}));
  EXPECT_EQ(hosts_of(r.resolve("api.LOCALHOST.", 80).get()).size(), 2u);
  EXPECT_EQ(stats(r).queries, 0u);
}

TEST_P(ResolverTest, BadNamesFailWithoutQuery) {
  test::SilentServer silent;
  Resolver& r = make_resolver(group().next(), options_for(silent.address()));
  for (std::string bad : {std::string(""), std::string("a..b"), std::string("sp ace.test"), std::string(64, 'x'),
                          std::string("a/b"), std::string(300, 'a')}) {
    EXPECT_EQ(dns_error_of(r.resolve(bad, 80)).code(), DnsErrorCode::bad_name) << bad;
  }
  EXPECT_EQ(stats(r).queries, 0u);
}

TEST_P(ResolverTest, ConcurrentResolvesOfOneNameShareAQuery) {
  start_server();
  Resolver& r = make_resolver(group().next(), options_for(dns_.address()));
  auto [a, b] =
      test::on_loop(r.loop(), [&] { return std::pair(r.resolve("a.weft.test", 1), r.resolve("A.weft.test", 2)); });
  EXPECT_EQ(hosts_of(a.get()), std::vector<std::string>{"192.0.2.10:1"});
  EXPECT_EQ(hosts_of(b.get()), std::vector<std::string>{"192.0.2.10:2"});
  EXPECT_EQ(stats(r).queries, 1u);
}

TEST_P(ResolverTest, ResolvesOnEveryLoopOfAGroupAtOnce) {
  start_server();
  EventLoopGroup& loops = group(3);
  std::vector<Resolver*> resolvers;
  for (std::size_t i = 0; i < loops.size(); ++i)
    resolvers.push_back(&make_resolver(loops.next(), options_for(dns_.address())));
  std::vector<Future<Addresses>> answers;
  for (Resolver* r : resolvers) {
    for (const char* name : {"a.weft.test", "six.weft.test", "both.weft.test"}) answers.push_back(r->resolve(name, 80));
  }
  for (auto& f : answers) EXPECT_FALSE(f.get().empty());
}

TEST_P(ResolverTest, ListenersRunOnTheResolversLoop) {
  start_server();
  EventLoop& loop = group().next();
  Resolver& r = make_resolver(loop, options_for(dns_.address()));
  Promise<bool> on_loop;
  r.resolve("a.weft.test", 80).add_listener([&](const Future<Addresses>&) { on_loop.set_value(loop.in_loop()); });
  EXPECT_TRUE(on_loop.future().get());
}

TEST_P(ResolverTest, DestroyedWithQueriesInFlightFailsThemCancelled) {
  test::SilentServer silent;
  ResolverOptions o = options_for(silent.address());
  o.timeout = std::chrono::hours(1);
  EventLoop& loop = group().next();
  auto r = std::make_unique<Resolver>(loop, o);
  Future<Addresses> pending = test::on_loop(loop, [&] { return r->resolve("a.weft.test", 80); });
  test::on_loop(loop, [&] { r.reset(); });
  EXPECT_EQ(dns_error_of(pending).code(), DnsErrorCode::cancelled);
}

TEST_P(ResolverTest, ResolveAfterTheLoopTerminatedFails) {
  test::SilentServer silent;
  EventLoop& loop = group().next();
  auto r = std::make_unique<Resolver>(loop, options_for(silent.address()));
  group_->shutdown_gracefully(Duration::zero(), std::chrono::seconds(5)).get();
  Future<Addresses> f = r->resolve("a.weft.test", 80);
  EXPECT_THROW(f.get(), EventLoopTerminatedError);
  r.reset();  // the loop has terminated: any thread may destroy it
}

WEFT_ON_EVERY_TRANSPORT(ResolverTest);

}  // namespace
}  // namespace weft
