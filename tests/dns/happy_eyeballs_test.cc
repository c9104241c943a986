// Happy Eyeballs over real sockets on every transport: listeners on 127.0.0.1 and ::1 that the
// kernel completes connections for without accept(), one that refuses, and a blackhole (a listener
// whose accept queue is full, so the kernel drops the SYNs and the connect hangs).

#include "weft/dns/happy_eyeballs.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "support/dns_servers.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/io_driver.h"
#include "weft/dns/dns_error.h"
#include "weft/dns/resolver.h"

namespace weft {
namespace {

using test::TestListener;

bool ipv6_loopback_available() {
  TestListener probe("::1", 1);
  return probe.ok();
}

class HappyEyeballsTest : public test::TransportTest {
 protected:
  void SetUp() override {
    if (!ipv6_loopback_available()) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
    clients_ = std::make_unique<EventLoopGroup>(transport(), loops(1, 3));
    bootstrap_.group(*clients_);
  }
  // The loop that runs the delay timers: not one of the blocking transport's, whose threads block in
  // connect().
  EventLoop& home() { return home_.next(); }

  struct Attempts {
    std::mutex mutex;
    std::vector<std::pair<SocketAddress, ChannelPtr>> made;
    std::size_t size() {
      std::lock_guard lock(mutex);
      return made.size();
    }
  };
  HappyEyeballsOptions options(Duration delay, Attempts& attempts) {
    HappyEyeballsOptions o;
    o.attempt_delay = delay;
    o.on_attempt = [&attempts](const SocketAddress& a, const ChannelPtr& ch) {
      std::lock_guard lock(attempts.mutex);
      attempts.made.emplace_back(a, ch);
    };
    return o;
  }

  EventLoopGroup home_{basic_driver_factory(), 1, "home"};
  std::unique_ptr<EventLoopGroup> clients_;
  Bootstrap bootstrap_;
};

TEST(InterleaveFamilies, AlternatesStartingWithTheFirstFamily) {
  auto v4 = [](int i) { return SocketAddress::from("192.0.2." + std::to_string(i), 1); };
  auto v6 = [](int i) { return SocketAddress::from("2001:db8::" + std::to_string(i), 1); };
  std::vector<SocketAddress> in{v6(1), v6(2), v6(3), v4(1), v4(2)};
  std::vector<std::string> out;
  for (const SocketAddress& a : interleave_families(in)) out.push_back(a.to_string());
  EXPECT_EQ(out, (std::vector<std::string>{"[2001:db8::1]:1", "192.0.2.1:1", "[2001:db8::2]:1", "192.0.2.2:1",
                                           "[2001:db8::3]:1"}));
  EXPECT_TRUE(interleave_families({}).empty());
}

TEST_P(HappyEyeballsTest, PreferredFamilyConnectsAlone) {
  TestListener v6("::1", 16), v4("127.0.0.1", 16);
  Attempts attempts;
  // A delay longer than any test: the second attempt could only start if the first failed.
  auto f = connect_happy_eyeballs(home(), bootstrap_, {v6.address(), v4.address()}, {},
                                  options(std::chrono::hours(1), attempts));
  ChannelPtr channel = f.get();
  EXPECT_EQ(channel->remote_address().to_string(), v6.address().to_string());
  EXPECT_EQ(attempts.size(), 1u);
  channel->close().get();
}

TEST_P(HappyEyeballsTest, NextAttemptStartsAtOnceWhenOneFails) {
  TestListener refusing("::1", -1), v4("127.0.0.1", 16);
  Attempts attempts;
  auto f = connect_happy_eyeballs(home(), bootstrap_, {refusing.address(), v4.address()}, {},
                                  options(std::chrono::hours(1), attempts));
  ChannelPtr channel = f.get();
  EXPECT_EQ(channel->remote_address().to_string(), v4.address().to_string());
  EXPECT_EQ(attempts.size(), 2u);
  channel->close().get();
}

TEST_P(HappyEyeballsTest, BlackholedPreferredLosesAfterTheDelayAndIsClosed) {
  TestListener blackhole("127.0.0.1", 0), v6("::1", 16);
  ASSERT_TRUE(blackhole.fill_accept_queue());
  Attempts attempts;
  auto f = connect_happy_eyeballs(home(), bootstrap_, {blackhole.address(), v6.address()}, {},
                                  options(std::chrono::milliseconds(20), attempts));
  ChannelPtr channel = f.get();
  EXPECT_EQ(channel->remote_address().to_string(), v6.address().to_string());
  ASSERT_EQ(attempts.size(), 2u);
  ChannelPtr loser = attempts.made[0].second;
  EXPECT_EQ(attempts.made[0].first.to_string(), blackhole.address().to_string());
  loser->close_future().get();  // closed by the winner, while still connecting
  EXPECT_FALSE(loser->is_active());
  channel->close().get();
}

TEST_P(HappyEyeballsTest, InitializerSetsUpTheWinner) {
  TestListener v4("127.0.0.1", 16);
  std::atomic<int> inits{0};
  auto f = connect_happy_eyeballs(home(), bootstrap_, {v4.address()}, [&](Channel&) { ++inits; });
  ChannelPtr channel = f.get();
  EXPECT_EQ(inits.load(), 1);
  channel->close().get();
}

TEST_P(HappyEyeballsTest, AllRefusedFailsWithTheLastError) {
  TestListener a("::1", -1), b("127.0.0.1", -1);
  Attempts attempts;
  auto f = connect_happy_eyeballs(home(), bootstrap_, {a.address(), b.address()}, {},
                                  options(std::chrono::hours(1), attempts));
  EXPECT_THROW(f.get(), IoError);
  EXPECT_EQ(attempts.size(), 2u);
}

TEST_P(HappyEyeballsTest, NoAddressIsInvalidArgument) {
  auto f = connect_happy_eyeballs(home(), bootstrap_, {}, {});
  EXPECT_THROW(f.get(), std::invalid_argument);
}

TEST_P(HappyEyeballsTest, ConnectsToAHostByName) {
  TestListener v4("127.0.0.1", 16);
  std::string hosts = "/tmp/weft-he-hosts-" + std::to_string(::getpid()) + "-" + std::string(transport().name());
  { std::ofstream(hosts) << "127.0.0.1 web.weft.test\n"; }
  ResolverOptions o;
  o.hosts_file = hosts;
  o.servers = {SocketAddress::loopback(9)};  // nothing answers there: only the hosts file can
  auto resolver = std::make_unique<Resolver>(home(), o);
  ChannelPtr channel = connect_to_host(*resolver, bootstrap_, "web.weft.test", v4.address().port(), {}).get();
  EXPECT_EQ(channel->remote_address().to_string(), v4.address().to_string());
  channel->close().get();
  auto unknown = connect_to_host(*resolver, bootstrap_, "bad..name", 80, {});
  EXPECT_THROW(unknown.get(), DnsError);
  test::on_loop(home(), [&] { resolver.reset(); });
  std::remove(hosts.c_str());
}

WEFT_ON_EVERY_TRANSPORT(HappyEyeballsTest);

}  // namespace
}  // namespace weft
