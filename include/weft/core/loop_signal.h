#pragma once
/// @file
/// Wake-ups for a coroutine on its own event loop, built on LoopCallback (nothing allocated per
/// wake-up):
///
///   co_await signal.wait();        // parked until signal.notify(), which resumes it on the next turn
///   co_await weft::next_turn(loop);  // lets the loop take a turn (its I/O, other work) first
///
/// Both resume the coroutine from the loop, never inside the code that woke it. On a terminated
/// loop (its final drain over) they follow ResumeTask's policy (awaitables.h): the coroutine is
/// resumed at once and the co_await throws EventLoopTerminatedError; it should only unwind.
/// Loop thread only.

#include <coroutine>
#include <utility>

#include "weft/core/loop_callback.h"

namespace weft {

namespace detail {
[[noreturn]] void throw_loop_terminated(const char* what);
}  // namespace detail

/// A wake-up for one coroutine at a time (see the file's description). Loop thread only.
class LoopSignal {
 public:
  /// Wakes waiters on `loop`.
  explicit LoopSignal(EventLoop& loop) noexcept : loop_(loop) {}
  LoopSignal(const LoopSignal&) = delete;
  LoopSignal& operator=(const LoopSignal&) = delete;

  /// What wait() returns.
  struct Awaiter {
    LoopSignal& signal;  ///< the signal waited on
    /// Always suspends.
    bool await_ready() const noexcept { return false; }
    /// Parks the coroutine (one waiter at a time).
    void await_suspend(std::coroutine_handle<> handle) noexcept { signal.waiter_ = handle; }
    /// Throws EventLoopTerminatedError when a notify() found the loop terminated.
    void await_resume() const {
      if (signal.loop_terminated_) detail::throw_loop_terminated("co_await LoopSignal::wait()");
    }
  };
  /// Loop thread only. Parks the caller until the next notify() or resume_now(). The coroutine
  /// checks what it waits for again after each wake-up.
  Awaiter wait() noexcept { return Awaiter{*this}; }

  /// Loop thread only. Resumes the waiter, if any, on the loop's next turn (once, however often
  /// called meanwhile). On a terminated loop, at once, its co_await throwing EventLoopTerminatedError.
  void notify() noexcept {
    if (!waiter_ || resume_.schedule(loop_)) return;
    loop_terminated_ = true;
    resume_now();
  }

  /// Loop thread only. Resumes the waiter, if any, now, inside the caller: only where nothing that
  /// must not nest is on the stack. A notify() still pending is withdrawn.
  void resume_now() noexcept {
    resume_.cancel();
    if (waiter_) std::exchange(waiter_, {}).resume();
  }

 private:
  EventLoop& loop_;
  std::coroutine_handle<> waiter_;
  bool loop_terminated_ = false;
  LoopCallback resume_{[this] { resume_now(); }};
};

/// What next_turn() returns: co_await resumes the coroutine from the loop's next turn. Neither
/// copyable nor movable (the loop links it where it is).
class NextTurn {
 public:
  /// Resumes on `loop`.
  explicit NextTurn(EventLoop& loop) noexcept : loop_(loop) {}
  /// Always suspends, unless the loop has terminated.
  bool await_ready() const noexcept { return false; }
  /// Does not suspend (and await_resume throws) on a terminated loop.
  bool await_suspend(std::coroutine_handle<> handle) noexcept {
    handle_ = handle;
    if (resume_.schedule(loop_)) return true;
    loop_terminated_ = true;
    return false;
  }
  /// Throws EventLoopTerminatedError when the loop had terminated.
  void await_resume() const {
    if (loop_terminated_) detail::throw_loop_terminated("co_await next_turn(...)");
  }

 private:
  EventLoop& loop_;
  std::coroutine_handle<> handle_;
  bool loop_terminated_ = false;
  LoopCallback resume_{[this] { handle_.resume(); }};
};

/// Loop thread only. Suspends the coroutine until `loop` runs its callbacks next (LoopCallback):
/// after what is on the stack has returned and, when that is a loop task or a callback, after the
/// loop has polled its I/O again. So one that completes step after step without suspending lets
/// others go on (and, without tail calls, does not grow the stack).
inline NextTurn next_turn(EventLoop& loop) noexcept { return NextTurn(loop); }

}  // namespace weft
