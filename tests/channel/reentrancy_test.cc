// The pipeline's re-entrancy rules (issue 14): a call on one channel never runs another channel's
// events nested inside it; a handler is freed only once nothing of it is on the stack, whatever
// entered it; no inbound read reaches a handler after its channel_inactive.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/codec/string_codec.h"
#include "weft/handler/idle_state_handler.h"

namespace weft {
namespace {

using namespace std::chrono_literals;

// Records, in channel_inactive and exception_caught, whether another channel's call was on the stack.
class NestingProbe final : public Handler {
 public:
  NestingProbe(const bool& other_call_running, std::vector<std::string>& log)
      : other_call_running_(other_call_running), log_(log) {}
  void channel_inactive(Context& ctx) override {
    log_.push_back(other_call_running_ ? "inactive:nested" : "inactive");
    ctx.fire_channel_inactive();
  }
  void exception_caught(Context& ctx, std::exception_ptr error) override {
    log_.push_back(other_call_running_ ? "exception:nested" : "exception");
    ctx.fire_exception(std::move(error));
  }

 private:
  const bool& other_call_running_;
  std::vector<std::string>& log_;
};

// On every read, runs `action` on another channel, with `running` set meanwhile.
class CallsOtherChannel final : public InboundHandler<ByteBuf> {
 public:
  CallsOtherChannel(bool& running, std::function<void()> action) : running_(running), action_(std::move(action)) {}
  void channel_read(Context&, ByteBuf&&) override {
    running_ = true;
    action_();
    running_ = false;
  }

 private:
  bool& running_;
  std::function<void()> action_;
};

TEST(Reentrancy, ClosingAnotherChannelDoesNotRunItsInactiveInsideTheCall) {
  bool a_running = false;
  std::vector<std::string> log;
  EmbeddedChannel b;
  b.pipeline().add_last("probe", std::make_shared<NestingProbe>(a_running, log));
  EmbeddedChannel a;
  a.pipeline().add_last("closer", std::make_shared<CallsOtherChannel>(a_running, [&] { b.close(); }));

  a.write_inbound(ByteBuf::copy_of("x"));
  EXPECT_FALSE(b.is_open());
  b.run_pending();
  EXPECT_EQ(log, std::vector<std::string>{"inactive"});
}

// An outbound handler whose write fails.
class FailingWrite final : public OutboundHandler<std::string> {
 public:
  void write(Context&, std::string&&) override { throw std::runtime_error("write failed"); }
};

TEST(Reentrancy, AnotherChannelsFailedWriteIsReportedAfterTheCall) {
  bool a_running = false;
  std::vector<std::string> log;
  EmbeddedChannel b;
  b.pipeline()
      .add_last("probe", std::make_shared<NestingProbe>(a_running, log))
      .add_last("failing", std::make_shared<FailingWrite>());
  EmbeddedChannel a;
  a.pipeline().add_last("writer", std::make_shared<CallsOtherChannel>(a_running, [&] { b.write_and_flush(std::string("x")); }));

  a.write_inbound(ByteBuf::copy_of("x"));
  b.run_pending();
  EXPECT_EQ(log, std::vector<std::string>{"exception"});
  EXPECT_THROW(b.check_exception(), std::runtime_error);
}

// Remembers, outside itself, that it was destroyed.
struct Lifetime {
  bool destroyed = false;
  bool destroyed_while_running = false;
  int events = 0;
};

// On the first idle event: removes itself, then flushes through the whole pipeline.
class RemovesItselfOnIdle final : public Handler {
 public:
  explicit RemovesItselfOnIdle(Lifetime& lifetime) : lifetime_(lifetime) {}
  ~RemovesItselfOnIdle() override { lifetime_.destroyed = true; }
  void user_event(Context& ctx, const std::any& event) override {
    Lifetime& lifetime = lifetime_;  // what follows must not need `this`
    ++lifetime.events;
    ctx.pipeline().remove(*this);
    ctx.pipeline().flush();
    lifetime.destroyed_while_running = lifetime.destroyed;
    if (!lifetime.destroyed) ctx.fire_user_event(event);  // touches the context: ASan sees a freed one
  }

