#include "weft/buffer/leak_detector.h"

#include <execinfo.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "weft/buffer/byte_buf.h"

namespace weft {

namespace detail {
constinit std::atomic<int> leak_level{static_cast<int>(LeakDetectionLevel::disabled)};
}  // namespace detail

struct LeakDetectorAccess {
  static void add(LeakDetector::ScopedCapture* c, LeakReport&& r) { LeakDetector::add_to_capture(c, std::move(r)); }
};

namespace {

constexpr int kMaxFrames = 16;

struct Record {
  Record* prev = nullptr;
  Record* next = nullptr;
  ByteBufStorage* storage = nullptr;
  const ByteBufAllocator* allocator = nullptr;
  std::size_t capacity = 0;
  std::uint64_t serial = 0;
  const char* context = nullptr;
  bool reported = false;
  int alloc_depth = 0;
  int touch_depth = 0;
  const char* touch_hint = nullptr;
  bool touched = false;
  void* alloc_frames[kMaxFrames];
  void* touch_frames[kMaxFrames];
};

constinit std::atomic<std::uint32_t> g_interval{128};
constinit std::atomic<const char*> g_context{nullptr};
constinit std::atomic<std::uint64_t> g_reported{0};
constinit thread_local std::uint32_t t_sample_counter = 0;

// Guards the record list, serials and the capture stack. Never destroyed (blocks may be released
// during static destruction).
std::mutex& records_mutex() {
  alignas(std::mutex) static unsigned char memory[sizeof(std::mutex)];
  static std::mutex* const m = new (memory) std::mutex();
  return *m;
}
Record* g_head = nullptr;  // guarded by records_mutex()
std::uint64_t g_next_serial = 1;  // guarded
LeakDetector::ScopedCapture* g_capture = nullptr;  // guarded

void unlink(Record* r) {
  if (r->prev != nullptr) r->prev->next = r->next; else g_head = r->next;
  if (r->next != nullptr) r->next->prev = r->prev;
  r->prev = r->next = nullptr;
}

std::string format_frames(void* const* frames, int depth) {
  if (depth <= 0) return {};
  std::string out;
  char** names = ::backtrace_symbols(frames, depth);
  for (int i = 0; i < depth; ++i) {
    out += "    ";
    if (names != nullptr) {
      out += names[i];
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%p", frames[i]);
      out += buf;
    }
    out += '\n';
  }
  std::free(names);
  return out;
}

LeakReport make_report(const Record& r) {
  LeakReport rep;
  rep.allocator = r.allocator;
  rep.capacity = r.capacity;
  rep.serial = r.serial;
  if (r.context != nullptr) rep.context = r.context;
  rep.allocated_at = format_frames(r.alloc_frames, r.alloc_depth);
  if (r.touched) {
    rep.last_touched_at = std::string("    hint: ") + (r.touch_hint != nullptr ? r.touch_hint : "(none)") + "\n" +
                          format_frames(r.touch_frames, r.touch_depth);
  }
  return rep;
}

// Under records_mutex().
void deliver(LeakReport&& rep, const char* where) {
  if (g_capture != nullptr) {
    LeakDetectorAccess::add(g_capture, std::move(rep));
    return;
  }
  g_reported.fetch_add(1, std::memory_order_relaxed);
  std::string text = rep.to_string();
  std::fprintf(stderr, "weft: %s (seen at %s)\n", text.c_str(), where);
}

int capture_frames(void** frames, const void* caller, bool paranoid) {
  if (paranoid) {
    const int n = ::backtrace(frames, kMaxFrames);
    // Skip the detector's own frames (this function and the hook that called it).
    const int skip = n > 2 ? 2 : 0;
    std::memmove(frames, frames + skip, static_cast<std::size_t>(n - skip) * sizeof(void*));
    return n - skip;
  }
  frames[0] = const_cast<void*>(caller);
  return caller != nullptr ? 1 : 0;
}

void report_at_exit() { LeakDetector::report_live("process exit"); }

// WEFT_LEAK_DETECTION sets the level at start-up and turns on the report at exit.
[[maybe_unused]] const bool g_env_applied = [] {
  const char* env = std::getenv("WEFT_LEAK_DETECTION");
  if (env == nullptr) return false;
  LeakDetectionLevel level = LeakDetectionLevel::disabled;
  if (std::strcmp(env, "simple") == 0) level = LeakDetectionLevel::simple;
  else if (std::strcmp(env, "paranoid") == 0) level = LeakDetectionLevel::paranoid;
  LeakDetector::set_level(level);
  if (level != LeakDetectionLevel::disabled) std::atexit(report_at_exit);
  return true;
}();

}  // namespace

std::string LeakReport::to_string() const {
  char head[160];
  std::snprintf(head, sizeof head, "LEAK: ByteBuf block #%llu of %zu bytes from allocator %p was never released",
                static_cast<unsigned long long>(serial), capacity, static_cast<const void*>(allocator));
  std::string out = head;
  if (!context.empty()) out += " (allocated during " + context + ")";
  out += "\n  allocated at:\n";
  out += allocated_at.empty() ? "    (unknown)\n" : allocated_at;
  out += "  last touched at:\n";
  out += last_touched_at.empty() ? "    (never touched)\n" : last_touched_at;
  return out;
}

void LeakDetector::set_level(LeakDetectionLevel level) noexcept {
  detail::leak_level.store(static_cast<int>(level), std::memory_order_relaxed);
}
LeakDetectionLevel LeakDetector::level() noexcept {
  return static_cast<LeakDetectionLevel>(detail::leak_level.load(std::memory_order_relaxed));
}
void LeakDetector::set_sampling_interval(std::uint32_t n) noexcept {
  g_interval.store(n == 0 ? 1 : n, std::memory_order_relaxed);
}
std::uint32_t LeakDetector::sampling_interval() noexcept { return g_interval.load(std::memory_order_relaxed); }
void LeakDetector::set_context(const char* label) noexcept { g_context.store(label, std::memory_order_relaxed); }

std::uint64_t LeakDetector::checkpoint() noexcept {
  std::lock_guard<std::mutex> lock(records_mutex());
  return g_next_serial;
}

std::size_t LeakDetector::live_count(std::uint64_t since) {
  std::lock_guard<std::mutex> lock(records_mutex());
  std::size_t n = 0;
  for (Record* r = g_head; r != nullptr; r = r->next) n += r->serial >= since ? 1 : 0;
  return n;
}

std::vector<LeakReport> LeakDetector::live_buffers(std::uint64_t since) {
  std::lock_guard<std::mutex> lock(records_mutex());
  std::vector<LeakReport> out;
  for (Record* r = g_head; r != nullptr; r = r->next) {
    if (r->serial >= since) out.push_back(make_report(*r));
  }
  return out;
}

std::size_t LeakDetector::report_live(const char* where, std::uint64_t since) {
  std::lock_guard<std::mutex> lock(records_mutex());
  std::size_t n = 0;
  for (Record* r = g_head; r != nullptr; r = r->next) {
    if (r->serial < since || r->reported) continue;
    r->reported = true;
    deliver(make_report(*r), where);
    ++n;
  }
  return n;
}

std::size_t LeakDetector::report_allocator_destroyed(const ByteBufAllocator* allocator) {
  std::lock_guard<std::mutex> lock(records_mutex());
  std::size_t n = 0;
  for (Record* r = g_head; r != nullptr;) {
    Record* next = r->next;
    if (r->allocator == allocator) {
      if (!r->reported) deliver(make_report(*r), "allocator destruction");
      unlink(r);
      r->storage->leak_record = nullptr;  // the block stays mapped; its late release must not find us
      r->~Record();
      std::free(r);
      ++n;
    }
    r = next;
  }
  return n;
}

std::uint64_t LeakDetector::reported_count() noexcept { return g_reported.load(std::memory_order_relaxed); }

LeakDetector::ScopedCapture::ScopedCapture() {
  std::lock_guard<std::mutex> lock(records_mutex());
  previous_ = g_capture;
  g_capture = this;
}

LeakDetector::ScopedCapture::~ScopedCapture() {
  std::lock_guard<std::mutex> lock(records_mutex());
  g_capture = previous_;
}

namespace detail {

void leak_maybe_track(ByteBufStorage* storage, const void* caller) noexcept {
  const auto level = static_cast<LeakDetectionLevel>(detail::leak_level.load(std::memory_order_relaxed));
  if (level == LeakDetectionLevel::disabled || storage->leak_record != nullptr) return;
  if (level == LeakDetectionLevel::simple) {
    if (++t_sample_counter < g_interval.load(std::memory_order_relaxed)) return;
    t_sample_counter = 0;
  }
  // malloc, not operator new: programs that replace or count operator new (tests that prove a path
  // allocates nothing) must not see the detector's records.
  void* mem = std::malloc(sizeof(Record));
  if (mem == nullptr) return;
  auto* r = new (mem) Record;
  r->storage = storage;
  r->allocator = storage->allocator;
  r->capacity = storage->capacity;
  r->context = g_context.load(std::memory_order_relaxed);
  r->alloc_depth = capture_frames(r->alloc_frames, caller, level == LeakDetectionLevel::paranoid);
  storage->leak_record = r;
  std::lock_guard<std::mutex> lock(records_mutex());
  r->serial = g_next_serial++;
  r->next = g_head;
  if (g_head != nullptr) g_head->prev = r;
  g_head = r;
}

void leak_untrack(ByteBufStorage* storage) noexcept {
  auto* r = static_cast<Record*>(storage->leak_record);
  storage->leak_record = nullptr;
  {
    std::lock_guard<std::mutex> lock(records_mutex());
    unlink(r);
  }
  r->~Record();
  std::free(r);
}

void leak_moved(ByteBufStorage* storage) noexcept {
  auto* r = static_cast<Record*>(storage->leak_record);
  // Only the sole owner reallocates, so nothing else reads these fields now.
  std::lock_guard<std::mutex> lock(records_mutex());
  r->storage = storage;
  r->capacity = storage->capacity;
}

void leak_touch(ByteBufStorage* storage, const char* hint, const void* caller) noexcept {
  auto* r = static_cast<Record*>(storage->leak_record);
  void* frames[kMaxFrames];
  const int depth = capture_frames(frames, caller,
                                   detail::leak_level.load(std::memory_order_relaxed) ==
                                       static_cast<int>(LeakDetectionLevel::paranoid));
  // Handles on one block may be touched from several threads: the record is shared, so lock.
  std::lock_guard<std::mutex> lock(records_mutex());
  r->touched = true;
  r->touch_hint = hint;
  r->touch_depth = depth;
  std::memcpy(r->touch_frames, frames, static_cast<std::size_t>(depth) * sizeof(void*));
}

}  // namespace detail
}  // namespace weft
