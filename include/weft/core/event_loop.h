#pragma once
/// @file
/// EventLoop: one thread that owns a set of channels, runs posted tasks and timers, and waits for I/O
/// through its IoDriver.
///
/// Thread contract (checked in debug builds by the callers that need it): methods marked "loop
/// thread only" must run on the loop's thread; everything else is safe from any thread.
///
/// A loop runs either on a thread of its own (start()), on the caller's thread (run()), or -- for
/// tests -- by hand on the thread that created it with a manual clock (Options::manual_clock), where
/// run_pending() and advance_time() do the work of one iteration.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/core/clock.h"
#include "weft/core/future.h"
#include "weft/core/io_driver.h"
#include "weft/core/loop_callback.h"
#include "weft/core/mpsc_queue.h"
#include "weft/core/stall_watch.h"
#include "weft/core/unique_function.h"

namespace weft {

/// Identifies a timer made by EventLoop::schedule(), for EventLoop::cancel().
using TimerId = std::uint64_t;

/// Something a loop must close when it shuts down (a channel). Intrusively linked: tracking a
/// resource does not allocate.
class LoopResource {
 public:
  virtual ~LoopResource() = default;
  /// Loop thread only. Begin closing (politely: a channel may take until the shutdown timeout);
  /// the resource untracks itself once closed.
  virtual void close_for_shutdown() = 0;
  /// Loop thread only. The shutdown timeout has passed and the resource is still open: close now.
  virtual void abort_for_shutdown() { close_for_shutdown(); }

 private:
  friend class EventLoop;
  LoopResource* resource_prev_ = nullptr;
  LoopResource* resource_next_ = nullptr;
  bool tracked_ = false;
  bool close_requested_ = false;  // shutdown asked it to close (once per tracking)
};

/// One thread that owns a set of channels, runs posted tasks and timers, and waits for I/O through
/// its IoDriver (see the file's description for the thread contract).
class EventLoop {
 public:
  /// The loop's settings.
  struct Options {
    /// The thread's name, also used in log lines.
    std::string name = "weft-loop";
    bool manual_clock = false;  ///< tests: time moves only by advance_time(); driven by run_pending()
    /// Tasks posted from other threads run at most this many per loop iteration.
    int max_remote_tasks_per_turn = 1024;
    /// What made `driver` (an EventLoopGroup's transport sets it): lets a bootstrap open a channel on
    /// this very loop. Null for a loop made on its own.
    IoDriverFactory* driver_factory = nullptr;
    /// The CPU the thread start() makes is pinned to (its only allowed CPU); -1: not pinned. The
    /// constructor throws std::invalid_argument for a CPU the creating thread may not run on.
    int cpu = -1;
    /// A task, timer, loop callback or a poll's I/O events (and, on a loop whose I/O stalled, each
    /// channel read; in a pipeline whose read stalled, each handler's read) that runs longer than
    /// this is a stall:
    /// counted (Times::stalls) and logged once per name (detail::StallWatch). Watched only while
    /// times are observed (observe_times); zero: never. See set_stall_threshold().
    Duration stall_threshold = std::chrono::milliseconds(100);
  };

  /// A loop on `driver`; not running until start() or run().
  EventLoop(std::unique_ptr<IoDriver> driver, Options options);
  /// A loop on `driver` with the default Options.
  explicit EventLoop(std::unique_ptr<IoDriver> driver) : EventLoop(std::move(driver), Options{}) {}
  /// Shuts the loop down (no quiet period) if it still runs, joins its thread, and waits until no
  /// KeepAlive is held. Not from the loop thread.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Not thread-safe; once. Starts a thread that runs the loop (pinned to Options::cpu when set,
  /// before it runs anything).
  void start();
  /// Runs the loop on the calling thread until it terminates. Once.
  void run();

