#include "weft/metrics/detail/thread_cells.h"

#include <bit>
#include <mutex>
#include <new>
#include <vector>

namespace weft::metrics::detail {

thread_local constinit std::size_t t_thread_slot = kNoSlot;

namespace {

// The slots not held by a live thread. A slot handed over through the mutex carries its cells'
// values: the exiting thread's last stores happen before the next holder's first.
struct SlotPool {
  std::mutex mutex;
  std::vector<std::size_t> free;
  std::size_t next = 0;
};
SlotPool& slot_pool() {
  static SlotPool* pool = new SlotPool;  // never destroyed: threads may exit after static destruction
  return *pool;
}

// Gives the thread's slot back when the thread exits.
struct SlotReturn {
  ~SlotReturn() {
    const std::size_t slot = t_thread_slot;
    if (slot == kNoSlot || slot == kMaxThreadSlots) return;
    SlotPool& pool = slot_pool();
    std::lock_guard lock(pool.mutex);
    pool.free.push_back(slot);
  }
};
thread_local SlotReturn t_slot_return;

}  // namespace

std::size_t assign_thread_slot() noexcept {
  SlotPool& pool = slot_pool();
  std::size_t slot = kMaxThreadSlots;
  {
    std::lock_guard lock(pool.mutex);
    if (!pool.free.empty()) {
      slot = pool.free.back();
      pool.free.pop_back();
    } else if (pool.next < kMaxThreadSlots) {
      slot = pool.next++;
    }
  }
  (void)&t_slot_return;  // odr-use: constructs it, so its destructor runs at the thread's exit
  t_thread_slot = slot;
  return slot;
}

ThreadCells::ThreadCells(std::size_t width)
    : width_(width), shared_(std::make_unique<std::atomic<std::uint64_t>[]>(width)) {}

ThreadCells::~ThreadCells() {
  for (auto& block : blocks_) {
    if (std::atomic<std::uint64_t>* cells = block.load(std::memory_order_acquire)) {
      operator delete[](cells, std::align_val_t{64});
    }
  }
}

std::atomic<std::uint64_t>* ThreadCells::allocate(std::size_t slot) noexcept {
  if (slot == kMaxThreadSlots) return nullptr;
  // Aligned to a cache line, and a whole number of them: no line shared with another thread's block.
  const std::size_t bytes = (width_ * sizeof(std::atomic<std::uint64_t>) + 63) / 64 * 64;
  void* memory = operator new[](bytes, std::align_val_t{64}, std::nothrow);
  if (memory == nullptr) return nullptr;
  auto* cells = static_cast<std::atomic<std::uint64_t>*>(memory);
  for (std::size_t i = 0; i < width_; ++i) new (&cells[i]) std::atomic<std::uint64_t>(0);
  // release: a scraper that sees the pointer sees zeroed cells.
  blocks_[slot].store(cells, std::memory_order_release);
  return cells;
}

void ThreadCells::add_and_add_double_slow(std::size_t slot, std::size_t i, std::uint64_t n, std::size_t j,
                                          double x) noexcept {
  if (allocate(slot) != nullptr) {
    add_and_add_double(i, n, j, x);
    return;
  }
  {
    shared_[i].fetch_add(n, std::memory_order_relaxed);
    std::uint64_t old = shared_[j].load(std::memory_order_relaxed);
    while (!shared_[j].compare_exchange_weak(old, std::bit_cast<std::uint64_t>(std::bit_cast<double>(old) + x),
                                             std::memory_order_relaxed)) {
    }
  }
}

std::uint64_t ThreadCells::sum(std::size_t i) const noexcept {
  std::uint64_t total = shared_[i].load(std::memory_order_relaxed);
  for (const auto& block : blocks_) {
    if (const std::atomic<std::uint64_t>* cells = block.load(std::memory_order_acquire)) {
      total += cells[i].load(std::memory_order_relaxed);
    }
  }
  return total;
}

double ThreadCells::sum_double(std::size_t i) const noexcept {
  double total = std::bit_cast<double>(shared_[i].load(std::memory_order_relaxed));
  for (const auto& block : blocks_) {
    if (const std::atomic<std::uint64_t>* cells = block.load(std::memory_order_acquire)) {
      total += std::bit_cast<double>(cells[i].load(std::memory_order_relaxed));
    }
  }
  return total;
}

}  // namespace weft::metrics::detail
