#pragma once
// A wake-up for one coroutine on an event loop: wait() parks it; notify() resumes it from the
// loop's task queue (never inside the notifier, which may be user code), resume_now() at once. The
// coroutine checks its conditions again after each wake-up. Loop thread only.

#include <coroutine>
#include <utility>

#include "weft/core/event_loop.h"
#include "weft/core/unique_function.h"

namespace weft::grpc::detail {

class LoopSignal {
 public:
  explicit LoopSignal(EventLoop& loop) noexcept : loop_(loop) {}

  struct Awaiter {
    LoopSignal& signal;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) noexcept { signal.waiter_ = handle; }
    void await_resume() const noexcept {}
  };
  // Parks the caller until the next notify() (one waiter at a time).
  Awaiter wait() noexcept { return Awaiter{*this}; }

  // Resumes the waiter, if any, now, inside the caller: only where nothing that must not nest is on
  // the stack (a loop task, or the other coroutine of the same call between reactor methods).
  void resume_now() {
    if (!waiter_) return;
    std::exchange(waiter_, {}).resume();
  }

  // Resumes the waiter, if any, on the loop's next turn. On a terminated loop it stays parked.
  void notify() noexcept {
    if (!waiter_) return;
    std::coroutine_handle<> waiter = std::exchange(waiter_, {});
    if (!loop_.try_execute(UniqueFunction<void()>([waiter] { waiter.resume(); }))) waiter_ = waiter;
  }

 private:
  EventLoop& loop_;
  std::coroutine_handle<> waiter_;
};

}  // namespace weft::grpc::detail
