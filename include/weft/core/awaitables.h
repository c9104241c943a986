#pragma once
/// @file
/// What a coroutine running on an event loop can wait for without blocking the loop:
///
///   co_await weft::sleep(100ms);                          // a timer of the current loop
///   int n = co_await future;                              // any weft::Future<T>
///   auto rows = co_await weft::offload(executors, [] { return query(); });  // blocking work elsewhere
///
/// Each resumes the coroutine on the loop it was suspended on. They must be awaited on an event
/// loop's thread (they throw std::logic_error otherwise). If that loop terminates before the wait
/// ends, the coroutine is resumed all the same and the co_await throws EventLoopTerminatedError: a
/// sleep during the loop's final drain (on the loop thread), an offload or a future that finishes
/// after it on the thread that finished it (the loop no longer runs anything). A coroutine resumed
/// that way should only unwind: what it holds is released as its frames go.

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/executor_group.h"
#include "weft/core/future.h"

namespace weft {

namespace detail {
// The loop of the calling thread; throws std::logic_error naming `what` when there is none.
EventLoop& current_loop_for(const char* what);
// Resumes `handle` on `loop` from any thread (inline when already there). When the loop has
// terminated, sets *cancelled and resumes it here instead.
void resume_on(EventLoop& loop, std::coroutine_handle<> handle, bool* cancelled) noexcept;
[[noreturn]] void throw_loop_terminated(const char* what);

// A task that resumes a coroutine: normally when run, with *cancelled set when destroyed unrun (a
// timer dropped by its terminating loop, a post the loop rejected). Move-only.
class ResumeTask {
 public:
  ResumeTask(std::coroutine_handle<> handle, bool* cancelled) noexcept : handle_(handle), cancelled_(cancelled) {}
  ResumeTask(ResumeTask&& other) noexcept
      : handle_(std::exchange(other.handle_, {})), cancelled_(other.cancelled_) {}
  ResumeTask& operator=(ResumeTask&&) = delete;
  ~ResumeTask() {
    if (handle_) {
      *cancelled_ = true;
      std::exchange(handle_, {}).resume();
    }
  }
  void operator()() { std::exchange(handle_, {}).resume(); }

 private:
  std::coroutine_handle<> handle_;
  bool* cancelled_;
};
}  // namespace detail

// ---- sleep

/// What sleep() returns: co_await suspends the coroutine on a timer of the current loop.
class SleepAwaiter {
 public:
  /// Waits `delay`.
  explicit SleepAwaiter(Duration delay) noexcept : delay_(delay) {}
  /// Does not suspend for a delay of zero or less.
  bool await_ready() const noexcept { return delay_ <= Duration::zero(); }
  /// Does not suspend (and await_resume throws) when the loop has already terminated.
  bool await_suspend(std::coroutine_handle<> handle);
  /// Throws EventLoopTerminatedError when the loop terminated during the sleep.
  void await_resume() const {
    if (cancelled_) detail::throw_loop_terminated("sleep");
  }

 private:
  Duration delay_;
  bool cancelled_ = false;
};

/// Loop thread only. Suspends the coroutine for `delay` on the current loop's timers.
inline SleepAwaiter sleep(Duration delay) noexcept { return SleepAwaiter(delay); }

// ---- futures

/// What co_await on a Future<T> uses: resumes the coroutine on its loop once the future is done.
template <class T>
class FutureAwaiter {
 public:
  /// Waits for `future`.
  explicit FutureAwaiter(Future<T> future) noexcept : future_(std::move(future)) {}
  /// Does not suspend when the future is already done.
  bool await_ready() const { return future_.is_done(); }
  /// Loop thread only (std::logic_error otherwise). Resumes `handle` on this loop when the future completes.
  void await_suspend(std::coroutine_handle<> handle) {
    EventLoop& loop = detail::current_loop_for("co_await on a Future");
    future_.add_listener(
        [this, handle, &loop](const Future<T>&) { detail::resume_on(loop, handle, &cancelled_); });
  }
  /// The future's value (a copy; a move-only value is moved out, see Future::take), or its error
  /// rethrown; EventLoopTerminatedError when the loop terminated first.
  T await_resume() const {
    if (cancelled_) detail::throw_loop_terminated("co_await on a Future");
    if (auto error = future_.error()) std::rethrow_exception(error);
    if constexpr (std::is_void_v<T>) {
      return;
    } else if constexpr (std::is_copy_constructible_v<T>) {
      return future_.get();
    } else {
      return future_.take();
    }
  }

