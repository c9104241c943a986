#pragma once
// Test allocators for the buffer tests. CountingAllocator keeps its headers apart from the data (as a
// pooled allocator would), rounds requests up to a size-class granularity, tags each block, and records
// every block it hands out so that a test can prove each block comes back exactly once.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "weft/buffer/byte_buf_allocator.h"

namespace weft::test {

class CountingAllocator final : public ByteBufAllocator {
 public:
  struct Options {
    std::size_t granularity = 1;      // capacities are rounded up to a multiple of this
    bool in_place_realloc = true;     // false: use ByteBufAllocator's default reallocate_storage
  };

  CountingAllocator() : CountingAllocator(Options{}) {}
  explicit CountingAllocator(Options options) : options_(options) {}

  long allocations() const { return allocations_.load(); }
  long reallocations() const { return reallocations_.load(); }
  long frees() const { return frees_.load(); }
  long bad_frees() const { return bad_frees_.load(); }
  // The largest capacity handed out (allocated or grown to).
  std::size_t largest_capacity() const { return largest_.load(); }
  std::size_t live() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  // The capacity of the blocks handed out and not yet freed: the memory buffers keep alive.
  std::size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const ByteBufStorage* s : live_) n += s->capacity;
    return n;
  }
  bool is_live(const void* data) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const ByteBufStorage* s : live_) {
      if (s->data == data) return true;
    }
    return false;
  }
  std::vector<std::thread::id> free_threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return free_threads_;
  }
  // While set, allocate_storage and reallocate_storage throw std::bad_alloc.
  void set_failing(bool failing) { failing_.store(failing); }

 protected:
  ByteBufStorage* allocate_storage(std::size_t min_capacity) override {
    if (failing_.load()) throw std::bad_alloc();
    allocations_.fetch_add(1);
    const std::size_t g = options_.granularity;
    const std::size_t capacity = (min_capacity + g - 1) / g * g;
    if (capacity > largest_.load()) largest_.store(capacity);
    auto* data = new std::uint8_t[capacity == 0 ? 1 : capacity];
    auto* storage = new ByteBufStorage(this, data, capacity);
    storage->allocator_tag = kTag;
    storage->allocator_context = this;
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(storage);
    return storage;
  }

  ByteBufStorage* reallocate_storage(ByteBufStorage* storage, std::size_t min_capacity,
                                     std::size_t preserve) override {
    if (failing_.load()) throw std::bad_alloc();
    reallocations_.fetch_add(1);
    if (!options_.in_place_realloc) return ByteBufAllocator::reallocate_storage(storage, min_capacity, preserve);
    if (storage->refs.load() != 1) bad_frees_.fetch_add(1);  // contract: caller holds the only reference
    const std::size_t g = options_.granularity;
    const std::size_t capacity = (min_capacity + g - 1) / g * g;
    if (capacity > largest_.load()) largest_.store(capacity);
    auto* data = new std::uint8_t[capacity];
    std::copy(storage->data, storage->data + preserve, data);
    delete[] storage->data;
    storage->data = data;
    storage->capacity = capacity;
    return storage;
  }

  void free_storage(ByteBufStorage* storage) noexcept override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_threads_.push_back(std::this_thread::get_id());
      if (live_.erase(storage) != 1 || storage->allocator_tag != kTag || storage->allocator_context != this ||
          storage->refs.load() != 0) {
        bad_frees_.fetch_add(1);
        return;  // do not touch memory we did not hand out
      }
    }
    frees_.fetch_add(1);
    delete[] storage->data;
    delete storage;
  }

 private:
  static constexpr std::uint32_t kTag = 0xB0FFE4;
  Options options_;
  std::atomic<bool> failing_{false};
  std::atomic<long> allocations_{0};
  std::atomic<long> reallocations_{0};
  std::atomic<long> frees_{0};
  std::atomic<long> bad_frees_{0};
  std::atomic<std::size_t> largest_{0};
  mutable std::mutex mutex_;
  std::set<ByteBufStorage*> live_;
  std::vector<std::thread::id> free_threads_;
};

}  // namespace weft::test
