#pragma once
// The connections one server has accepted, tracked per loop of its child group, and the drain that
// ends them (drain_server, weft/channel/drain.h). Each loop's set is touched only on that loop: a
// connection is added when its loop has set it up and removed when it closes; nothing is shared
// between loops, and nothing is done per request.

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/channel/drain.h"
#include "weft/core/event_loop_group.h"
#include "weft/metrics/connection_metrics.h"

namespace weft::detail {

class ServerConnections;

// One drain_server() run: what every loop reports once its connections have all closed, and the
// future those reports complete. Thread-safe (each loop reports once).
class DrainRun {
 public:
  DrainRun(std::size_t loops, TimePoint due) : loops_left_(loops), due_(due) {}

  Future<DrainReport> future() const { return result_.future(); }
  // When connections still open are closed (a steady-clock time).
  TimePoint due() const noexcept { return due_; }
  // One loop is done: `open` connections when the drain reached it, `forced` of them closed at the deadline.
  void loop_done(std::size_t open, std::size_t forced);

 private:
  std::atomic<std::size_t> loops_left_;
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> forced_{0};
  const TimePoint due_;
  Promise<DrainReport> result_;
};

// The server's connections on one loop. Loop thread only, but for the handed-off count.
class LoopConnections {
 public:
  LoopConnections(EventLoop& loop, metrics::ConnectionCounters counters) : loop_(loop), counters_(counters) {}

  EventLoop& loop() const noexcept { return loop_; }
  // AcceptMode::least_connections: connections handed to this loop and not yet closed. Thread-safe:
  // the acceptor's loop counts a connection in when it chooses this loop, this loop counts it out
  // when it closes (or is dropped before it ran here).
  std::size_t handed() const noexcept { return handed_.load(std::memory_order_relaxed); }
  void hand_in() noexcept { handed_.fetch_add(1, std::memory_order_relaxed); }
  void hand_out() noexcept { handed_.fetch_sub(1, std::memory_order_relaxed); }

  // Whether a drain has reached this loop: a connection accepted now is not served.
  bool draining() const noexcept { return drain_ != nullptr; }
  // Tracks `channel`, registered on this loop, until it closes. `self` owns this object.
  void add(const ChannelPtr& channel, const std::shared_ptr<LoopConnections>& self);
  // The drain reaches this loop: asks every connection to end, and reports to `run` once all have
  // closed (closing those left at its deadline).
  void begin_drain(std::shared_ptr<DrainRun> run, const std::shared_ptr<LoopConnections>& self);

 private:
  void remove(std::uint64_t id);
  void force();
  void finish();

  EventLoop& loop_;
  const metrics::ConnectionCounters counters_;
  std::unordered_map<std::uint64_t, std::weak_ptr<Channel>> open_;
  std::shared_ptr<DrainRun> drain_;
  std::size_t open_at_drain_ = 0;
  std::size_t forced_ = 0;
  TimerId deadline_timer_ = 0;
  bool reported_ = false;
  std::atomic<std::size_t> handed_{0};
};

// Every loop's LoopConnections of one server. The map is built once and only read afterwards.
class ServerConnections {
 public:
  explicit ServerConnections(EventLoopGroup& group);

  // The connections on `loop` (null for a loop outside the group).
  std::shared_ptr<LoopConnections> on(EventLoop& loop) const;
  // Starts the drain (on the loop of the server's listener, once its listeners are closed).
  void begin_drain(const std::shared_ptr<DrainRun>& run) const;
  std::size_t loop_count() const noexcept { return loops_.size(); }
  // AcceptMode::least_connections: the loop with the fewest connections handed to it, ties
  // round-robin; counts the new connection in. Thread-safe (one acceptor calls it).
  const std::shared_ptr<LoopConnections>& hand_to_least_loaded() const noexcept;

  // The drain started, if any: read and written on the first listener's loop only.
  std::shared_ptr<DrainRun> run;

 private:
  std::unordered_map<EventLoop*, std::shared_ptr<LoopConnections>> loops_;
  std::vector<std::shared_ptr<LoopConnections>> in_group_order_;  // the same objects, indexed
  mutable std::atomic<std::size_t> next_tie_{0};
};

}  // namespace weft::detail
