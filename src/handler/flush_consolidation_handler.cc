#include "weft/handler/flush_consolidation_handler.h"

#include <stdexcept>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"

namespace weft {

FlushConsolidationHandler::FlushConsolidationHandler(std::size_t explicit_flush_after_flushes,
                                                     bool consolidate_when_no_read_in_progress)
    : explicit_after_(explicit_flush_after_flushes), consolidate_without_read_(consolidate_when_no_read_in_progress) {
  if (explicit_after_ == 0) {
    throw std::invalid_argument("FlushConsolidationHandler: explicit_flush_after_flushes must be positive");
  }
}

void FlushConsolidationHandler::read_message(Context& ctx, MessageRef message) {
  read_in_progress_ = true;
  ctx.fire_read_erased(message);
}

void FlushConsolidationHandler::channel_read_complete(Context& ctx) {
  read_in_progress_ = false;
  flush_if_needed(ctx);
  ctx.fire_read_complete();
}

void FlushConsolidationHandler::flush(Context& ctx) {
  if (read_in_progress_) {
    if (++held_ >= explicit_after_) flush_now(ctx);
    return;
  }
  if (consolidate_without_read_) {
    if (++held_ >= explicit_after_) {
      flush_now(ctx);
    } else if (scheduled_ == 0) {
      scheduled_ = ctx.loop().schedule(Duration::zero(), [this, &ctx] {
        scheduled_ = 0;
        if (held_ > 0) flush_now(ctx);
      });
    }
    return;
  }
  flush_now(ctx);
}

void FlushConsolidationHandler::flush_now(Context& ctx) {
  cancel_scheduled(ctx);
  held_ = 0;
  ctx.flush();
}

void FlushConsolidationHandler::flush_if_needed(Context& ctx) {
  if (held_ > 0) flush_now(ctx);
}

void FlushConsolidationHandler::cancel_scheduled(Context& ctx) {
  if (scheduled_ != 0) ctx.loop().cancel(scheduled_);
  scheduled_ = 0;
}

void FlushConsolidationHandler::close(Context& ctx, Promise<void> promise) {
  flush_if_needed(ctx);
  ctx.close(std::move(promise));
}

void FlushConsolidationHandler::writability_changed(Context& ctx) {
  if (!ctx.channel().is_writable()) flush_if_needed(ctx);
  ctx.fire_writability_changed();
}

void FlushConsolidationHandler::exception_caught(Context& ctx, std::exception_ptr error) {
  read_in_progress_ = false;
  flush_if_needed(ctx);
  ctx.fire_exception(std::move(error));
}

void FlushConsolidationHandler::channel_inactive(Context& ctx) {
  cancel_scheduled(ctx);
  held_ = 0;
  ctx.fire_channel_inactive();
}

void FlushConsolidationHandler::handler_removed(Context& ctx) {
  flush_if_needed(ctx);
  cancel_scheduled(ctx);
}

}  // namespace weft
