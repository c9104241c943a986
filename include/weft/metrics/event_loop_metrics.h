#pragma once
/// @file
/// An event loop group's times in a registry, read from EventLoop::times() when scraped. While an
/// EventLoopMetrics lives, its loops count their times (EventLoop::observe_times: two clock reads a
/// loop turn); without one they count nothing:
///   weft_event_loop_busy_seconds_total{loop}  counter: running events, timers and tasks
///   weft_event_loop_poll_seconds_total{loop}  counter: waiting in the poll
///   weft_event_loop_turns_total{loop}         counter: polls
///   weft_event_loop_tasks{loop}               gauge: tasks and timers the last turn ran

#include <string>
#include <vector>

#include "weft/core/event_loop_group.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// Adds a group's loops to a registry while it lives; its destructor removes them. Destroy it
/// before the group. Thread-safe to make and destroy.
class EventLoopMetrics {
 public:
  /// Adds every loop of `group` to `registry`, labelled by the loop's name.
  explicit EventLoopMetrics(EventLoopGroup& group, Registry& registry = Registry::global());
  /// Removes the loops' series from the registry.
  ~EventLoopMetrics();
  /// Not copyable.
  EventLoopMetrics(const EventLoopMetrics&) = delete;
  /// Not copyable.
  EventLoopMetrics& operator=(const EventLoopMetrics&) = delete;

 private:
  Registry& registry_;
  EventLoopGroup& group_;
  std::vector<std::string> loops_;
};

}  // namespace weft::metrics
