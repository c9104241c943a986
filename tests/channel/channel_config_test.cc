#include "weft/channel/channel_config.h"

#include <gtest/gtest.h>

#include "weft/channel/socket_address.h"

namespace weft {
namespace {

TEST(ChannelConfigTest, DefaultsAreValidAndMatchTheDocumentedValues) {
  ChannelConfig c;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.write_buffer_high_water_mark, 64u * 1024);
  EXPECT_EQ(c.write_buffer_low_water_mark, 32u * 1024);
  EXPECT_TRUE(c.auto_read);
  EXPECT_FALSE(c.allow_half_closure);
}

TEST(ChannelConfigTest, InconsistentOptionsAreNamed) {
  ChannelConfig c;
  c.write_buffer_low_water_mark = 100;
  c.write_buffer_high_water_mark = 10;
  try {
    c.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("write_buffer_low_water_mark"), std::string::npos);
  }
  ChannelConfig d;
  d.max_messages_per_read = 0;
  EXPECT_THROW(d.validate(), std::invalid_argument);
}

TEST(ChannelConfigTest, OptionKeysSetTheirField) {
  ChannelConfig c;
  c.*(option::backlog.field) = 7;
  c.*(option::tcp_nodelay.field) = false;
  EXPECT_EQ(c.backlog, 7);
  EXPECT_FALSE(c.tcp_nodelay);
  EXPECT_EQ(option::backlog.name, "backlog");
}

TEST(AdaptiveReadSizerTest, GrowsAtOnceAndShrinksAfterTwoSmallReads) {
  AdaptiveReadSizer s(64, 1024, 8192);
  EXPECT_EQ(s.next_size(), 1024u);
  s.record(1024);
  EXPECT_EQ(s.next_size(), 2048u);
  s.record(2048);
  s.record(4096);
  EXPECT_EQ(s.next_size(), 8192u);
  s.record(8192);
  EXPECT_EQ(s.next_size(), 8192u);  // capped
  s.record(100);
  EXPECT_EQ(s.next_size(), 8192u);  // one small read is not enough
  s.record(100);
  EXPECT_EQ(s.next_size(), 4096u);
  for (int i = 0; i < 20; ++i) s.record(1);
  EXPECT_EQ(s.next_size(), 64u);  // floor
}

TEST(SocketAddressTest, ParsesAndPrintsIpv4AndIpv6) {
  auto a = SocketAddress::parse("127.0.0.1:8080");
  EXPECT_EQ(a.port(), 8080);
  EXPECT_EQ(a.to_string(), "127.0.0.1:8080");
  auto b = SocketAddress::parse("[::1]:9");
  EXPECT_EQ(b.family(), AF_INET6);
  EXPECT_EQ(b.to_string(), "[::1]:9");
  EXPECT_EQ(SocketAddress::parse("localhost:1").host(), "127.0.0.1");
  EXPECT_THROW(SocketAddress::parse("127.0.0.1"), std::invalid_argument);
  EXPECT_THROW(SocketAddress::parse("127.0.0.1:99999"), std::invalid_argument);
  EXPECT_THROW(SocketAddress::parse("example.com:80"), std::invalid_argument);
  EXPECT_THROW(SocketAddress::parse("[::1:80"), std::invalid_argument);
}

}  // namespace
}  // namespace weft
