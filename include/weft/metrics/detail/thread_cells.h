#pragma once
/// @file
/// Per-thread cells of one metric series: what makes an increment cheap on the hot path. Each thread
/// that writes a series gets its own block of `width` 64-bit cells (allocated once, on its first
/// write, cache-line aligned), which only that thread writes -- with relaxed loads and stores, no
/// read-modify-write -- so a scraper on another thread reads them without a data race and no cache
/// line is shared between loops. A scrape sums the blocks. A thread's slot (its index here) is
/// reused by a later thread once it exits, so the cells and their counts carry over.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft::metrics::detail {

/// Threads writing metrics at once with cells of their own; more share one block with atomic adds.
inline constexpr std::size_t kMaxThreadSlots = 128;

inline constexpr std::size_t kNoSlot = ~std::size_t{0};
/// This thread's slot, kNoSlot until its first write (a constant-initialised thread_local: one load).
extern thread_local constinit std::size_t t_thread_slot;
/// Takes a slot for this thread (given back when it exits) and returns it.
std::size_t assign_thread_slot() noexcept;

/// This thread's slot in [0, kMaxThreadSlots], kMaxThreadSlots meaning "the shared block". Taken on
/// the first call, given back when the thread exits. Thread-safe.
inline std::size_t thread_slot() noexcept {
  const std::size_t slot = t_thread_slot;
  if (slot != kNoSlot) [[likely]]
    return slot;
  return assign_thread_slot();
}

/// The cells of one series, `width` 64-bit values per thread. Writers: any thread, each to its own
/// block; readers (sum): any thread. Not copyable.
class ThreadCells {
 public:
  explicit ThreadCells(std::size_t width);
  ~ThreadCells();
  ThreadCells(const ThreadCells&) = delete;
  ThreadCells& operator=(const ThreadCells&) = delete;

  /// Adds `n` to cell `i` of this thread's block. Thread-safe; lock-free after a thread's first write.
  void add(std::size_t i, std::uint64_t n) noexcept {
    const std::size_t slot = thread_slot();
    std::atomic<std::uint64_t>* cells =
        slot == kMaxThreadSlots ? nullptr : blocks_[slot].load(std::memory_order_acquire);
    if (cells == nullptr) [[unlikely]] {
      cells = allocate(slot);
      if (cells == nullptr) {
        shared_[i].fetch_add(n, std::memory_order_relaxed);
        return;
      }
    }
    // The only writer of this block: a relaxed load and store are enough for a reader to see a whole value.
    cells[i].store(cells[i].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  /// Adds `n` to cell `i` and `x` to cell `j` read as a double (a histogram's bucket and sum), with
  /// one look-up of the thread's block. Thread-safe, as add().
  void add_and_add_double(std::size_t i, std::uint64_t n, std::size_t j, double x) noexcept {
    const std::size_t slot = thread_slot();
    std::atomic<std::uint64_t>* cells =
        slot == kMaxThreadSlots ? nullptr : blocks_[slot].load(std::memory_order_acquire);
    if (cells == nullptr) [[unlikely]] {
      add_and_add_double_slow(slot, i, n, j, x);
      return;
    }
    cells[i].store(cells[i].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    cells[j].store(std::bit_cast<std::uint64_t>(std::bit_cast<double>(cells[j].load(std::memory_order_relaxed)) + x),
                   std::memory_order_relaxed);
  }

  /// Cell `i` summed over every thread (a double cell: see sum_double). Thread-safe.
  std::uint64_t sum(std::size_t i) const noexcept;
  /// Cell `i`, a double, summed over every thread. Thread-safe.
  double sum_double(std::size_t i) const noexcept;
  /// Values per thread.
  std::size_t width() const noexcept { return width_; }

 private:
  // This thread's block, made on its first write; nullptr for the shared slot or without memory.
  std::atomic<std::uint64_t>* allocate(std::size_t slot) noexcept;
  void add_and_add_double_slow(std::size_t slot, std::size_t i, std::uint64_t n, std::size_t j, double x) noexcept;

  std::size_t width_;
  std::atomic<std::atomic<std::uint64_t>*> blocks_[kMaxThreadSlots] = {};
  std::unique_ptr<std::atomic<std::uint64_t>[]> shared_;
};

}  // namespace weft::metrics::detail