  /// Thread-safe. True on the thread that runs this loop.
  bool in_loop() const noexcept { return owner_.load(std::memory_order_acquire) == std::this_thread::get_id(); }
  /// Thread-safe. Debug builds abort with a message naming `operation` when called off the loop
  /// thread; release builds check nothing.
  void assert_in_loop([[maybe_unused]] const char* operation) const noexcept {
#ifndef NDEBUG
    if (!in_loop()) abort_not_in_loop(operation);
#endif
  }
  /// Thread-safe. Logs that `operation` ran off the loop thread and aborts (assert_in_loop's slow path).
  [[noreturn]] void abort_not_in_loop(const char* operation) const noexcept;
  /// Thread-safe. The loop running on the calling thread, or null.
  static EventLoop* current() noexcept;

  /// Thread-safe. Queues `task` to run on the loop. Throws RejectedExecutionError once terminated
  /// (the task is destroyed unrun).
  ///
  /// Termination rule: a task is either accepted -- and then it runs on the loop, at the latest
  /// during the final drain of terminate, before termination_future() completes -- or rejected, and
  /// nothing in between. Tasks posted while the loop is shutting down are accepted; from the loop's
  /// own thread they are accepted until the final drain ends. Once it ended every post is rejected:
  /// a task racing with the end is handed back, never dropped in the queue. Timers still pending at
  /// termination are destroyed unrun (a sleeping coroutine is resumed with EventLoopTerminatedError,
  /// a promise a timer holds breaks); future listeners whose loop rejects them run on the thread
  /// that completes the future.
  void execute(UniqueFunction<void()> task);
  /// Thread-safe. As execute(), but returns false instead of throwing and then leaves `task` to the
  /// caller, untouched (whoever cannot post it decides what to do with it).
  bool try_execute(UniqueFunction<void()>&& task) noexcept;

  /// Thread-safe. Runs `task` once after `delay`. Returns an id for cancel().
  TimerId schedule(Duration delay, UniqueFunction<void()> task);
  /// Thread-safe. Runs `task` after `initial_delay`, then every `period` measured from the previous
  /// deadline (fixed rate), until cancelled or the loop terminates.
  TimerId schedule_at_fixed_rate(Duration initial_delay, Duration period, UniqueFunction<void()> task);
  /// Thread-safe. Cancels a timer. On the loop thread returns whether it was still pending; from other
  /// threads the cancel is queued (ordered after a schedule() made earlier by the same thread) and
  /// the result is true.
  bool cancel(TimerId id);

  /// Thread-safe. Starts a graceful shutdown: closes every tracked channel, keeps running tasks, and
  /// terminates once no task has run for `quiet_period`, or at `timeout` at the latest. Then drains
  /// the remaining tasks. Idempotent; the returned future completes on termination.
  Future<void> shutdown_gracefully(Duration quiet_period = std::chrono::seconds(2),
                                   Duration timeout = std::chrono::seconds(15));
  /// Thread-safe. Completes when the loop has terminated (listeners run on the terminating thread).
  Future<void> termination_future() const { return terminated_.future(); }
  /// Thread-safe.
  bool is_shutting_down() const noexcept { return state_.load(std::memory_order_acquire) >= kShuttingDown; }
  /// Loop thread only. When a graceful shutdown under way gives up waiting for its channels
  /// (TimePoint::max() while the loop runs): what a blocking call made meanwhile may take at most.
  TimePoint shutdown_deadline() const noexcept;
  /// Thread-safe.
  bool is_terminated() const noexcept { return state_.load(std::memory_order_acquire) == kTerminated; }

