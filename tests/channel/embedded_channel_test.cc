#include "weft/channel/embedded_channel.h"

#include <gtest/gtest.h>

#include "weft/buffer/byte_buf.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// Closes the channel when no message arrived for `timeout` (a tiny idle handler).
class IdleCloser final : public InboundHandler<std::string> {
 public:
  explicit IdleCloser(Duration timeout) : timeout_(timeout) {}
  void handler_added(Context& ctx) override { arm(ctx); }
  void channel_read(Context& ctx, std::string&& s) override {
    ctx.loop().cancel(timer_);
    arm(ctx);
    ctx.fire_read(std::move(s));
  }
  void handler_removed(Context& ctx) override { ctx.loop().cancel(timer_); }

 private:
  void arm(Context& ctx) {
    timer_ = ctx.loop().schedule(timeout_, [&ctx] { ctx.close(); });
  }
  Duration timeout_;
  TimerId timer_ = 0;
};

TEST(EmbeddedChannelTest, IsActiveAndQueuesWhatReachesTheEnds) {
  EmbeddedChannel ch;
  EXPECT_TRUE(ch.is_open());
  EXPECT_TRUE(ch.is_active());
  EXPECT_TRUE(ch.loop().in_loop());
  EXPECT_TRUE(ch.write_inbound(std::string("in")));
  EXPECT_TRUE(ch.write_outbound(ByteBuf::copy_of("out")));
  EXPECT_EQ(ch.inbound_count(), 1u);
  EXPECT_EQ(ch.read_inbound<std::string>(), "in");
  EXPECT_EQ(ch.read_outbound<ByteBuf>()->to_string(), "out");
  EXPECT_FALSE(ch.finish());
  EXPECT_FALSE(ch.is_open());
}

TEST(EmbeddedChannelTest, ReadingTheWrongTypeNamesBothTypes) {
  EmbeddedChannel ch;
  ch.write_inbound(42);
  try {
    ch.read_inbound<std::string>();
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("int"), std::string::npos);
  }
}

TEST(EmbeddedChannelTest, OutboundMessagesAppearOnlyOnceFlushed) {
  EmbeddedChannel ch;
  ch.pipeline().write(std::string("a"));
  ch.run_pending();
  EXPECT_EQ(ch.outbound_count(), 0u);
  ch.pipeline().flush();
  EXPECT_EQ(ch.outbound_count(), 1u);
}

TEST(EmbeddedChannelTest, FakeClockDrivesTimers) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("idle", std::make_shared<IdleCloser>(100ms));
  ch.advance_time(60ms);
  ch.write_inbound(std::string("keep alive"));  // re-arms the timer
  ch.advance_time(60ms);
  EXPECT_TRUE(ch.is_open());
  ch.advance_time(50ms);
  EXPECT_FALSE(ch.is_open());
  EXPECT_TRUE(ch.close_future().is_done());
}

TEST(EmbeddedChannelTest, PostedTasksRunOnRunPending) {
  EmbeddedChannel ch;
  int runs = 0;
  ch.loop().execute([&] { ++runs; });
  EXPECT_EQ(runs, 0);
  ch.run_pending();
  EXPECT_EQ(runs, 1);
}

TEST(EmbeddedChannelTest, WritesAfterCloseAreDropped) {
  EmbeddedChannel ch;
  ch.close();
  EXPECT_FALSE(ch.write_outbound(std::string("late")));
}

TEST(EmbeddedChannelTest, CanBeSharedAndWrittenFromAnotherThread) {
  auto ch = std::make_shared<EmbeddedChannel>();
  std::thread t([&] { ch->write_and_flush(std::string("from afar")); });
  t.join();
  ch->run_pending();
  EXPECT_EQ(ch->read_outbound<std::string>(), "from afar");
}

}  // namespace
}  // namespace weft
