#pragma once
/// @file
/// Starting coroutines on an event loop.
///
///   weft::Future<int> f = weft::spawn(loop, compute());     // the result as a future
///   weft::spawn_detached(loop, serve_forever());             // nobody waits; failures are logged
///
/// The task starts at once when called on `loop`'s thread, otherwise it is queued to the loop.
/// Thread-safe.

#include <coroutine>
#include <exception>
#include <utility>

#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/frame_pool.h"
#include "weft/core/future.h"
#include "weft/core/task.h"

namespace weft {

namespace detail {

// A coroutine that starts suspended, is resumed once by whoever starts it, and frees its own frame
// when it finishes. Its body must not let an exception escape.
struct Detached {
  struct promise_type : frame_pool::PooledFrame {
    Detached get_return_object() noexcept { return Detached{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

// Resumes `handle` on `loop`: now when already there, else through the loop's queue. When the loop
// no longer takes tasks the frame is destroyed unrun and false is returned.
bool start_on(EventLoop& loop, std::coroutine_handle<> handle) noexcept;

void log_detached_failure(std::exception_ptr error) noexcept;

template <class T>
Detached run_into_promise(Task<T> task, Promise<T> promise) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      promise.set_value();
    } else {
      promise.set_value(co_await std::move(task));
    }
  } catch (...) {
    promise.set_error(std::current_exception());
  }
}

inline Detached run_detached(Task<void> task) {
  try {
    co_await std::move(task);
  } catch (...) {
    log_detached_failure(std::current_exception());
  }
}

}  // namespace detail

/// Thread-safe. Runs `task` on `loop`; the future completes (on `loop`) with its result or exception,
/// or fails with RejectedExecutionError when the loop is shut down.
template <class T>
Future<T> spawn(EventLoop& loop, Task<T> task) {
  Promise<T> promise(&loop);
  Future<T> result = promise.future();
  detail::Detached runner = detail::run_into_promise(std::move(task), promise);
  if (!detail::start_on(loop, runner.handle)) {
    promise.fail(RejectedExecutionError("spawn: the event loop is shut down"));
  }
  return result;
}

/// Thread-safe. Runs `task` on `loop` with nobody waiting for it; an exception it lets escape is
/// logged. Returns false (and drops the task) when the loop is shut down.
inline bool spawn_detached(EventLoop& loop, Task<void> task) {
  return detail::start_on(loop, detail::run_detached(std::move(task)).handle);
}

}  // namespace weft