  /// Loop thread only (any thread for a real clock). The loop's notion of now.
  TimePoint now() const noexcept;
  /// Loop thread only. now() as read the first time this turn of the loop asked (a turn: the
  /// I/O of one poll, then the timers and tasks due): later calls in the turn take no clock read,
  /// and trail now() by what ran since in the turn. For marks where a turn's length does not
  /// matter (the last activity of a connection, a request's start in a report); deadlines want now().
  TimePoint turn_time() noexcept {
    if (options_.manual_clock) return now();
    if (!turn_time_fresh_) {
      turn_time_ = now();
      turn_time_fresh_ = true;
    }
    return turn_time_;
  }
  /// Loop thread only; manual-clock loops. Moves time forward and runs what became due.
  void advance_time(Duration d);
  /// Loop thread only; manual-clock loops. Runs ready tasks and due timers until none are left.
  /// Returns the number run.
  std::size_t run_pending();

  /// Loop thread only. Channels register so that shutdown closes them.
  void track(LoopResource& resource) noexcept;
  /// Loop thread only.
  void untrack(LoopResource& resource) noexcept;
  /// Loop thread only.
  std::size_t tracked_count() const noexcept { return tracked_count_; }

  /// Thread-safe.
  IoDriver& driver() noexcept { return *driver_; }
  /// Thread-safe.
  const std::string& name() const noexcept { return options_.name; }
  /// Thread-safe. What made this loop's driver (see Options::driver_factory); null when unknown.
  IoDriverFactory* driver_factory() const noexcept { return options_.driver_factory; }

  /// Thread-safe. Sets the stall threshold (Options::stall_threshold; zero: stalls are not watched),
  /// from the loop's next turn.
  void set_stall_threshold(Duration threshold) noexcept {
    stall_threshold_ns_.store(threshold.count(), std::memory_order_relaxed);
  }
  /// Thread-safe. The stall threshold.
  Duration stall_threshold() const noexcept { return Duration(stall_threshold_ns_.load(std::memory_order_relaxed)); }