 private:
  Future<T> future_;
  bool cancelled_ = false;
};

/// Loop thread only. Waits for the future without blocking the loop; yields its value or rethrows.
template <class T>
FutureAwaiter<T> operator co_await(Future<T> future) noexcept {
  return FutureAwaiter<T>(std::move(future));
}

// ---- offload

/// What offload() returns: runs a callable on an executor and resumes the coroutine on its loop.
template <class F>
class OffloadAwaiter {
 public:
  /// What the callable returns, and co_await yields.
  using Result = std::invoke_result_t<F&>;

  /// Runs `fn` on `executor` once awaited.
  OffloadAwaiter(EventLoop& executor, F fn) : executor_(executor), fn_(std::in_place, std::move(fn)) {}
  /// Always suspends.
  bool await_ready() const noexcept { return false; }
  /// Loop thread only (std::logic_error otherwise). Posts the callable to the executor; RejectedExecutionError
  /// when the executor is shut down.
  void await_suspend(std::coroutine_handle<> handle) {
    EventLoop& home = detail::current_loop_for("co_await offload(...)");
    // This awaiter lives in the suspended coroutine's frame until it resumes, so the executor
    // may fill it in place.
    // The hold keeps `home` allocated until the resumption was posted (or refused).
    executor_.execute([this, handle, &home, hold = EventLoop::KeepAlive(home)] {
      try {
        if constexpr (std::is_void_v<Result>) {
          (*fn_)();
        } else {
          result_.emplace((*fn_)());
        }
      } catch (...) {
        error_ = std::current_exception();
      }
      fn_.reset();  // its captures are released here, on the executor, once
      detail::resume_on(home, handle, &cancelled_);
    });
  }
  /// Throws with every member empty: g++ 12 destroys a temporary awaiter whose await_resume throws
  /// twice, which must then release nothing twice.
  Result await_resume() {
    if (cancelled_) detail::throw_loop_terminated("co_await offload(...)");
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if constexpr (!std::is_void_v<Result>) return std::move(*result_);
  }

 private:
  using Stored = std::conditional_t<std::is_void_v<Result>, bool, Result>;
  EventLoop& executor_;
  std::optional<F> fn_;
  std::optional<Stored> result_;
  std::exception_ptr error_;
  bool cancelled_ = false;
};

/// Loop thread only. Runs `fn` on an executor thread and resumes the coroutine on its loop with
/// fn's result (or its exception). Throws RejectedExecutionError when the executor is shut down.
template <class F>
OffloadAwaiter<std::decay_t<F>> offload(EventLoop& executor, F&& fn) {
  return OffloadAwaiter<std::decay_t<F>>(executor, std::forward<F>(fn));
}
/// Loop thread only. As offload(EventLoop&, F&&), on the group's next executor.
template <class F>
OffloadAwaiter<std::decay_t<F>> offload(ExecutorGroup& executors, F&& fn) {
  return OffloadAwaiter<std::decay_t<F>>(executors.next(), std::forward<F>(fn));
}
/// Loop thread only. As offload(EventLoop&, F&&), on the group's next loop.
template <class F>
OffloadAwaiter<std::decay_t<F>> offload(EventLoopGroup& executors, F&& fn) {
  return OffloadAwaiter<std::decay_t<F>>(executors.next(), std::forward<F>(fn));
}

}  // namespace weft
