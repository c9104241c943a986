#pragma once
/// @file
/// A connection-count limiter: one ConnectionLimit shared by a server's connections, one
/// ConnectionLimitHandler per accepted channel. A connection that becomes active while `max`
/// connections are open is closed at once (handlers after the limiter never see it active) and
/// counted in rejected().
///
///   auto limit = std::make_shared<weft::ConnectionLimit>(10000);
///   .child_handler([limit](weft::Channel& ch) {
///     ch.pipeline().add_last("limit", std::make_shared<weft::ConnectionLimitHandler>(limit));
///     ...
///   })

#include <atomic>
#include <cstddef>
#include <memory>

#include "weft/channel/handler.h"

namespace weft {

/// Thread-safe.
class ConnectionLimit {
 public:
  /// At most `max` connections at once.
  explicit ConnectionLimit(std::size_t max) noexcept : max_(max) {}
  /// Takes a slot; false (and counts a rejection) when all are taken.
  bool try_acquire() noexcept;
  /// Gives back a slot taken by try_acquire().
  void release() noexcept { active_.fetch_sub(1, std::memory_order_acq_rel); }
  /// The limit.
  std::size_t max() const noexcept { return max_; }
  /// Slots taken now.
  std::size_t active() const noexcept { return active_.load(std::memory_order_acquire); }
  /// Connections refused so far.
  std::size_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> active_{0};
  std::atomic<std::size_t> rejected_{0};
};

/// Loop thread only (one per channel).
class ConnectionLimitHandler final : public Handler {
 public:
  /// Counts this channel against `limit` (shared by the server's channels).
  explicit ConnectionLimitHandler(std::shared_ptr<ConnectionLimit> limit);
  void channel_active(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  void handler_removed(Context& ctx) override;

 private:
  std::shared_ptr<ConnectionLimit> limit_;
  bool holding_ = false;
  bool rejected_ = false;
};

}  // namespace weft
