// A pipeline whose event loop terminated while its channel stayed open (a handler ended the channel
// itself at the shutdown): no loop task will free what is removed from it any more. What is removed
// after the loop's end is still freed -- at once when no pipeline call is on the thread's stack, else
// when the outermost one returns, whichever channel's it is -- so that a handler that holds its own
// channel (a Connection<>) does not keep the channel, and itself, alive for ever.

#include <gtest/gtest.h>

#include <any>
#include <memory>
#include <string>
#include <vector>

#include "support/holds_its_channel.h"
#include "weft/channel/connection.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/channel/pipeline.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::CloseTheChannel;
using test::HoldsItsChannel;
using test::RemoveYourself;

// Records the user events that reach it (after the holder).
class EventsAfter final : public Handler {
 public:
  explicit EventsAfter(std::shared_ptr<std::vector<std::string>> log) : log_(std::move(log)) {}
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) == nullptr) log_->push_back("passed on");
    ctx.fire_user_event(event);
  }

 private:
  std::shared_ptr<std::vector<std::string>> log_;
};

// A shared EmbeddedChannel with a HoldsItsChannel, open on a loop that has terminated.
struct OnATerminatedLoop {
  OnATerminatedLoop() {
    channel->pipeline().add_last("holder", std::make_shared<HoldsItsChannel>(log));
    channel->pipeline().add_last("after", std::make_shared<EventsAfter>(log));
    EXPECT_TRUE(channel->loop().shutdown_gracefully(0ms, 0ms).is_done());
    EXPECT_TRUE(channel->loop().is_terminated());
    EXPECT_TRUE(channel->is_open()) << "the holder ended the channel itself: it outlives the loop";
  }

  std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<EmbeddedChannel> channel = std::make_shared<EmbeddedChannel>();
  std::weak_ptr<EmbeddedChannel> watch = channel;
};

TEST(PipelineLoopEndTest, AHandlerRemovedOutsideAnyCallIsFreedAtOnce) {
  OnATerminatedLoop f;
  f.channel->pipeline().remove("holder");
  EXPECT_EQ(*f.log, (std::vector<std::string>{"removed", "freed"}));
  f.channel.reset();
  EXPECT_TRUE(f.watch.expired()) << "the channel is not kept by the handler it removed";
}

TEST(PipelineLoopEndTest, AHandlerThatRemovesItselfIsFreedWhenTheCallReturns) {
  OnATerminatedLoop f;
  f.channel->pipeline().fire_user_event(RemoveYourself{});
  // Not freed under its own call: its context still passed the event on.
  EXPECT_EQ(*f.log, (std::vector<std::string>{"removed", "still in the call", "passed on", "freed"}));
  f.channel.reset();
  EXPECT_TRUE(f.watch.expired());
}

TEST(PipelineLoopEndTest, AChannelClosedAfterTheLoopTerminatedIsFreed) {
  OnATerminatedLoop f;
  EXPECT_TRUE(f.channel->close().is_done());
  EXPECT_FALSE(f.channel->is_open());
  EXPECT_EQ(*f.log, (std::vector<std::string>{"removed", "freed"}));
  f.channel.reset();
  EXPECT_TRUE(f.watch.expired()) << "the channel is not kept by the handler that held it";
}

TEST(PipelineLoopEndTest, AChannelClosedByItsHandlerIsFreedWhenTheCallReturns) {
  OnATerminatedLoop f;
  f.channel->pipeline().fire_user_event(CloseTheChannel{});
  EXPECT_FALSE(f.channel->is_open());
  EXPECT_EQ(*f.log, (std::vector<std::string>{"removed", "still in the call", "passed on", "freed"}));
  f.channel.reset();
  EXPECT_TRUE(f.watch.expired());
}

