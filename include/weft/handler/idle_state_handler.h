#pragma once
/// @file
/// Idle detection and timeouts.
///
/// IdleStateHandler fires an IdleStateEvent user event when the channel has not read (reader_idle),
/// not written (writer_idle), or neither (all_idle) for the configured time; zero disables a kind.
/// Each kind fires again every period while the channel stays idle (IdleStateEvent::first tells
/// the first one apart). Add it anywhere; it passes every message on unchanged.
///
///   pipeline.add_last("idle", std::make_shared<weft::IdleStateHandler>(60s, 0s, 0s));
///   ... user_event(ctx, e): if (auto* idle = std::any_cast<weft::IdleStateEvent>(&e)) ctx.close();
///
/// ReadTimeoutHandler fires ReadTimeoutError and closes the channel when nothing was read for its
/// timeout (the socket read timeout of a blocking client). WriteTimeoutHandler fires
/// WriteTimeoutError and closes the channel when a write it passed on has not left the write queue
/// within its timeout (it measures the channel's queued bytes, so writes that bypass it count too).
///
/// Loop thread only. Timers run on the channel's loop (EmbeddedChannel: advance_time()).

#include <cstddef>
#include <cstdint>
#include <deque>

#include "weft/channel/handler.h"
#include "weft/core/clock.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"

namespace weft {

/// What the channel has not done for the configured time: read, write, or either.
enum class IdleState { reader_idle, writer_idle, all_idle };

/// The user event fired by IdleStateHandler.
struct IdleStateEvent {
  /// Which kind of idleness.
  IdleState state;
  bool first;  ///< the first event of this kind since the channel was last active in that way
};

/// "reader_idle", "writer_idle" or "all_idle".
const char* to_string(IdleState state) noexcept;

/// Fired by ReadTimeoutHandler: nothing was read for its timeout.
class ReadTimeoutError : public Error {
 public:
  using Error::Error;
};

/// Fired by WriteTimeoutHandler: a write did not leave the write queue within its timeout.
class WriteTimeoutError : public Error {
 public:
  using Error::Error;
};

/// Fires IdleStateEvent user events when the channel is idle (see the file's description).
/// Loop thread only.
class IdleStateHandler : public Handler {
 public:
  /// The idle time of each kind; zero disables that kind.
  IdleStateHandler(Duration reader_idle, Duration writer_idle, Duration all_idle);

  void handler_added(Context& ctx) override;
  void handler_removed(Context& ctx) override;
  void channel_active(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  void read_message(Context& ctx, MessageRef message) override;
  void channel_read_complete(Context& ctx) override;
  void write_message(Context& ctx, MessageRef message) override;

 protected:
  /// Called when an idle state is reached. Default: ctx.fire_user_event(event).
  virtual void channel_idle(Context& ctx, const IdleStateEvent& event);

 private:
  enum Kind { kReader = 0, kWriter = 1, kAll = 2 };
  void start(Context& ctx);
  void stop(Context& ctx);
  void arm(Context& ctx, Kind kind, Duration delay);
  void on_timer(Context& ctx, Kind kind);
  TimePoint last_activity(Kind kind) const;

  Duration idle_[3];
  TimerId timers_[3] = {0, 0, 0};
  bool first_[3] = {true, true, true};
  TimePoint last_read_{};
  TimePoint last_write_{};
  bool reading_ = false;
  bool started_ = false;
};

/// Fires ReadTimeoutError and closes the channel when nothing was read for its timeout.
/// Loop thread only.
class ReadTimeoutHandler final : public IdleStateHandler {
 public:
  /// Times out after `timeout` without a read.
  explicit ReadTimeoutHandler(Duration timeout);

 protected:
  void channel_idle(Context& ctx, const IdleStateEvent& event) override;

 private:
  Duration timeout_;
  bool fired_ = false;
};

/// Fires WriteTimeoutError and closes the channel when a write it passed on has not left the
/// write queue within its timeout. Loop thread only.
class WriteTimeoutHandler final : public Handler {
 public:
  /// Times out a write still queued `timeout` after it was passed on.
  explicit WriteTimeoutHandler(Duration timeout);

  void write_message(Context& ctx, MessageRef message) override;
  void handler_removed(Context& ctx) override;
  void channel_inactive(Context& ctx) override;

 private:
  struct Pending {
    std::uint64_t mark;  ///< the write is done once this many bytes have left the queue
    TimePoint deadline;
  };
  void on_timer(Context& ctx);
  void stop(Context& ctx);

  Duration timeout_;
  std::uint64_t enqueued_ = 0;  // bytes this handler saw enter the write queue
  std::deque<Pending> pending_;
  TimerId timer_ = 0;
  bool fired_ = false;
};

}  // namespace weft
