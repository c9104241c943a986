#pragma once
/// @file
/// A first-in first-out ring whose first N slots live inside its owner: a short queue (the common
/// case on a server connection) costs no allocation and no cache line beyond the owner's. Past N
/// entries it moves to a power-of-two array on the heap, which it keeps, so a connection that once
/// queued deeply does not allocate again.
///
/// Not thread-safe: one thread uses it (the owner's loop). Neither copyable nor movable, because
/// the slot pointer may point into the object itself.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

/// A FIFO ring of T with its first N slots inline (see the file's description). Not thread-safe.
template <class T, std::size_t N>
class InlineRing {
  static_assert(N > 0 && (N & (N - 1)) == 0, "the inline capacity is a power of two");
  static_assert(std::is_nothrow_default_constructible_v<T> && std::is_nothrow_destructible_v<T>);

 public:
  InlineRing() = default;
  InlineRing(const InlineRing&) = delete;
  InlineRing& operator=(const InlineRing&) = delete;

  /// Entries in the ring.
  std::size_t size() const noexcept { return size_; }
  /// size() == 0.
  bool empty() const noexcept { return size_ == 0; }
  /// The i-th entry from the front; requires i < size().
  T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & (capacity_ - 1)]; }
  /// The i-th entry from the front; requires i < size().
  const T& operator[](std::size_t i) const noexcept { return slots_[(head_ + i) & (capacity_ - 1)]; }

  /// Appends `value` at the back, moving to a larger heap array when the ring is full.
  template <class U>
  void push_back(U&& value) {
    if (size_ == capacity_) grow();
    (*this)[size_] = std::forward<U>(value);
    ++size_;
  }
  /// Removes and returns the front entry; requires !empty().
  T pop_front() noexcept {
    T value = std::move(slots_[head_]);
    drop_front();
    return value;
  }
  /// Removes the front entry, destroying what it owns; requires !empty().
  void drop_front() noexcept {
    assert(size_ > 0 && "InlineRing::drop_front on an empty ring");
    reset(slots_[head_]);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }
  /// Empties the ring, destroying what the entries own; the capacity stays.
  void clear() noexcept {
    for (std::size_t i = 0; i < size_; ++i) reset((*this)[i]);
    head_ = size_ = 0;
  }

 private:
  // Destroys what the slot owns and leaves it empty, without a temporary to move from.
  static void reset(T& slot) noexcept {
    if constexpr (!std::is_trivially_destructible_v<T>) {  // a plain value needs no clearing
      std::destroy_at(&slot);
      std::construct_at(&slot);
    }
  }
  void grow() {
    const std::size_t capacity = std::max<std::size_t>(16, std::size_t{capacity_} * 2);
    if (capacity > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("InlineRing: too many entries");
    std::vector<T> bigger(capacity);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    heap_.swap(bigger);
    slots_ = heap_.data();
    capacity_ = static_cast<std::uint32_t>(heap_.size());
    head_ = 0;
  }

  T* slots_ = inline_;
  std::uint32_t capacity_ = N;
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
  T inline_[N]{};
  std::vector<T> heap_;
};

}  // namespace weft
