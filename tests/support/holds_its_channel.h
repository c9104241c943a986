#pragma once
// A handler that holds its own channel while it lives, as a Connection<> does, and ends the channel
// itself at its loop's shutdown, so that the channel outlives the loop: for the tests of what frees a
// channel and its handlers after the loop's end. It logs "removed" and "freed"; on the user events
// below it removes itself or closes the channel from inside the event's call.

#include <any>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/events.h"
#include "weft/channel/handler.h"
#include "weft/channel/pipeline.h"
#include "weft/core/future.h"

namespace weft::test {

// Asks a HoldsItsChannel to remove itself, or to close the channel (it logs "still in the call" after).
struct RemoveYourself {};
struct CloseTheChannel {};

class HoldsItsChannel final : public Handler {
 public:
  explicit HoldsItsChannel(std::shared_ptr<std::vector<std::string>> log) : log_(std::move(log)) {}
  ~HoldsItsChannel() override { log_->push_back("freed"); }

  void handler_added(Context& ctx) override { channel_ = ctx.channel().shared_from_this(); }
  void handler_removed(Context&) override { log_->push_back("removed"); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) ctx.channel().end_for_shutdown_itself();
    if (std::any_cast<RemoveYourself>(&event) != nullptr) {
      ctx.pipeline().remove(*this);
      log_->push_back("still in the call");
    }
    if (std::any_cast<CloseTheChannel>(&event) != nullptr) {
      ctx.close(Promise<void>(&ctx.loop()));
      log_->push_back("still in the call");
    }
    ctx.fire_user_event(event);  // the context still forwards: the call has not returned
  }

 private:
  std::shared_ptr<std::vector<std::string>> log_;
  ChannelPtr channel_;
};

}  // namespace weft::test
