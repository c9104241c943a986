#pragma once
// The request timeouts of one loop's requests, without a loop timer per request: the requests in
// deadline order (one request_timeout for all, so the order they began in) in an intrusive list,
// and the loop timer the owner keeps for the first one. Adding and removing are O(1) and do not
// allocate. Loop thread only.

#include "exchange.h"
#include "weft/core/clock.h"

namespace weft::client::detail {

class RequestDeadlines {
 public:
  RequestDeadlines() = default;
  ~RequestDeadlines() { clear(); }
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // `x` (in no list) times out at `deadline`, no earlier than any request added before.
  void push_back(Exchange& x, TimePoint deadline) noexcept {
    x.deadline = deadline;
    x.deadlines = this;
    x.deadline_prev = tail_;
    x.deadline_next = nullptr;
    (tail_ != nullptr ? tail_->deadline_next : head_) = &x;
    tail_ = &x;
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
