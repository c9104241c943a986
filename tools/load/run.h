#pragma once
// The core every mode of weft-load runs on (h2load's shape: one worker and its stats per loop, the
// protocols behind a session interface): the clock, the run's deadline and stop, connect failures,
// timeouts, progress once a second, and the merge of the threads' counts into one.
// A Run holds one Tally per thread that counts, waits with progress until the deadline or until
// every tally has finished, and merges them. A LoopRun is a Run on event loops, one Worker (a Tally
// with its loop, sessions and timeouts) per loop: a mode (http_load.cc, h2_load.cc, grpc_load.cc,
// stream_load.cc) subclasses Worker for its loop-side state and makes its connections Sessions.
// echo_load.cc's blocking threads count in a Run of their own. The calling thread drives the run.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "histogram.h"
#include "report.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"

namespace weft::load {

using Nanos = std::int64_t;

// The run's clock (weft's Clock) in nanoseconds. Thread-safe.
inline Nanos now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Called about once per second from the calling thread: seconds elapsed, then two counts that
// depend on the mode (ProgressCounts): responses and errors so far (http, h2, grpc; echo: round trips
// and errors), or requests and responses so far (stream: messages sent and received).
using ProgressFn = std::function<void(double, std::uint64_t, std::uint64_t)>;

// Which two counts a run's ProgressFn gets.
enum class ProgressCounts { responses_errors, requests_responses };

// What one tally counts; the run's result is every tally's, merged. Not thread-safe.
struct Stats {
  std::uint64_t requests = 0;   // sent (gRPC: calls; stream: messages)
  std::uint64_t responses = 0;  // complete responses received (gRPC, stream: messages; echo: round trips)
  std::uint64_t bytes_read = 0;
  Histogram latency;  // nanoseconds
  Errors errors;

  void merge(const Stats& other) noexcept;
};

// "Connection refused", "connect timed out", or the exception's what(): why a connect failed.
// Thread-safe (pure).
std::string connect_failure_reason(const std::exception_ptr& error);

// Connections that could not be made: their count (Errors::connect) and the first one's reason,
// for the message of a run that made none. Thread-safe.
class ConnectFailures {
 public:
  // Counts one failure. Thread-safe.
  void add(std::string_view reason);
  // Thread-safe.
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  // The first failure's reason ("" when none). Thread-safe.
  std::string first_reason() const;

 private:
  std::atomic<std::uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string first_reason_;
};

// Waits for every connect; counts each that failed in `failures` with reason(error), and returns
// what the others gave, in order. Calling thread (blocks).
template <typename T, typename Reason>
std::vector<T> await_connects(std::vector<Future<T>>& connects, ConnectFailures& failures, Reason reason) {
  std::vector<T> made;
  for (auto& f : connects) {
    f.wait();
    if (auto error = f.error()) {
      failures.add(reason(error));
    } else {
      made.push_back(f.get());
    }
  }
  return made;
}

// How long each of a run's connects took, from the call to its future's completion. Calling thread,
// except the futures' listeners (each writes its own slot).
class ConnectTimes {
 public:
  explicit ConnectTimes(std::size_t count)
      : began_(count, 0), took_(count), pending_(static_cast<std::ptrdiff_t>(count)) {}

  // Times connect `index`, which `future` completes; call right after issuing it.
  template <typename T>
  void watch(std::size_t index, Future<T>& future) {
    began_[index] = now_ns();
    future.add_listener([this, index](const Future<T>& f) {
      took_[index].store(f.is_success() ? now_ns() - began_[index] : -1, std::memory_order_relaxed);
      pending_.count_down();
    });
  }
  // The successful connects' times (ns), once every watched future has completed (waits for them).
  Histogram histogram();

 private:
  std::vector<Nanos> began_;
  std::vector<std::atomic<Nanos>> took_;
  std::latch pending_;
};

// An open loop's schedule (--rate): request k is due at start + k / rate, whatever answers came.
// http, h2 and grpc keep one per loop. Not thread-safe (its loop's).
class OpenLoopSchedule {
 public:
  // Requests per second; 0: no schedule (the closed loop).
  void set_rate(double rate) noexcept { interval_ns_ = rate > 0 ? 1e9 / rate : 0; }
  bool active() const noexcept { return interval_ns_ > 0; }
  void start(Nanos at) noexcept { start_ = at; }
  // How many requests are due by `now`, counted from the first.
  std::uint64_t due_by(Nanos now) const noexcept {
    return static_cast<std::uint64_t>(static_cast<double>(now - start_) / interval_ns_) + 1;
  }
  // The next request: its index and intended send time; advance() once it has left.
  std::uint64_t next_index() const noexcept { return next_; }
  Nanos next_time() const noexcept { return start_ + static_cast<Nanos>(static_cast<double>(next_) * interval_ns_); }
  void advance() noexcept { ++next_; }

