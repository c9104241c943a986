#pragma once
/// @file
/// Intrusive multi-producer single-consumer queue (Dmitry Vyukov's design). Producers never lock and
/// never wait for each other; the consumer never locks. A pop may transiently report "empty" while a
/// producer is between its two steps; that producer's wake-up check follows its push, so nothing is
/// lost.

#include <atomic>

namespace weft {

/// The link a queued object embeds (derive from it).
struct MpscNode {
  /// The next node; owned by the queue while the node is queued.
  std::atomic<MpscNode*> mpsc_next{nullptr};
};

/// The intrusive multi-producer single-consumer queue of MpscNode (see the file's description).
class MpscQueue {
 public:
  MpscQueue() noexcept : head_(&stub_), tail_(&stub_) {}
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  /// Thread-safe (any producer).
  void push(MpscNode* node) noexcept {
    node->mpsc_next.store(nullptr, std::memory_order_relaxed);
    MpscNode* prev = head_.exchange(node, std::memory_order_seq_cst);
    prev->mpsc_next.store(node, std::memory_order_release);
  }

  /// Consumer only. Returns nullptr when empty (or when a push is half done).
  MpscNode* pop() noexcept {
    MpscNode* tail = tail_;
    MpscNode* next = tail->mpsc_next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->mpsc_next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;
    push(&stub_);
    next = tail->mpsc_next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  /// Consumer only. True when no node is queued or being queued.
  bool empty() const noexcept {
    return tail_ == &stub_ && head_.load(std::memory_order_seq_cst) == &stub_;
  }

 private:
  alignas(64) std::atomic<MpscNode*> head_;
  alignas(64) MpscNode* tail_;
  MpscNode stub_;
};

}  // namespace weft
