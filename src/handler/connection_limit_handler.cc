#include "weft/handler/connection_limit_handler.h"

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/core/log.h"

namespace weft {

bool ConnectionLimit::try_acquire() noexcept {
  std::size_t n = active_.load(std::memory_order_relaxed);
  do {
    if (n >= max_) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!active_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel, std::memory_order_relaxed));
  return true;
}

ConnectionLimitHandler::ConnectionLimitHandler(std::shared_ptr<ConnectionLimit> limit) : limit_(std::move(limit)) {}

void ConnectionLimitHandler::channel_active(Context& ctx) {
  if (!limit_->try_acquire()) {
    rejected_ = true;
    log(LogLevel::info, "channel {}: connection limit {} reached, closing", ctx.channel().id(), limit_->max());
    ctx.close();
    return;
  }
  holding_ = true;
  ctx.fire_channel_active();
}

void ConnectionLimitHandler::channel_inactive(Context& ctx) {
  if (holding_) {
    holding_ = false;
    limit_->release();
  }
  if (!rejected_) ctx.fire_channel_inactive();
}

void ConnectionLimitHandler::handler_removed(Context&) {
  if (holding_) {
    holding_ = false;
    limit_->release();
  }
}

}  // namespace weft
