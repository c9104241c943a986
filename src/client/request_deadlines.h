#pragma once
// The request timeouts of one loop's requests, without a loop timer per request: the requests in
// deadline order in an intrusive list, and the loop timer the owner keeps for the first one.
// Removing is O(1); adding walks back from the end past the requests due later, so it is O(1) while
// requests share the client's request_timeout (the order they began in) and only a request's own
// timeout (HttpClientRequest::timeout) walks. Neither allocates. Loop thread only.

#include "exchange.h"
#include "weft/core/clock.h"

namespace weft::client::detail {

class RequestDeadlines {
 public:
  RequestDeadlines() = default;
  ~RequestDeadlines() { clear(); }
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // `x` (in no list) times out at `deadline`: after the requests due no later, before the others.
  void insert(Exchange& x, TimePoint deadline) noexcept {
    Exchange* before = tail_;
    while (before != nullptr && before->deadline > deadline) before = before->deadline_prev;
    x.deadline = deadline;
    x.deadlines = this;
    x.deadline_prev = before;
    x.deadline_next = before != nullptr ? before->deadline_next : head_;
    (before != nullptr ? before->deadline_next : head_) = &x;
    (x.deadline_next != nullptr ? x.deadline_next->deadline_prev : tail_) = &x;
  }
  // Takes `x` out of its list, if it is in one.
  static void remove(Exchange& x) noexcept {
    if (x.deadlines == nullptr) return;
    RequestDeadlines& list = *x.deadlines;
    (x.deadline_prev != nullptr ? x.deadline_prev->deadline_next : list.head_) = x.deadline_next;
    (x.deadline_next != nullptr ? x.deadline_next->deadline_prev : list.tail_) = x.deadline_prev;
    x.deadlines = nullptr;
    x.deadline_prev = x.deadline_next = nullptr;
  }
  Exchange* front() const noexcept { return head_; }
  void clear() noexcept {
    while (head_ != nullptr) remove(*head_);
  }

 private:
  Exchange* head_ = nullptr;
  Exchange* tail_ = nullptr;
};

}  // namespace weft::client::detail