 private:
  double interval_ns_ = 0;
  Nanos start_ = 0;
  std::uint64_t next_ = 0;
};

// The open loop's dispatch, shared by http, h2 and ws: hands the requests due by `now` to the
// connections with room, round robin from where the last pass stopped, and wakes its worker when
// the next request is due. Requests due while every connection is full wait for a response to free
// room (each response pumps again); they keep their intended times, so the wait counts in their
// latency. Not thread-safe (its worker's loop).
class OpenLoopPump {
 public:
  // What give() did with the request it was handed.
  enum class Given : std::uint8_t {
    sent,      // the connection took it
    not_sent,  // it did not (the next connection may)
    stop,      // it did not, and the connections changed (one closed): end this pass
    spent,     // none left to send (-n's count): end this pass
  };

  OpenLoopSchedule schedule;

  // One pass over the n connections (at(i)): while a request is due, give(c, intended time) for
  // the next connection c with room (c.room() > 0). Returns whether give() said spent.
  template <class At, class Give>
  bool give_due(Nanos now, std::size_t n, At&& at, Give&& give) {
    due_ = schedule.due_by(now);
    std::size_t full_in_a_row = 0;
    while (schedule.next_index() < due_ && n > 0 && full_in_a_row < n) {
      auto& c = at(cursor_);
      cursor_ = (cursor_ + 1) % n;
      if (c.room() == 0) {
        ++full_in_a_row;
        continue;
      }
      full_in_a_row = 0;
      switch (give(c, schedule.next_time())) {
        case Given::sent: schedule.advance(); break;
        case Given::not_sent: break;
        case Given::stop: return false;
        case Given::spent: return true;
      }
    }
    return false;
  }
  // Whether the last pass gave every request then due: the next one waits for its time (wake_at_next).
  bool caught_up() const noexcept { return schedule.next_index() >= due_; }
  // Once, until it runs: fn() on `loop` when the next request is due.
  template <class Fn>
  void wake_at_next(EventLoop& loop, Nanos now, Fn fn) {
    if (wake_armed_) return;
    wake_armed_ = true;
    loop.schedule(std::chrono::nanoseconds(std::max<Nanos>(0, schedule.next_time() - now)), [this, fn = std::move(fn)] {
      wake_armed_ = false;
      fn();
    });
  }
  // A connection left: `n` remain.
  void connections_now(std::size_t n) noexcept {
    if (cursor_ >= n) cursor_ = 0;
  }

 private:
  std::uint64_t due_ = 0;   // requests due by the last pass's time
  std::size_t cursor_ = 0;  // the connection the next due request tries first
  bool wake_armed_ = false;
};

// One connection as the core sees it: requests outstanding since some point, and how to end it.
// Loop thread only (its worker's).
class Session {
 public:
  virtual std::size_t in_flight() const noexcept = 0;
  // When the session last sent into an idle connection or received a response.
  virtual Nanos last_progress() const noexcept = 0;
  // Gives up on the outstanding requests (the caller counts them) and closes.
  virtual void abandon() = 0;
  virtual void close_connection() = 0;

 protected:
  ~Session() = default;
};

class Run;

// What one thread of a run counts, and the counts it shows the progress report: its owner's only
// (a worker's loop, or a mode's thread), except where a method says otherwise.
class Tally {
 public:
  explicit Tally(Run& run) : run_(run) {}
  virtual ~Tally() = default;
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

  // Makes the counts so far visible to the progress report.
  void publish() noexcept {
    progress_requests_.store(stats.requests, std::memory_order_relaxed);
    progress_responses_.store(stats.responses, std::memory_order_relaxed);
    progress_errors_.store(stats.errors.total(), std::memory_order_relaxed);
  }
  // Progress counts as last published. Thread-safe.
  std::uint64_t published_requests() const noexcept { return progress_requests_.load(std::memory_order_relaxed); }
  std::uint64_t published_responses() const noexcept { return progress_responses_.load(std::memory_order_relaxed); }
  std::uint64_t published_errors() const noexcept { return progress_errors_.load(std::memory_order_relaxed); }

  // Zeroes the counts: the warm-up is over, what comes from now on is the run's (LoopRun::warm_up).
  // A mode that counts more than `stats` zeroes that too.
  virtual void restart_counting() {
    stats = Stats{};
    publish();
  }

  // This tally has nothing more to count; the run ends when every tally has said so (or at its
  // deadline). Publishes first. Once; later calls do nothing.
  void finish();

  Stats stats;

 private:
  Run& run_;
  bool finished_ = false;
  std::atomic<std::uint64_t> progress_requests_{0};
  std::atomic<std::uint64_t> progress_responses_{0};
  std::atomic<std::uint64_t> progress_errors_{0};
};

// One event loop's share of a LoopRun: a Tally with its loop, its open sessions, whether it sends,
// and the timeout check. Loop thread only, except where a method says otherwise.
class Worker : public Tally {
 public:
  // timeout_ns: sessions with requests outstanding and no progress for this long are abandoned,
  // checked every 100 ms; 0: never.
  Worker(Run& run, EventLoop& loop, Nanos timeout_ns) : Tally(run), loop_(loop), timeout_ns_(timeout_ns) {}

