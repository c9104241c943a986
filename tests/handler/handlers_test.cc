// IdleStateHandler, timeouts, flush consolidation, logging and the connection limiter, on an
// EmbeddedChannel with its manual clock.

#include <gtest/gtest.h>

#include <algorithm>
#include <any>

#include "codec/decoder_harness.h"
#include "weft/channel/embedded_channel.h"
#include "weft/handler/connection_limit_handler.h"
#include "weft/handler/flush_consolidation_handler.h"
#include "weft/handler/idle_state_handler.h"
#include "weft/handler/logging_handler.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class EventRecorder final : public Handler {
 public:
  void user_event(Context& ctx, const std::any& e) override {
    if (auto* idle = std::any_cast<IdleStateEvent>(&e)) events.push_back(*idle);
    ctx.fire_user_event(e);
  }
  std::vector<IdleStateEvent> events;
};

TEST(IdleStateHandlerTest, ReaderIdleFiresEveryPeriodAndReadsResetIt) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("idle", std::make_shared<IdleStateHandler>(1s, 0s, 0s));
  auto rec = std::make_shared<EventRecorder>();
  ch.pipeline().add_last("rec", rec);
  ch.advance_time(999ms);
  EXPECT_TRUE(rec->events.empty());
  ch.advance_time(1ms);
  ASSERT_EQ(rec->events.size(), 1u);
  EXPECT_EQ(rec->events[0].state, IdleState::reader_idle);
  EXPECT_TRUE(rec->events[0].first);
  ch.advance_time(1s);
  ASSERT_EQ(rec->events.size(), 2u);
  EXPECT_FALSE(rec->events[1].first);
  ch.advance_time(500ms);
  ch.write_inbound(std::string("x"));  // reading resets the idle time
  ch.advance_time(900ms);
  EXPECT_EQ(rec->events.size(), 2u);
  ch.advance_time(100ms);
  ASSERT_EQ(rec->events.size(), 3u);
  EXPECT_TRUE(rec->events[2].first);
  EXPECT_EQ(ch.read_inbound<std::string>(), "x");  // messages pass through
}

TEST(IdleStateHandlerTest, WriterAndAllIdle) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("idle", std::make_shared<IdleStateHandler>(0s, 1s, 3s));
  auto rec = std::make_shared<EventRecorder>();
  ch.pipeline().add_last("rec", rec);
  for (int i = 0; i < 4; ++i) {
    ch.advance_time(500ms);
    ch.write_outbound(std::string("w"));  // keeps the writer busy, not the reader
  }
  EXPECT_TRUE(rec->events.empty());
  ch.advance_time(1s);
  ASSERT_EQ(rec->events.size(), 1u);
  EXPECT_EQ(rec->events[0].state, IdleState::writer_idle);
  auto all_idle = [&] {
    return std::count_if(rec->events.begin(), rec->events.end(),
                         [](const IdleStateEvent& e) { return e.state == IdleState::all_idle; });
  };
  ch.advance_time(1900ms);  // t = 4.9 s
  EXPECT_EQ(all_idle(), 0);
  ch.advance_time(100ms);  // 3 s after the last write
  EXPECT_EQ(all_idle(), 1);
}

TEST(IdleStateHandlerTest, RemovalAndCloseCancelTimers) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("idle", std::make_shared<IdleStateHandler>(1s, 1s, 1s));
  auto rec = std::make_shared<EventRecorder>();
  ch.pipeline().add_last("rec", rec);
  ch.pipeline().remove("idle");
  ch.advance_time(5s);
  EXPECT_TRUE(rec->events.empty());
}

TEST(ReadTimeoutHandlerTest, ClosesWithTypedError) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("timeout", std::make_shared<ReadTimeoutHandler>(2s));
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  ch.advance_time(1500ms);
  ch.write_inbound(std::string("keepalive"));
  ch.advance_time(1500ms);
  EXPECT_TRUE(ch.is_open());
  ch.advance_time(500ms);
  EXPECT_FALSE(ch.is_open());
  EXPECT_EQ(errors->count<ReadTimeoutError>(), 1u);
  ch.advance_time(10s);
  EXPECT_EQ(errors->count<ReadTimeoutError>(), 1u);
}

// Counts flushes that reach the head side.
class FlushCounter final : public Handler {
 public:
  void flush(Context& ctx) override {
    ++flushes;
    ctx.flush();
  }
  int flushes = 0;
};

// Answers every inbound string with a write and a flush (a pipelined protocol).
class Responder final : public InboundHandler<std::string> {
 public:
  void channel_read(Context& ctx, std::string&& s) override { ctx.write_and_flush(std::move(s)); }
};

