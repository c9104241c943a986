#include "weft/handler/idle_state_handler.h"

#include <algorithm>

#include <fmt/format.h>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"

namespace weft {

const char* to_string(IdleState state) noexcept {
  switch (state) {
    case IdleState::reader_idle:
      return "reader_idle";
    case IdleState::writer_idle:
      return "writer_idle";
    case IdleState::all_idle:
      return "all_idle";
  }
  return "?";
}

IdleStateHandler::IdleStateHandler(Duration reader_idle, Duration writer_idle, Duration all_idle)
    : idle_{std::max(reader_idle, Duration::zero()), std::max(writer_idle, Duration::zero()),
            std::max(all_idle, Duration::zero())} {}

void IdleStateHandler::handler_added(Context& ctx) {
  if (ctx.channel().is_active()) start(ctx);
}
void IdleStateHandler::handler_removed(Context& ctx) { stop(ctx); }

void IdleStateHandler::channel_active(Context& ctx) {
  start(ctx);
  ctx.fire_channel_active();
}

void IdleStateHandler::channel_inactive(Context& ctx) {
  stop(ctx);
  ctx.fire_channel_inactive();
}

void IdleStateHandler::read_message(Context& ctx, MessageRef message) {
  reading_ = true;
  first_[kReader] = first_[kAll] = true;
  ctx.fire_read_erased(message);
}

void IdleStateHandler::channel_read_complete(Context& ctx) {
  if (reading_) {
    last_read_ = ctx.loop().now();
    reading_ = false;
  }
  ctx.fire_read_complete();
}

void IdleStateHandler::write_message(Context& ctx, MessageRef message) {
  last_write_ = ctx.loop().now();
  first_[kWriter] = first_[kAll] = true;
  ctx.write_erased(message);
}

void IdleStateHandler::channel_idle(Context& ctx, const IdleStateEvent& event) { ctx.fire_user_event(event); }

void IdleStateHandler::start(Context& ctx) {
  if (started_) return;
  started_ = true;
  last_read_ = last_write_ = ctx.loop().now();
  for (Kind k : {kReader, kWriter, kAll}) {
    if (idle_[k] > Duration::zero()) arm(ctx, k, idle_[k]);
  }
}

void IdleStateHandler::stop(Context& ctx) {
  for (TimerId& t : timers_) {
    if (t != 0) ctx.loop().cancel(t);
    t = 0;
  }
}

void IdleStateHandler::arm(Context& ctx, Kind kind, Duration delay) {
  timers_[kind] = ctx.loop().schedule(delay, [this, &ctx, kind] { on_timer(ctx, kind); });
}

TimePoint IdleStateHandler::last_activity(Kind kind) const {
  switch (kind) {
    case kReader:
      return last_read_;
    case kWriter:
      return last_write_;
    default:
      return std::max(last_read_, last_write_);
  }
}

void IdleStateHandler::on_timer(Context& ctx, Kind kind) {
  timers_[kind] = 0;
  if (!ctx.channel().is_open()) return;
  const TimePoint now = ctx.loop().now();
  if (reading_ && kind != kWriter) {  // a read batch is in progress: not idle
    arm(ctx, kind, idle_[kind]);
    return;
  }
  const Duration left = idle_[kind] - (now - last_activity(kind));
  if (left > Duration::zero()) {
    arm(ctx, kind, left);
    return;
  }
  arm(ctx, kind, idle_[kind]);
  const IdleStateEvent event{static_cast<IdleState>(kind), first_[kind]};
  first_[kind] = false;
  channel_idle(ctx, event);
}

// ---- ReadTimeoutHandler

ReadTimeoutHandler::ReadTimeoutHandler(Duration timeout)
    : IdleStateHandler(timeout, Duration::zero(), Duration::zero()), timeout_(timeout) {}

void ReadTimeoutHandler::channel_idle(Context& ctx, const IdleStateEvent&) {
  if (fired_) return;
  fired_ = true;
  ctx.fire_exception(std::make_exception_ptr(ReadTimeoutError(
      fmt::format("nothing read for {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()))));
  ctx.close();
}

// ---- WriteTimeoutHandler

WriteTimeoutHandler::WriteTimeoutHandler(Duration timeout) : timeout_(timeout) {}

void WriteTimeoutHandler::write_message(Context& ctx, MessageRef message) {
  Channel& ch = ctx.channel();
  const std::size_t before = ch.pending_write_bytes();
  ctx.write_erased(message);
  const std::size_t after = ch.pending_write_bytes();
  if (timeout_ <= Duration::zero() || after <= before || fired_) return;
  enqueued_ += after - before;
  pending_.push_back({enqueued_, ctx.loop().now() + timeout_});
  if (timer_ == 0) timer_ = ctx.loop().schedule(timeout_, [this, &ctx] { on_timer(ctx); });
}

void WriteTimeoutHandler::on_timer(Context& ctx) {
  timer_ = 0;
  const std::uint64_t queued = ctx.channel().pending_write_bytes();
  const std::uint64_t left_queue = enqueued_ > queued ? enqueued_ - queued : 0;
  while (!pending_.empty() && pending_.front().mark <= left_queue) pending_.pop_front();
  if (pending_.empty() || !ctx.channel().is_open()) return;
  const TimePoint now = ctx.loop().now();
  if (pending_.front().deadline <= now) {
    fired_ = true;
    pending_.clear();
    ctx.fire_exception(std::make_exception_ptr(WriteTimeoutError(
        fmt::format("a write did not complete within {} ms ({} bytes still queued)",
                    std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count(), queued))));
    ctx.close();
    return;
  }
  timer_ = ctx.loop().schedule(pending_.front().deadline - now, [this, &ctx] { on_timer(ctx); });
}

void WriteTimeoutHandler::stop(Context& ctx) {
  if (timer_ != 0) ctx.loop().cancel(timer_);
  timer_ = 0;
  pending_.clear();
}

void WriteTimeoutHandler::handler_removed(Context& ctx) { stop(ctx); }

void WriteTimeoutHandler::channel_inactive(Context& ctx) {
  stop(ctx);
  ctx.fire_channel_inactive();
}

}  // namespace weft
