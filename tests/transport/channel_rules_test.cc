// The pipeline's rules of issue 14 on real sockets, on every transport: no read reaches a handler
// after its channel_inactive; a handler that removes itself from a timer's event lives until the
// timer's callback has returned.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/codec/string_codec.h"
#include "weft/handler/idle_state_handler.h"

namespace weft {
namespace {

using namespace std::chrono_literals;

class ChannelRulesTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(ChannelRulesTest);

// What a server channel's handler saw; written on its loop, read by the test thread.
struct Seen {
  std::mutex mutex;
  std::vector<std::string> events;
  Promise<void> done;  // completed when the channel has been torn down

  void add(std::string e) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(e));
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mutex);
    return events;
  }
};

// Closes its channel on the first line; records every event.
class ClosesOnFirstLine final : public InboundHandler<std::string> {
 public:
  explicit ClosesOnFirstLine(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  ~ClosesOnFirstLine() override { seen_->done.set_value(); }
  void channel_read(Context& ctx, std::string&& line) override {
    seen_->add("read " + line);
    if (!closed_) ctx.close();
    closed_ = true;
  }
  void channel_inactive(Context& ctx) override {
    seen_->add("inactive");
    ctx.fire_channel_inactive();
  }

 private:
  std::shared_ptr<Seen> seen_;
  bool closed_ = false;
};

TEST_P(ChannelRulesTest, NoReadAfterInactiveWhenAHandlerClosesOnTheFirstFrameOfARead) {
  EventLoopGroup group(transport(), loops(1, 2));
  auto seen = std::make_shared<Seen>();
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([seen](Channel& ch) {
                            ch.pipeline()
                                .add_last("lines", std::make_shared<LineBasedFrameDecoder>(64))
                                .add_last("strings", std::make_shared<StringDecoder>())
                                .add_last("closer", std::make_shared<ClosesOnFirstLine>(seen));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all("a\nb\nc\n"));  // one segment: one read of three frames
  EXPECT_EQ(client.recv_until_end(nullptr, 10s), test::StreamEnd::eof);
  ASSERT_TRUE(seen->done.future().wait_for(10s)) << "the server channel was not torn down";

  const std::vector<std::string> events = seen->get();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "read a");
  EXPECT_EQ(events.back(), "inactive") << "a read reached the handler after its channel_inactive";
  EXPECT_EQ(std::count(events.begin(), events.end(), "inactive"), 1);
  EXPECT_TRUE(server->close().wait_for(5s));
}

// On the first idle event: removes itself and flushes through the whole pipeline; records whether
// it was destroyed before its callback returned.
class RemovesItselfWhenIdle final : public Handler {
 public:
  explicit RemovesItselfWhenIdle(std::shared_ptr<Seen> seen, std::shared_ptr<bool> destroyed)
      : seen_(std::move(seen)), destroyed_(std::move(destroyed)) {}
  ~RemovesItselfWhenIdle() override { *destroyed_ = true; }
  void user_event(Context& ctx, const std::any&) override {
    std::shared_ptr<Seen> seen = seen_;  // what follows must not need `this`
    std::shared_ptr<bool> destroyed = destroyed_;
    ctx.pipeline().remove(*this);
    ctx.pipeline().flush();
    seen->add(*destroyed ? "destroyed under its callback" : "alive until its callback returned");
    seen->done.set_value();
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::shared_ptr<bool> destroyed_;
};

TEST_P(ChannelRulesTest, AHandlerRemovingItselfFromAnIdleEventOutlivesTheTimerCallback) {
  EventLoopGroup group(transport(), loops(1, 2));
  auto seen = std::make_shared<Seen>();
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([seen](Channel& ch) {
                            // The idle timer only makes the event happen; nothing waits on its length.
                            ch.pipeline()
                                .add_last("idle", std::make_shared<IdleStateHandler>(1ms, Duration::zero(),
                                                                                     Duration::zero()))
                                .add_last("remover", std::make_shared<RemovesItselfWhenIdle>(
                                                         seen, std::make_shared<bool>(false)));
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  test::BlockingClient client(server->local_address().port());
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(seen->done.future().wait_for(10s)) << "no idle event reached the handler";
  EXPECT_EQ(seen->get(), std::vector<std::string>{"alive until its callback returned"});
  client.close();
  EXPECT_TRUE(server->close().wait_for(5s));
}

}  // namespace
}  // namespace weft