TEST(FlushConsolidationHandlerTest, FlushesInsideAReadBatchBecomeOne) {
  EmbeddedChannel ch;
  auto counter = std::make_shared<FlushCounter>();
  ch.pipeline().add_last("counter", counter);
  ch.pipeline().add_last("consolidate", std::make_shared<FlushConsolidationHandler>(256));
  ch.pipeline().add_last("respond", std::make_shared<Responder>());
  for (int i = 0; i < 10; ++i) ch.pipeline().fire_read(std::string("r") + std::to_string(i));
  EXPECT_EQ(counter->flushes, 0);
  EXPECT_EQ(ch.outbound_count(), 0u);
  ch.pipeline().fire_read_complete();
  EXPECT_EQ(counter->flushes, 1);
  EXPECT_EQ(ch.outbound_count(), 10u);
  ch.pipeline().flush();  // outside a read batch: passes at once
  EXPECT_EQ(counter->flushes, 2);
}

TEST(FlushConsolidationHandlerTest, ExplicitUpperBound) {
  EmbeddedChannel ch;
  auto counter = std::make_shared<FlushCounter>();
  ch.pipeline().add_last("counter", counter);
  ch.pipeline().add_last("consolidate", std::make_shared<FlushConsolidationHandler>(4));
  ch.pipeline().add_last("respond", std::make_shared<Responder>());
  for (int i = 0; i < 10; ++i) ch.pipeline().fire_read(std::string("r"));
  EXPECT_EQ(counter->flushes, 2);  // after the 4th and the 8th
  ch.pipeline().fire_read_complete();
  EXPECT_EQ(counter->flushes, 3);
  EXPECT_EQ(ch.outbound_count(), 10u);
}

TEST(FlushConsolidationHandlerTest, ConsolidatesOutsideReadsWhenAsked) {
  EmbeddedChannel ch;
  auto counter = std::make_shared<FlushCounter>();
  ch.pipeline().add_last("counter", counter);
  ch.pipeline().add_last("consolidate", std::make_shared<FlushConsolidationHandler>(100, true));
  for (int i = 0; i < 5; ++i) ch.pipeline().write_and_flush(std::string("w"));
  EXPECT_EQ(counter->flushes, 0);
  ch.run_pending();
  EXPECT_EQ(counter->flushes, 1);
  EXPECT_EQ(ch.outbound_count(), 5u);
  ch.pipeline().write_and_flush(std::string("w"));
  ch.close();  // held flushes go out before close
  EXPECT_EQ(counter->flushes, 2);
}

TEST(LoggingHandlerTest, PassesEverythingThroughAndDumpsHex) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("log", std::make_shared<LoggingHandler>("test"));
  const LogLevel old = log_level();
  set_log_level(LogLevel::off);  // silent: only the pass-through is checked here
  ch.write_inbound(ByteBuf::copy_of("in"));
  ch.write_outbound(std::string("out"));
  set_log_level(LogLevel::trace);  // enabled: formats every event (to stderr)
  ch.write_inbound(ByteBuf::copy_of("in2"));
  ch.write_outbound(ByteBuf::copy_of("out2"));
  set_log_level(old);
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "in");
  EXPECT_EQ(ch.read_outbound<std::string>(), "out");
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "in2");
  EXPECT_EQ(ch.read_outbound<ByteBuf>()->to_string(), "out2");

  const std::string dump = pretty_hex_dump(ByteBuf::copy_of("0123456789abcdefXY\x01"), 4096);
  EXPECT_EQ(dump,
            "00000000  30 31 32 33 34 35 36 37  38 39 61 62 63 64 65 66  |0123456789abcdef|\n"
            "00000010  58 59 01                                          |XY.|\n");
  EXPECT_EQ(pretty_hex_dump(ByteBuf::copy_of("abcdef"), 2),
            "00000000  61 62                                             |ab|\n... 4 more bytes\n");
}

class ActiveCounter final : public Handler {
 public:
  void channel_active(Context& ctx) override {
    ++active;
    ctx.fire_channel_active();
  }
  int active = 0;
};

TEST(ConnectionLimitHandlerTest, ClosesConnectionsOverTheLimit) {
  auto limit = std::make_shared<ConnectionLimit>(2);
  std::vector<std::unique_ptr<EmbeddedChannel>> channels;
  std::vector<std::shared_ptr<ActiveCounter>> counters;
  for (int i = 0; i < 3; ++i) {
    auto ch = std::make_unique<EmbeddedChannel>();
    ch->pipeline().add_last("limit", std::make_shared<ConnectionLimitHandler>(limit));
    counters.push_back(std::make_shared<ActiveCounter>());
    ch->pipeline().add_last("count", counters.back());
    ch->pipeline().fire_channel_active();  // as an accepted connection turning active
    ch->run_pending();
    channels.push_back(std::move(ch));
  }
  EXPECT_TRUE(channels[0]->is_open());
  EXPECT_TRUE(channels[1]->is_open());
  EXPECT_FALSE(channels[2]->is_open());
  EXPECT_EQ(counters[2]->active, 0);
  EXPECT_EQ(limit->active(), 2u);
  EXPECT_EQ(limit->rejected(), 1u);
  channels[0]->finish();
  EXPECT_EQ(limit->active(), 1u);
  EXPECT_TRUE(limit->try_acquire());
  EXPECT_FALSE(limit->try_acquire());
}

}  // namespace
}  // namespace weft