  /// Upper bounds of the task delay buckets (Times::task_delay_counts), in nanoseconds: 10 us,
  /// 100 us, 1 ms, 10 ms, 100 ms, 1 s; the last bucket counts the longer delays.
  static constexpr std::array<std::int64_t, 6> kTaskDelayBoundsNs = {10'000,     100'000,     1'000'000,
                                                                     10'000'000, 100'000'000, 1'000'000'000};

  /// Where the loop's thread spent its time and what it ran, for metrics: polling (waiting for I/O or
  /// a wake-up, and running what the poll returned) or busy (timers and tasks), its task queue, its
  /// timers and its stalls.
  struct Times {
    std::uint64_t poll_ns = 0;          ///< in the driver's poll since run() began
    std::uint64_t busy_ns = 0;          ///< between polls since run() began
    std::uint64_t turns = 0;            ///< polls so far
    std::uint64_t tasks_last_turn = 0;  ///< tasks and timers the last turn ran (the queue's depth then)
    std::uint64_t tasks_queued = 0;     ///< tasks posted from other threads while observed, not yet run
    std::uint64_t timers_pending = 0;   ///< timers scheduled and not yet due (at the last turn)
    std::uint64_t timers_fired = 0;     ///< timer runs so far
    std::uint64_t stalls = 0;           ///< stalls so far (Options::stall_threshold)
    std::uint64_t connections = 0;      ///< servers' connections open on the loop (count_connection; always counted)
    /// Tasks posted from other threads, by the time from execute() to their start, per bucket of
    /// kTaskDelayBoundsNs (not cumulative; the last counts what is over the last bound).
    std::array<std::uint64_t, kTaskDelayBoundsNs.size() + 1> task_delay_counts{};
    std::uint64_t task_delay_ns = 0;  ///< the sum of those delays
  };
  /// The loop's times so far (the turn in progress not yet counted), counted only while an observer
  /// is attached (observe_times): zero otherwise. Thread-safe: each value is one the loop wrote
  /// (relaxed; the values may be from different turns).
  Times times() const noexcept;
  /// A server's connection on this loop opened (`opened`) or closed: Times::connections. Called by
  /// the servers' connection tracking, once per connection each way. Thread-safe (a connection may be
  /// closed by another thread once the loop has terminated).
  void count_connection(bool opened) noexcept {
    if (opened) {
      connections_.fetch_add(1, std::memory_order_relaxed);
    } else {
      connections_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  /// Attaches (true) or detaches (false) an observer of times(): while at least one is attached, the
  /// loop reads the clock twice a turn, once after each task, timer and loop callback (its start is
  /// the end of what ran before: for the task delay and stalls) and, with a stall threshold, once
  /// when the poll's wait returns (and, once a poll's I/O stalled, around each channel read from a
  /// transport; in a pipeline whose read stalled, around each handler's read); a task posted from
  /// another thread carries the time it was posted. With none, it reads nothing. Thread-safe; the loop sees the change
  /// from its next turn. Calls must pair (each true undone by one false).
  void observe_times(bool attach) noexcept { times_observers_.fetch_add(attach ? 1 : -1, std::memory_order_relaxed); }

  /// Keeps the loop's memory (not its thread) valid while held: ~EventLoop waits until every
  /// KeepAlive is gone. For work on other threads that may post to the loop after it terminated
  /// (an executor running an offloaded handler): such a post then fails cleanly instead of touching
  /// freed memory. Hold one only for work that finishes on its own. Movable; thread-safe.
  class KeepAlive {
   public:
    KeepAlive() noexcept = default;
    /// Holds `loop`.
    explicit KeepAlive(EventLoop& loop) noexcept : loop_(&loop) {
      loop.keep_alive_count_.fetch_add(1, std::memory_order_relaxed);
    }
    /// Takes `o`'s hold.
    KeepAlive(KeepAlive&& o) noexcept : loop_(std::exchange(o.loop_, nullptr)) {}
    /// Releases the current hold, then takes `o`'s.
    KeepAlive& operator=(KeepAlive&& o) noexcept {
      if (this != &o) {
        reset();
        loop_ = std::exchange(o.loop_, nullptr);
      }
      return *this;
    }
    ~KeepAlive() { reset(); }
    /// Releases the hold; the loop must not be used through it afterwards.
    void reset() noexcept {
      // release: what this thread did with the loop happens before its destruction.
      if (loop_ != nullptr) std::exchange(loop_, nullptr)->keep_alive_count_.fetch_sub(1, std::memory_order_release);
    }

   private:
    EventLoop* loop_ = nullptr;
  };

 private:
  friend class LoopCallback;

  // On the thread start() made: Options::cpu becomes its only CPU.
  void pin_to_cpu(int cpu) noexcept;

  // Names a post from another thread uniquely among live threads (a node's address may be reused
  // once the loop has run and freed it).
  struct PostId {
    const void* producer;
    std::uint64_t serial;
    bool operator==(const PostId&) const noexcept = default;
  };
  struct RemoteTask : MpscNode {
    explicit RemoteTask(UniqueFunction<void()> f);
    UniqueFunction<void()> fn;
    PostId id;
    std::int64_t posted_ns = 0;  // Clock time of the post while the loop was observed, else 0
  };
  struct TimerEntry {
    TimePoint deadline;
    TimerId id;
    bool operator>(const TimerEntry& o) const noexcept {
      return deadline != o.deadline ? deadline > o.deadline : id > o.id;
    }
  };
  struct TimerRecord {
    UniqueFunction<void()> fn;
    Duration period;  ///< zero: one-shot
  };

  static constexpr int kRunning = 0, kShuttingDown = 1, kTerminated = 2;

  void loop_body();
  void add_timer(TimerId id, TimePoint deadline, Duration period, UniqueFunction<void()> fn);
  std::size_t run_due_timers();
  std::size_t run_tasks();
  std::size_t run_callbacks();
  Duration poll_timeout() const;
  bool confirm_shutdown();
  void close_tracked_resources();
  // At the shutdown timeout: closes what is still open (a connection still draining) at once.
  void abort_tracked_resources();
  void terminate();
  void wake_if_sleeping() noexcept;
  bool post(UniqueFunction<void()>& task);
  bool post_remote(UniqueFunction<void()>& task);
  bool post_after_termination(PostId pushed, UniqueFunction<void()>& task);
  // While observed: runs `task` (of `kind`), its start being mark_; counts its queue delay when it
  // was posted at `posted_ns` (non-zero) and reports a stall; moves mark_ to its end.
  void run_timed(UniqueFunction<void()>& task, std::string_view kind, std::int64_t posted_ns);
  void count_task_delay(std::int64_t delay_ns) noexcept;
  void cancel_timers() noexcept;

  Options options_;
  std::unique_ptr<IoDriver> driver_;
  std::atomic<std::thread::id> owner_{};
  bool draining_ = false;
  std::thread thread_;
  std::atomic<int> state_{kRunning};
  std::atomic<bool> sleeping_{false};
  std::atomic<TimerId> next_timer_id_{1};
  std::atomic<std::size_t> keep_alive_count_{0};
  // times(): written by the loop's thread only (a load and a store, no read-modify-write).
  std::atomic<std::uint64_t> poll_ns_{0};
  std::atomic<std::uint64_t> busy_ns_{0};
  std::atomic<std::uint64_t> turns_{0};
  std::atomic<std::uint64_t> tasks_last_turn_{0};
  std::atomic<int> times_observers_{0};  // observe_times(): the times are counted while > 0
  std::atomic<std::int64_t> stall_threshold_ns_{options_.stall_threshold.count()};
  std::atomic<std::uint64_t> remote_posted_{0};  // counted posts (posted_ns != 0): producers' fetch_add
  std::atomic<std::uint64_t> remote_run_{0};     // counted posts run (or handed back after termination)
  std::atomic<std::uint64_t> timers_pending_{0};
  std::atomic<std::uint64_t> timers_fired_{0};
  std::atomic<std::uint64_t> connections_{0};
  std::array<std::atomic<std::uint64_t>, kTaskDelayBoundsNs.size() + 1> task_delay_counts_{};
  std::atomic<std::uint64_t> task_delay_ns_{0};
  bool timed_ = false;  // this turn is observed: tasks are timed (loop thread)
  TimePoint mark_{};    // while timed_: the end of the unit that ran last (loop thread)
  detail::StallWatch stall_watch_{options_.name};

  MpscQueue remote_tasks_;
  // Termination handshake (slow paths only): the final drain and a post that raced with it.
  std::mutex termination_mutex_;
  bool final_drain_done_ = false;            // termination_mutex_
  std::vector<RemoteTask*> late_tasks_;      // termination_mutex_: popped after the final drain
  std::vector<UniqueFunction<void()>> local_tasks_;
  std::vector<UniqueFunction<void()>> running_tasks_;
  detail::LoopCallbackLink callbacks_;  // scheduled LoopCallbacks, in order (the list's sentinel)

  std::vector<TimerEntry> timer_heap_;  // min-heap; cancelled entries are skipped lazily
  std::unordered_map<TimerId, TimerRecord> timers_;

  LoopResource* resources_ = nullptr;
  std::size_t tracked_count_ = 0;

  // shutdown bookkeeping (loop thread)
  std::atomic<std::int64_t> quiet_period_ns_{0};
  std::atomic<std::int64_t> shutdown_timeout_ns_{0};
  std::atomic<std::int64_t> shutdown_requested_ns_{0};  // Clock time of the first shutdown_gracefully
  bool shutdown_started_ = false;
  TimePoint shutdown_start_{};
  TimePoint last_activity_{};
  Promise<void> terminated_;
  Duration manual_offset_{0};
  TimePoint manual_base_{};
  TimePoint turn_time_{};         // turn_time(): read this turn when turn_time_fresh_
  bool turn_time_fresh_ = false;  // cleared as each poll begins and ends, and by run_pending()
};

}  // namespace weft
