#pragma once
/// @file
/// ExecutorGroup: threads for handlers that block (database calls, file I/O, heavy computation),
/// so that they do not stall an event loop. Each executor is an EventLoop with a BasicDriver (tasks
/// and timers, no I/O).
///
///   weft::ExecutorGroup blocking({.threads = 8});
///   ch.pipeline().add_last(blocking, "db", std::make_shared<DbHandler>());
///
/// A handler added with an executor group runs all its callbacks on one executor thread of the
/// group (in order, per channel) while the rest of the pipeline stays on the channel's loop. What is
/// queued for executors is bounded: per channel (max_queued_bytes_per_channel) and for the whole
/// group (max_queued_bytes). At either bound the channel stops reading (auto-read off); it resumes
/// once its queue and the group's are below half their bounds. Message sizes are ByteBuf readable
/// bytes plus kTaskOverhead per queued event.
///
/// The group must outlive the channels that use it. Thread-safe unless noted.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "weft/core/event_loop_group.h"
#include "weft/core/unique_function.h"

namespace weft {

/// Threads for handlers that block (see the file's description). Thread-safe unless noted.
class ExecutorGroup {
 public:
  /// The group's settings.
  struct Options {
    std::size_t threads = 0;  ///< 0: one per CPU core
    /// Thread names are "<name>-<i>".
    std::string name = "weft-exec";
    /// Bytes queued for one channel's handlers before that channel stops reading.
    std::size_t max_queued_bytes_per_channel = std::size_t{1} << 20;
    /// Bytes queued for the whole group before the channels that queue more stop reading.
    std::size_t max_queued_bytes = std::size_t{64} << 20;
    /// Executor threads run under SCHED_BATCH, so that waking one never preempts an event loop
    /// (see executor_driver_factory in weft/core/io_driver.h); false keeps SCHED_OTHER.
    bool batch_scheduling = true;
  };
  /// Bytes counted for each queued event, on top of a ByteBuf's readable bytes.
  static constexpr std::size_t kTaskOverhead = 64;

  /// A group with the default Options.
  ExecutorGroup() : ExecutorGroup(Options{}) {}
  /// Throws std::invalid_argument if a bound is 0.
  explicit ExecutorGroup(Options options);
  ExecutorGroup(const ExecutorGroup&) = delete;
  ExecutorGroup& operator=(const ExecutorGroup&) = delete;

  /// The next executor, round-robin.
  EventLoop& next() noexcept { return loops_.next(); }
  /// The number of executor threads.
  std::size_t size() const noexcept { return loops_.size(); }
  /// The options the group was made with.
  const Options& options() const noexcept { return options_; }

  /// Bytes queued for all executors of the group now.
  std::size_t queued_bytes() const noexcept { return queued_.load(std::memory_order_acquire); }
  /// The most bytes that were queued at once.
  std::size_t peak_queued_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }
  /// Accounting used by the pipeline: add before queuing, release once run (returns the new total).
  void add_queued(std::size_t n) noexcept;
  /// Accounting used by the pipeline: releases `n` bytes once run; returns the new total.
  std::size_t release_queued(std::size_t n);
  /// Runs `fn` once (on whichever thread releases bytes, or at once) when the group's queue is at or
  /// below half of max_queued_bytes.
  void when_below_half(UniqueFunction<void()> fn);

  /// Shuts every executor down gracefully; the future completes when all have terminated.
  Future<void> shutdown_gracefully(Duration quiet_period = std::chrono::milliseconds(0),
                                   Duration timeout = std::chrono::seconds(15)) {
    return loops_.shutdown_gracefully(quiet_period, timeout);
  }
  /// Not from one of the group's threads.
  void await_termination() { loops_.await_termination(); }

 private:
  void run_waiters();

  Options options_;
  EventLoopGroup loops_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<std::size_t> peak_{0};
  std::mutex waiters_mutex_;
  std::vector<UniqueFunction<void()>> waiters_;
  std::atomic<std::size_t> waiter_count_{0};
};

}  // namespace weft