  // Thread-safe.
  EventLoop& loop() const noexcept { return loop_; }
  bool began() const noexcept { return began_; }
  bool stopping() const noexcept { return stopping_; }
  bool sending() const noexcept { return began_ && !stopping_; }

  // The run ends: no more sending, every session closed.
  void stop();

 protected:
  // The run begins on this loop: sending() from now on, and the timeout check starts.
  void begin();
  void add_session(Session* s) { sessions_.push_back(s); }
  void remove_session(Session* s) { std::erase(sessions_, s); }
  const std::vector<Session*>& sessions() const noexcept { return sessions_; }

 private:
  void check_timeouts();

  EventLoop& loop_;
  Nanos timeout_ns_;
  std::vector<Session*> sessions_;
  bool began_ = false;
  bool stopping_ = false;
  TimerId timeout_timer_ = 0;
};

// The calling thread's side of a run: the tallies, the wait until the deadline with progress, and
// the merged stats. Calling thread only, except where a method says otherwise.
class Run {
 public:
  Run() = default;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // Adds `count` plain tallies, for threads of the mode's own (before wait).
  void add_tallies(std::size_t count);
  std::size_t size() const noexcept { return tallies_.size(); }
  Tally& tally(std::size_t index) const noexcept { return *tallies_[index]; }
  ConnectFailures& connect_failures() noexcept { return connect_failures_; }

  // Sleeps until `end` or until every tally has finished, calling progress (if set) about once a
  // second after `start` with the tallies' published counts, the two that `counts` names.
  void wait(TimePoint start, TimePoint end, const ProgressFn& progress,
            ProgressCounts counts = ProgressCounts::responses_errors);
  // Every tally's stats together (once no thread counts any more).
  Stats merge() const;

  // A tally finished (Tally::finish). Thread-safe.
  void tally_finished();

 protected:
  void add(std::unique_ptr<Tally> tally) { tallies_.push_back(std::move(tally)); }
  // Destroys the tallies (a LoopRun's workers go before its loops).
  void clear() noexcept { tallies_.clear(); }

 private:
  std::vector<std::unique_ptr<Tally>> tallies_;
  ConnectFailures connect_failures_;
  std::mutex mutex_;
  std::condition_variable finished_cv_;
  std::size_t finished_ = 0;
};

// A Run on event loops, one Worker each: the loops, the stop, the shutdown. Calling thread only,
// except where a method says otherwise.
class LoopRun final : public Run {
 public:
  explicit LoopRun(int threads);
  ~LoopRun() { clear(); }

  EventLoopGroup& loops() noexcept { return loops_; }
  // Makes each loop's worker: make(loop) for every loop in order.
  void add_workers(const std::function<std::unique_ptr<Worker>(EventLoop&)>& make);
  template <typename W>
  W& worker(std::size_t index) const noexcept {
    return static_cast<W&>(*workers_[index]);
  }
  // The worker of the loop a channel runs on. Thread-safe once the workers are added.
  template <typename W>
  W& worker_of(EventLoop& loop) const noexcept {
    return static_cast<W&>(worker_of_loop(loop));
  }

  // Lets the load run uncounted for `seconds` after `start` (less if every worker finishes first), then
  // zeroes every worker's counts on its loop, and returns when the counted part begins: `start` when
  // `seconds` is 0. Responses to requests sent before then still arrive, and count as responses.
  TimePoint warm_up(TimePoint start, double seconds);
  // Stops every worker on its loop and returns once all have.
  void stop();
  // Lets the loops end (after stop). Blocks up to about 2 s.
  void shutdown();

 private:
  Worker& worker_of_loop(EventLoop& loop) const noexcept;
  // Runs fn on every worker's loop and returns once all have.
  void on_every_worker(const std::function<void(Worker&)>& fn);

  EventLoopGroup loops_;
  std::vector<Worker*> workers_;  // owned by the Run, in the loops' order
};

// What a load client's connections need for https:// or wss://: the context (ALPN `protocol`, the
// server's certificate verified unless `insecure`, trusted from `ca_file` when given) and the
// handler's options (the name sent and checked, the handshake's timeout). Throws LoadError.
// Thread-safe.
struct ClientTls {
  TlsContextPtr context;
  TlsHandlerOptions options;
};
ClientTls client_tls(std::string_view protocol, const std::string& host, bool insecure, const std::string& ca_file,
                     double timeout_s);

// The end of a run that started at `start` and lasts `seconds` (0: no deadline). Thread-safe (pure).
TimePoint deadline_after(TimePoint start, double seconds) noexcept;
// Seconds from `start` to now. Thread-safe.
double seconds_since(TimePoint start) noexcept;

}  // namespace weft::load
