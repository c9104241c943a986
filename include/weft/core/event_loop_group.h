#pragma once
/// @file
/// EventLoopGroup: N event loops, each on its own thread, created by one IoDriverFactory (the
/// transport). Channels are spread over the loops round-robin.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/event_loop.h"

namespace weft {

/// N event loops, each on its own thread, made by one transport; channels are spread over them
/// round-robin (next()).
class EventLoopGroup {
 public:
  /// How many loops, their names, and the CPUs they are pinned to.
  struct Options {
    /// How many loops (0: one per CPU core).
    std::size_t loop_count = 0;
    /// Loop i's thread is named "<name>-<i>".
    std::string name = "weft";
    /// Loop i is pinned to `cpus[i % cpus.size()]` (first_allowed_cpus(n) pins n loops one per CPU,
    /// as long as there are enough); empty: no loop is pinned. Every CPU must be one the creating
    /// thread may run on (allowed_cpus(), weft/core/cpu_affinity.h).
    std::vector<int> cpus;
  };

  /// Starts `loop_count` loops (0: one per CPU core) whose threads are named "<name>-<i>".
  explicit EventLoopGroup(IoDriverFactory& factory, std::size_t loop_count = 0, std::string name = "weft");
  /// Starts the loops `options` describes. Throws std::invalid_argument, before any loop starts, for
  /// a CPU in Options::cpus that the creating thread may not run on.
  EventLoopGroup(IoDriverFactory& factory, Options options);
  /// Shuts down without a quiet period if still running, and waits for every loop to terminate.
  ~EventLoopGroup();
  EventLoopGroup(const EventLoopGroup&) = delete;
  EventLoopGroup& operator=(const EventLoopGroup&) = delete;

  /// Thread-safe. The next loop, round-robin.
  EventLoop& next() noexcept;
  /// Thread-safe.
  EventLoop& at(std::size_t index) noexcept { return *loops_[index]; }
  /// Thread-safe.
  std::size_t size() const noexcept { return loops_.size(); }
  /// Thread-safe. The transport that made this group's drivers.
  IoDriverFactory& driver_factory() const noexcept { return factory_; }

  /// Thread-safe. Shuts every loop down gracefully; the future completes when all have terminated.
  Future<void> shutdown_gracefully(Duration quiet_period = std::chrono::seconds(2),
                                   Duration timeout = std::chrono::seconds(15));
  /// Thread-safe, not from one of the group's loops. Blocks until every loop has terminated.
  void await_termination();

 private:
  IoDriverFactory& factory_;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::atomic<std::size_t> next_index_{0};
  Promise<void> terminated_;
  std::atomic<std::size_t> remaining_;
};

}  // namespace weft
