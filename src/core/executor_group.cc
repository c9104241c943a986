#include "weft/core/executor_group.h"

#include <stdexcept>

namespace weft {

namespace {
ExecutorGroup::Options checked(ExecutorGroup::Options o) {
  if (o.max_queued_bytes == 0 || o.max_queued_bytes_per_channel == 0) {
    throw std::invalid_argument("ExecutorGroup: queue bounds must be positive");
  }
  return o;
}
}  // namespace

ExecutorGroup::ExecutorGroup(Options options)
    : options_(checked(std::move(options))),
      loops_(options_.batch_scheduling ? executor_driver_factory() : basic_driver_factory(), options_.threads,
             options_.name) {}

void ExecutorGroup::add_queued(std::size_t n) noexcept {
  const std::size_t now = queued_.fetch_add(n, std::memory_order_acq_rel) + n;
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// The pause/resume handshake is a store-buffer pattern on two atomics: the releaser writes queued_
// then reads waiter_count_, the waiter writes waiter_count_ then reads queued_. Only seq_cst on all
// four makes one of them see the other's write; with acq_rel both may read stale values and the
// wake-up is lost. (On x86 the RMWs are full fences anyway and the seq_cst loads plain moves.)
std::size_t ExecutorGroup::release_queued(std::size_t n) {
  const std::size_t now = queued_.fetch_sub(n, std::memory_order_seq_cst) - n;
  if (now <= options_.max_queued_bytes / 2 && waiter_count_.load(std::memory_order_seq_cst) > 0) run_waiters();
  return now;
}

void ExecutorGroup::when_below_half(UniqueFunction<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    waiters_.push_back(std::move(fn));
    waiter_count_.fetch_add(1, std::memory_order_seq_cst);
  }
  // Bytes may have been released between the caller's check and the registration.
  if (queued_.load(std::memory_order_seq_cst) <= options_.max_queued_bytes / 2) run_waiters();
}

void ExecutorGroup::run_waiters() {
  std::vector<UniqueFunction<void()>> ready;
  {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    ready.swap(waiters_);
    waiter_count_.store(0, std::memory_order_release);
  }
  for (auto& fn : ready) fn();
}

}  // namespace weft