// The channel only its handler holds (the cycle alone): freed by the call that closes it, once
// the call is over -- nothing of the channel is touched after.
TEST(PipelineLoopEndTest, AChannelOnlyItsHandlerHoldsIsFreedByTheCallThatClosesIt) {
  OnATerminatedLoop f;
  EmbeddedChannel& ch = *f.channel;
  f.channel.reset();
  ASSERT_FALSE(f.watch.expired()) << "the handler holds it";
  ch.pipeline().fire_user_event(CloseTheChannel{});
  EXPECT_TRUE(f.watch.expired());
  EXPECT_EQ(f.log->back(), "freed");
}

// What a channel's handler is asked by another channel's handler (an HTTP/2 stream asks its
// connection's codec): it closes its own channel, and goes on.
class ClosesItsChannelWhenAsked final : public Handler {
 public:
  explicit ClosesItsChannelWhenAsked(std::shared_ptr<std::vector<std::string>> log) : log_(std::move(log)) {}
  ~ClosesItsChannelWhenAsked() override { log_->push_back("freed"); }
  void handler_added(Context& ctx) override { ctx_ = &ctx; }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) ctx.channel().end_for_shutdown_itself();
    ctx.fire_user_event(event);
  }
  void close_and_go_on() {
    ctx_->channel().close();
    log_->push_back("went on");  // its own channel's calls have returned; the other's has not
  }

 private:
  std::shared_ptr<std::vector<std::string>> log_;
  Context* ctx_ = nullptr;
};

// The other channel's handler, which asks.
class Asks final : public Handler {
 public:
  explicit Asks(ClosesItsChannelWhenAsked& asked) : asked_(asked) {}
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<CloseTheChannel>(&event) != nullptr) asked_.close_and_go_on();
    ctx.fire_user_event(event);
  }

 private:
  ClosesItsChannelWhenAsked& asked_;
};

// A handler closes its own channel from another channel's call: it is freed once that call has
// returned too, not when its own channel's calls have.
TEST(PipelineLoopEndTest, AHandlerCalledFromAnotherChannelsCallIsFreedWhenThatCallReturns) {
  auto log = std::make_shared<std::vector<std::string>>();
  EmbeddedChannel asked_channel;
  auto asked = std::make_shared<ClosesItsChannelWhenAsked>(log);
  asked_channel.pipeline().add_last("asked", asked);
  EmbeddedChannel asking_channel;
  asking_channel.pipeline().add_last("asks", std::make_shared<Asks>(*asked));
  asked.reset();
  ASSERT_TRUE(asked_channel.loop().shutdown_gracefully(0ms, 0ms).is_done());
  ASSERT_TRUE(asked_channel.is_open());
  asking_channel.pipeline().fire_user_event(CloseTheChannel{});
  EXPECT_FALSE(asked_channel.is_open());
  EXPECT_EQ(*log, (std::vector<std::string>{"went on", "freed"}));
}

// A coroutine over the channel (Connection<>, which holds its channel) waiting for a read when the
// loop ends: the close after the end resumes it with ChannelClosedError, and frees all of it.
TEST(PipelineLoopEndTest, AConnectionWhoseLoopTerminatedIsFreedWithItsChannelWhenClosed) {
  auto channel = std::make_shared<EmbeddedChannel>();
  std::weak_ptr<EmbeddedChannel> watch = channel;
  auto log = std::make_shared<std::vector<std::string>>();
  channel->pipeline().add_last("ends-itself", std::make_shared<HoldsItsChannel>(log));
  std::weak_ptr<Connection<std::string>> connection =
      serve<std::string>(*channel, [log](Connection<std::string>& c) -> Task<> {
        try {
          co_await c.read();
        } catch (const ChannelClosedError&) {
          log->push_back("read failed");
          throw;
        }
      });
  ASSERT_TRUE(channel->loop().shutdown_gracefully(0ms, 0ms).is_done());
  ASSERT_TRUE(channel->is_open());
  EXPECT_TRUE(channel->close().is_done());
  EXPECT_TRUE(connection.expired());
  EXPECT_EQ(*log, (std::vector<std::string>{"read failed", "removed", "freed"}));
  channel.reset();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace weft