 private:
  Lifetime& lifetime_;
};

TEST(Reentrancy, HandlerRemovedFromATimerCallbackLivesUntilTheCallbackReturns) {
  Lifetime lifetime;
  EmbeddedChannel ch;
  ch.pipeline().add_last("idle", std::make_shared<IdleStateHandler>(10ms, Duration::zero(), Duration::zero()));
  ch.pipeline().add_last("remover", std::make_shared<RemovesItselfOnIdle>(lifetime));

  ch.advance_time(10ms);  // the idle timer enters the pipeline with no pipeline call on the stack

  EXPECT_EQ(lifetime.events, 1);
  EXPECT_FALSE(lifetime.destroyed_while_running);
  ch.run_pending();
  EXPECT_TRUE(lifetime.destroyed);
  EXPECT_EQ(ch.pipeline().names(), std::vector<std::string>{"idle"});
}

TEST(Reentrancy, HandlerRemovedFromAFutureListenerLivesUntilTheListenerReturns) {
  Lifetime lifetime;
  EmbeddedChannel ch;
  ch.pipeline().add_last("remover", std::make_shared<RemovesItselfOnIdle>(lifetime));
  Context* ctx = ch.pipeline().context("remover");
  Promise<void> promise(&ch.loop());
  promise.future().add_listener([ctx](const Future<void>&) { ctx->handler().user_event(*ctx, std::any(1)); });

  promise.set_value();  // the listener runs here, on the loop, outside any pipeline call
  ch.run_pending();

  EXPECT_EQ(lifetime.events, 1);
  EXPECT_FALSE(lifetime.destroyed_while_running);
  EXPECT_TRUE(lifetime.destroyed);
}

// Records the events that reach it, in order.
class EventLog final : public InboundHandler<std::string> {
 public:
  EventLog(std::vector<std::string>& log, bool close_on_first) : log_(log), close_on_first_(close_on_first) {}
  void channel_read(Context& ctx, std::string&& line) override {
    log_.push_back("read " + line);
    if (close_on_first_ && log_.size() == 1) ctx.close();
  }
  void channel_inactive(Context& ctx) override {
    log_.push_back("inactive");
    ctx.fire_channel_inactive();
  }

 private:
  std::vector<std::string>& log_;
  bool close_on_first_;
};

std::vector<std::string> after_inactive(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  bool seen = false;
  for (const auto& e : log) {
    if (seen) out.push_back(e);
    if (e == "inactive") seen = true;
  }
  return out;
}

TEST(Reentrancy, NoReadReachesAHandlerAfterItsChannelInactive) {
  std::vector<std::string> log;
  EmbeddedChannel ch;
  ch.pipeline()
      .add_last("lines", std::make_shared<LineBasedFrameDecoder>(64))
      .add_last("strings", std::make_shared<StringDecoder>())
      .add_last("log", std::make_shared<EventLog>(log, /*close_on_first=*/true));

  ch.write_inbound(ByteBuf::copy_of("a\nb\nc\n"));

  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front(), "read a");
  EXPECT_EQ(std::count(log.begin(), log.end(), "inactive"), 1);
  EXPECT_EQ(after_inactive(log), std::vector<std::string>{});
}

// Passes channel_inactive on first, then fires what it still holds: a misbehaving handler.
class FiresAfterInactive final : public InboundHandler<std::string> {
 public:
  void channel_read(Context& ctx, std::string&& line) override { ctx.fire_read(std::move(line)); }
  void channel_inactive(Context& ctx) override {
    ctx.fire_channel_inactive();
    ctx.fire_read(std::string("late"));
  }
};

TEST(Reentrancy, AReadFiredAfterInactivePassedIsNotDelivered) {
  std::vector<std::string> log;
  EmbeddedChannel ch;
  ch.pipeline()
      .add_last("late", std::make_shared<FiresAfterInactive>())
      .add_last("log", std::make_shared<EventLog>(log, /*close_on_first=*/false));

  ch.write_inbound(std::string("early"));
  ch.finish();

  EXPECT_EQ(log, (std::vector<std::string>{"read early", "inactive"}));
}

}  // namespace
}  // namespace weft
