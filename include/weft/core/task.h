#pragma once
/// @file
/// Task<T>: a lazy, move-only coroutine that produces a T (or throws).
///
///   weft::Task<int> answer() { co_return 42; }
///   weft::Task<> caller() { int n = co_await answer(); ... }
///
/// A task does nothing until it is awaited (or handed to spawn()). Awaiting it runs it on the
/// awaiting thread until it first suspends; when it finishes, the awaiter resumes by symmetric
/// transfer, so a long chain of tasks awaiting tasks does not grow the stack. Frames come from the
/// frame pool (weft/core/frame_pool.h), not the general heap, once the pool is warm.
///
/// A Task owns its frame: destroying a task that has not finished destroys the frame (only safe
/// while the task is not suspended inside something that will resume it, i.e. before it started).
/// Not thread-safe: a task is awaited by one coroutine; where it resumes depends on what it awaits
/// (every weft awaitable resumes on the loop the coroutine was suspended on).

#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>

#include "weft/core/frame_pool.h"

namespace weft {

template <class T = void>
class Task;

namespace detail {

struct TaskPromiseBase : frame_pool::PooledFrame {
  std::coroutine_handle<> continuation = std::noop_coroutine();
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
      return self.promise().continuation;
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct TaskPromise final : TaskPromiseBase {
  TaskPromise() noexcept {}
  ~TaskPromise() {
    if (has_value) value.~T();
  }
  Task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) {
    ::new (static_cast<void*>(&value)) T(std::forward<U>(v));
    has_value = true;
  }
  T take() {
    if (error) std::rethrow_exception(error);
    return std::move(value);
  }
  union {
    T value;
  };
  bool has_value = false;
};

template <>
struct TaskPromise<void> final : TaskPromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

/// A lazy, move-only coroutine that produces a T or throws (see the file's description).
/// Not thread-safe.
template <class T>
class [[nodiscard]] Task {
 public:
  /// The coroutine's promise (for the compiler).
  using promise_type = detail::TaskPromise<T>;
  /// What co_await on the task yields.
  using value_type = T;
  /// The coroutine handle the task owns.
  using Handle = std::coroutine_handle<promise_type>;

  Task() noexcept = default;
  /// Takes `other`'s frame; `other` becomes invalid.
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  /// Destroys the frame held, then takes `other`'s; `other` becomes invalid.
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  /// False for a default-constructed or moved-from task.
  bool valid() const noexcept { return static_cast<bool>(handle_); }
  /// True once the coroutine has finished (returned or thrown).
  bool done() const noexcept { return handle_ && handle_.done(); }

  /// What co_await on a task uses: starts the task and resumes the awaiting coroutine when it ends.
  struct Awaiter {
    /// The task's coroutine.
    Handle handle;
    /// Does not suspend when the task has already finished.
    bool await_ready() const noexcept { return handle.done(); }
    /// Records `awaiting` as the continuation and transfers to the task.
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
      handle.promise().continuation = awaiting;
      return handle;
    }
    /// The task's result, or its exception rethrown.
    T await_resume() { return handle.promise().take(); }
  };
  /// Runs the task (it must be valid and not yet awaited) and yields its result or rethrows.
  Awaiter operator co_await() const& noexcept { return Awaiter{handle_}; }
  /// Runs the task (it must be valid and not yet awaited) and yields its result or rethrows.
  Awaiter operator co_await() const&& noexcept { return Awaiter{handle_}; }

  /// For the machinery that starts tasks (spawn, when_all): gives up ownership of the frame.
  Handle release() noexcept { return std::exchange(handle_, {}); }

 private:
  friend promise_type;
  explicit Task(Handle handle) noexcept : handle_(handle) {}
  Handle handle_;
};

namespace detail {
template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace weft
