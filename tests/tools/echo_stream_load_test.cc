#include <gtest/gtest.h>

#include "echo_load.h"
#include "servers.h"
#include "stream_load.h"
#include "support/blocking_client.h"

namespace weft::load {
namespace {

TEST(EchoLoadTest, ThreadsSpreadOverPortsAndCompleteEveryRoundTrip) {
  test::TestServers servers;
  const auto port = servers.start_echo(3);
  ASSERT_NE(port, 0) << servers.last_error();
  EchoOptions o;
  o.target = "127.0.0.1:" + std::to_string(port) + "+3";
  o.threads = 12;
  o.rounds = 100;
  o.size = 256;
  EchoResult r = run_echo(o);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.round_trips, 1200u);
  EXPECT_EQ(r.latency.count(), 1200u);
  EXPECT_GT(r.total_ms, 0.0);
  EXPECT_GE(r.total_ms * 1e6, static_cast<double>(r.latency.max()));
}

TEST(EchoLoadTest, MaxSecondsStopsARunThatCannotFinish) {
  test::TestServers servers;
  const auto port = servers.start_echo(1);
  ASSERT_NE(port, 0) << servers.last_error();
  EchoOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.threads = 2;
  o.rounds = 1'000'000'000;
  o.size = 1;
  o.max_seconds = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  EchoResult r = run_echo(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(r.complete);
  EXPECT_GT(r.round_trips, 0u);
}

TEST(EchoLoadTest, UnreachableTargetIsOneLineReason) {
  const auto port = weft::test::unused_loopback_port();
  EchoOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.threads = 3;
  try {
    run_echo(o);
    ADD_FAILURE() << "no thread can connect, yet the run did not fail";
  } catch (const LoadError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  }
}

TEST(EchoLoadTest, TargetsAreParsed) {
  EchoTarget t = parse_echo_target("127.0.0.1:9000+100");
  EXPECT_EQ(t.port, 9000);
  EXPECT_EQ(t.ports, 100);
  EXPECT_EQ(parse_echo_target("127.0.0.1:9000").ports, 1);
  EXPECT_THROW(parse_echo_target("127.0.0.1:65535+2"), LoadError);
  EXPECT_THROW(parse_echo_target("127.0.0.1"), LoadError);
  EXPECT_THROW(parse_echo_target("127.0.0.1:9000+0"), LoadError);
}

TEST(StreamLoadTest, MessagesGoBothWaysThroughAnEchoServer) {
  test::TestServers servers;
  const auto port = servers.start_echo(1);
  ASSERT_NE(port, 0) << servers.last_error();
  StreamOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.connections = 2;
  o.size = 64;
  o.duration_s = 1;
  StreamResult r = run_stream(o);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_GT(r.sent_messages, 1000u);
  EXPECT_GT(r.received_messages, 1000u);
  EXPECT_LE(r.received_messages, r.sent_messages);
  EXPECT_EQ(r.sent_bytes, r.sent_messages * 68);
}

TEST(StreamLoadTest, UnreachableTargetIsOneLineReason) {
  const auto port = weft::test::unused_loopback_port();
  StreamOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.connections = 3;
  o.duration_s = 1;
  try {
    run_stream(o);
    ADD_FAILURE() << "no connection can be made, yet the run did not fail";
  } catch (const LoadError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  }
}

}  // namespace
}  // namespace weft::load
