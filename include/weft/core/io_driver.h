#pragma once
/// @file
/// The engine under an event loop: waits for I/O readiness or completions, dispatches them, and can
/// be woken from another thread. epoll and io_uring implement it in the transport layer; BasicDriver
/// (below) serves loops that run only tasks and timers.

#include <memory>
#include <string_view>

#include "weft/core/clock.h"

namespace weft {

class EventLoop;

/// The engine under one event loop (see the file's description); a transport's factory makes one
/// per loop.
class IoDriver {
 public:
  virtual ~IoDriver() = default;
  /// Loop thread only. Waits up to `timeout` (negative: no limit, zero: do not block) for events
  /// and dispatches them. Returns when woken, on events, or at the timeout.
  virtual void poll(Duration timeout) = 0;
  /// Thread-safe. Makes a current or the next poll() return promptly.
  virtual void wakeup() noexcept = 0;
  /// Called once by the loop before its first poll, on the loop thread.
  virtual void attach(EventLoop& /*loop*/) {}
  /// Thread-safe. A close (of `owner`, a channel) or a shutdown (owner null: any call) was requested
  /// from another thread: a driver whose loop thread may sit in a blocking system call other than
  /// poll() (a blocking send) makes that call return.
  virtual void interrupt_blocking_call(const void* /*owner*/) noexcept {}
  /// Thread-safe. A graceful shutdown with `timeout` was requested from another thread: a driver
  /// whose loop thread may sit in a blocking system call makes that call return if it could outlast
  /// the timeout (by default: always).
  virtual void interrupt_for_shutdown(Duration /*timeout*/) noexcept { interrupt_blocking_call(nullptr); }
  /// Loop thread only. Called when the loop terminates, after its channels were closed and between
  /// runs of its last tasks: a driver whose kernel operations outlive a close (io_uring) completes
  /// them here, so that nothing completes after the loop is gone. Returns once none is in flight.
  virtual void drain() noexcept {}
};

/// Creates the driver for each loop of a group. A transport is a factory.
class IoDriverFactory {
 public:
  virtual ~IoDriverFactory() = default;
  /// Thread-safe.
  virtual std::unique_ptr<IoDriver> create_driver() = 0;
  /// Thread-safe.
  virtual std::string_view name() const noexcept = 0;
};

/// A driver with no I/O: blocks on an eventfd. For executors and tests of the loop itself.
class BasicDriver final : public IoDriver {
 public:
  /// batch_scheduling: the loop's thread runs under SCHED_BATCH (see executor_driver_factory).
  explicit BasicDriver(bool batch_scheduling = false);
  ~BasicDriver() override;
  BasicDriver(const BasicDriver&) = delete;
  BasicDriver& operator=(const BasicDriver&) = delete;
  void poll(Duration timeout) override;
  void wakeup() noexcept override;
  void attach(EventLoop& loop) override;

 private:
  int event_fd_;
  bool batch_scheduling_;
};

/// Makes BasicDriver instances; see basic_driver_factory() and executor_driver_factory().
class BasicDriverFactory final : public IoDriverFactory {
 public:
  /// batch_scheduling: the drivers' loops run under SCHED_BATCH.
  explicit BasicDriverFactory(bool batch_scheduling = false) : batch_scheduling_(batch_scheduling) {}
  std::unique_ptr<IoDriver> create_driver() override { return std::make_unique<BasicDriver>(batch_scheduling_); }
  std::string_view name() const noexcept override { return batch_scheduling_ ? "executor" : "basic"; }

 private:
  bool batch_scheduling_;
};

/// Process-wide factory of BasicDriver. Thread-safe.
IoDriverFactory& basic_driver_factory();

/// Process-wide factory of BasicDriver for executor threads (ExecutorGroup's default): each loop's
/// thread switches itself from SCHED_OTHER to SCHED_BATCH, the Linux policy whose threads do not
/// preempt others when they wake. An event loop that hands work to a sleeping executor then finishes
/// its turn, and the executor runs what was handed over in one go, instead of preempting the loop
/// for every task (one context switch per offloaded request when both share a CPU). The policy only
/// changes wake-up preemption: an executor still gets its fair share of CPU at its nice level. A
/// thread under another policy (real-time, say) is left as it is. Thread-safe.
IoDriverFactory& executor_driver_factory();

}  // namespace weft
