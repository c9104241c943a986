#pragma once
/// @file
/// Stalls: a unit of an event loop's work -- a task, a timer, a loop callback, the I/O events of one
/// poll, and, once those stalled, each channel's read from its transport, and once that stalled, each
/// of its handlers' reads -- that ran longer than the loop's stall threshold. Each level is timed
/// only where the one above it stalled: a loop that never stalls reads the clock once more per poll,
/// not per read. The loop watches only while its times
/// are observed (EventLoop::observe_times) and its threshold is not zero; then each unit costs the
/// clock reads around it, and nothing more unless it stalled. Units nest (a task fires a read
/// through handlers): a stall is counted once per outermost unit and named by the innermost unit
/// that ran past the threshold, so a blocking handler is named rather than the read or task that
/// reached it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_set>

#include "weft/core/clock.h"

namespace weft::detail {

/// One loop's stall accounting. Loop thread only, except stalls() (any thread).
class StallWatch {
 public:
  /// Names remembered per loop: a stall whose name is among them is counted, not logged again; past
  /// this many names, stalls are counted and the first one past it logs that no more names are.
  static constexpr std::size_t kMaxLoggedNames = 256;

  /// Watches for the loop named `loop_name` (kept by reference: the loop's own name).
  explicit StallWatch(const std::string& loop_name) noexcept : loop_name_(loop_name) {}

  /// Loop thread only. The threshold of the turn now starting (zero: not watching this turn).
  void set_threshold(Duration threshold) noexcept { threshold_ = threshold; }
  /// Loop thread only. A unit starts (now: its start time, read by the caller).
  void enter() noexcept { ++depth_; }
  /// Loop thread only. The unit entered last, begun at `began`, ends at `now`; when it ran past the
  /// threshold, `name()` is asked for its name (called only then), the stall reported, and true
  /// returned.
  template <class Name>
  bool leave(TimePoint began, TimePoint now, std::string_view kind, Name&& name) {
    const bool stalled = now - began > threshold_ && threshold_.count() > 0;
    if (stalled) [[unlikely]]
      report(kind, name(), now - began);
    if (--depth_ == 0) reported_ = false;
    return stalled;
  }
  /// Loop thread only. The driver's wait returned (note_io_ready()): what the poll runs from now to
  /// its end is one unit, the I/O of one poll.
  void io_ready() noexcept {
    if (io_entered_) return;
    io_entered_ = true;
    io_began_ = Clock::now();
    enter();
  }
  /// Loop thread only. The poll returned at `now`: ends the unit io_ready() began, if any. When it
  /// stalled, the loop's channel reads are timed from then on (reads_timed()).
  void io_done(TimePoint now) {
    if (!io_entered_) return;
    io_entered_ = false;
    if (leave(io_began_, now, "I/O",
              [] { return std::string_view("one poll's events; channel reads timed from now"); }))
      reads_timed_ = true;
  }
  /// Loop thread only. Whether each channel read is a unit (t_stall_watch): once a poll's I/O stalled.
  bool reads_timed() const noexcept { return reads_timed_; }

  /// Stalls so far. Thread-safe (relaxed).
  std::uint64_t stalls() const noexcept { return stalls_.load(std::memory_order_relaxed); }

  /// Thread-safe. A readable name of a type: the demangled name (a lambda's names the function
  /// that made it).
  static std::string type_name(const std::type_info& type);

 private:
  // Counts and logs a stall, unless a unit inside the same outermost unit was reported already.
  void report(std::string_view kind, std::string_view name, Duration took);

  const std::string& loop_name_;
  Duration threshold_{0};
  int depth_ = 0;
  bool reported_ = false;     // a stall was reported inside the outermost unit under way
  bool io_entered_ = false;   // between io_ready() and io_done()
  bool reads_timed_ = false;  // a poll's I/O stalled: channel reads are units
  TimePoint io_began_{};
  bool names_full_logged_ = false;
  std::atomic<std::uint64_t> stalls_{0};  // written by the loop thread only
  std::unordered_set<std::string> logged_names_;
};

/// The watch of the loop running on this thread while it times each channel read this turn (a poll's
/// I/O stalled before); null otherwise (so that a read costs one thread-local load when nobody watches).
extern constinit thread_local StallWatch* t_stall_watch;
/// The watch of the loop running on this thread while it watches for stalls this turn; null otherwise.
extern constinit thread_local StallWatch* t_poll_watch;

/// Loop thread only. For I/O drivers: the poll's wait has returned and the events it brought are run
/// now (one unit of the loop's work while stalls are watched; one thread-local load otherwise).
inline void note_io_ready() noexcept {
  if (StallWatch* watch = t_poll_watch) [[unlikely]]
    watch->io_ready();
}

}  // namespace weft::detail
