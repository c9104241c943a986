#pragma once
/// @file
/// LeakDetector: finds ByteBuf blocks that are never released.
///
/// ByteBuf is RAII, so the leak Netty hunts (a buffer garbage-collected without release()) cannot
/// happen. What can: a handle that is never destroyed -- held forever in a map or a queue that only
/// grows, or owned by an object that itself leaks (a shared_ptr cycle, a `new` without `delete`).
/// Such a block is "still alive" where it should not be, so weft reports blocks that are alive at a
/// check point: report_live() (tests call it at the end of the run), the destruction of the
/// allocator that made them, and process exit (when enabled through WEFT_LEAK_DETECTION).
///
/// Levels (process-wide; WEFT_LEAK_DETECTION=disabled|simple|paranoid sets it at start-up):
///   disabled  nothing is tracked; the cost is one relaxed load per allocation and one branch per free.
///   simple    one block in sampling_interval() (default 128) is tracked, with its allocation site
///             (the caller's address) and the last touch() site.
///   paranoid  every block is tracked with a backtrace of its allocation and of its last touch.
/// A tracked block's record goes away when the block returns to its allocator. Tracking takes a global
/// mutex and allocates; it is meant for tests and debugging, not for production at paranoid.
///
/// Thread contract: every function is thread-safe.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft {

class ByteBufAllocator;
struct ByteBufStorage;

/// How many blocks are tracked: none, a sample (with the allocation site), or all (with backtraces).
enum class LeakDetectionLevel { disabled, simple, paranoid };

/// What the detector knows about one block still alive.
struct LeakReport {
  /// The allocator that made the block.
  const ByteBufAllocator* allocator = nullptr;
  /// The block's capacity in bytes.
  std::size_t capacity = 0;
  std::uint64_t serial = 0;          ///< order of tracking (see LeakDetector::checkpoint())
  std::string context;               ///< LeakDetector::set_context() label when it was allocated
  std::string allocated_at;          ///< frames, one per line ("" when unknown)
  std::string last_touched_at;       ///< hint and frames of the last ByteBuf::touch(), or ""
  /// Several lines, starting with "LEAK: ByteBuf ...".
  std::string to_string() const;
};

/// The process-wide leak detector (see the file's description); static members only.
class LeakDetector {
 public:
  /// Thread-safe.
  static void set_level(LeakDetectionLevel level) noexcept;
  /// Thread-safe.
  static LeakDetectionLevel level() noexcept;
  /// Thread-safe. Simple level tracks one block in n (n >= 1).
  static void set_sampling_interval(std::uint32_t n) noexcept;
  /// Thread-safe.
  static std::uint32_t sampling_interval() noexcept;
  /// Thread-safe. A label stored with every block tracked from now on (e.g. the running test's name);
  /// the string must stay valid until the next call. Null clears it.
  static void set_context(const char* label) noexcept;

  /// Thread-safe. The serial the next tracked block gets: live_buffers(checkpoint()) later lists only
  /// blocks tracked after this call.
  static std::uint64_t checkpoint() noexcept;
  /// Thread-safe. Tracked blocks alive now with serial >= since.
  static std::size_t live_count(std::uint64_t since = 0);
  /// Thread-safe. Reports of the tracked blocks alive now with serial >= since.
  static std::vector<LeakReport> live_buffers(std::uint64_t since = 0);
  /// Thread-safe. Reports every tracked block alive now with serial >= since, not reported before, as
  /// a leak seen at `where`: to stderr, or to the innermost ScopedCapture. Returns how many.
  static std::size_t report_live(const char* where, std::uint64_t since = 0);
  /// Thread-safe. Called by an allocator being destroyed: reports its tracked blocks still alive and
  /// forgets them (their memory is the allocator's problem now). Returns how many.
  static std::size_t report_allocator_destroyed(const ByteBufAllocator* allocator);
  /// Thread-safe. Leaks reported so far outside any ScopedCapture (tests fail when it is not 0).
  static std::uint64_t reported_count() noexcept;

  /// While alive, reports go to reports() instead of stderr and do not count in reported_count().
  /// Captures nest; the innermost gets the reports. Create and destroy on the same thread.
  class ScopedCapture {
   public:
    ScopedCapture();
    ~ScopedCapture();
    ScopedCapture(const ScopedCapture&) = delete;
    ScopedCapture& operator=(const ScopedCapture&) = delete;
    /// Not thread-safe against concurrent reports.
    const std::vector<LeakReport>& reports() const noexcept { return reports_; }

   private:
    friend class LeakDetector;
    std::vector<LeakReport> reports_;
    ScopedCapture* previous_;
  };

 private:
  friend struct LeakDetectorAccess;
  static void add_to_capture(ScopedCapture* capture, LeakReport&& report) {
    capture->reports_.push_back(static_cast<LeakReport&&>(report));
  }
};

namespace detail {
// Hooks for ByteBuf and ByteBufAllocator (not for users).
extern std::atomic<int> leak_level;  // a LeakDetectionLevel
inline bool leak_tracking_enabled() noexcept { return leak_level.load(std::memory_order_relaxed) != 0; }
void leak_maybe_track(ByteBufStorage* storage, const void* caller) noexcept;
void leak_untrack(ByteBufStorage* storage) noexcept;
void leak_moved(ByteBufStorage* storage) noexcept;  // the block's record follows a reallocation
void leak_touch(ByteBufStorage* storage, const char* hint, const void* caller) noexcept;
}  // namespace detail

}  // namespace weft
