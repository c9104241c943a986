#pragma once
/// @file
/// An event loop group's times in a registry, read from EventLoop::times() when scraped. While an
/// EventLoopMetrics lives, its loops count their times (EventLoop::observe_times: two clock reads a
/// loop turn, one per task, timer and loop callback, and, while stalls are watched, one more per
/// turn -- per channel read only on a loop whose I/O stalled); without one they count nothing:
///   weft_event_loop_busy_seconds_total{loop}   counter: running timers and tasks
///   weft_event_loop_poll_seconds_total{loop}   counter: in the poll (waiting, and running what it returned)
///   weft_event_loop_turns_total{loop}          counter: polls
///   weft_event_loop_tasks{loop}                gauge: tasks and timers the last turn ran
///   weft_event_loop_tasks_queued{loop}         gauge: tasks posted from other threads, not yet run
///   weft_event_loop_task_delay_seconds{loop}   histogram: from a post by another thread to its start
///   weft_event_loop_timers_pending{loop}       gauge: timers not yet due
///   weft_event_loop_timers_fired_total{loop}   counter: timer runs
///   weft_event_loop_stalls_total{loop}         counter: units that ran past the stall threshold
///                                              (EventLoop::Options::stall_threshold; logged once per name)
///   weft_event_loop_connections{loop}          gauge: servers' connections open on the loop

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
