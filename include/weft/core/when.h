#pragma once
/// @file
/// Waiting for several tasks at once.
///
///   auto [a, b] = co_await weft::when_all(fetch_a(), fetch_b());        // both, concurrently
///   std::vector<int> all = co_await weft::when_all(std::move(tasks));   // a vector of tasks
///   auto [index, value] = co_await weft::when_any(std::move(tasks));    // the first to finish
///
/// The tasks start one after the other on the awaiting thread and run concurrently from their first
/// suspension on. when_all resumes the awaiter once every task has finished; if any failed it
/// rethrows the first failure (by position) after all have finished, so nothing outlives the call.
/// when_any resumes the awaiter as soon as one task finishes, with its index and result (or its
/// exception); the others keep running to completion in the background and their results are
/// dropped: end them through their own means (closing their channel, for instance).
/// A void task contributes std::monostate. Not thread-safe: one awaiter per call.

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "weft/core/frame_pool.h"
#include "weft/core/task.h"

namespace weft {

namespace detail {

template <class T>
using ValueOrMonostate = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
struct Outcome {
  std::optional<ValueOrMonostate<T>> value;
  std::exception_ptr error;
};

// Counts finished children; the last one resumes the awaiter.
struct Latch {
  std::atomic<std::size_t> remaining{0};
  std::coroutine_handle<> awaiter;
};

struct LatchChild {
  struct promise_type : frame_pool::PooledFrame {
    Latch* latch = nullptr;
    LatchChild get_return_object() noexcept {
      return LatchChild{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
        Latch* latch = self.promise().latch;
        if (latch->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) return latch->awaiter;
        return std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };

  LatchChild() noexcept = default;
  explicit LatchChild(std::coroutine_handle<promise_type> h) noexcept : handle(h) {}
  LatchChild(LatchChild&& o) noexcept : handle(std::exchange(o.handle, {})) {}
  LatchChild& operator=(LatchChild&& o) noexcept {
    if (this != &o) {
      if (handle) handle.destroy();
      handle = std::exchange(o.handle, {});
    }
    return *this;
  }
  ~LatchChild() {
    if (handle) handle.destroy();
  }
  std::coroutine_handle<promise_type> handle;
};

// Runs `task` and keeps its result or exception in `out`; never throws.
template <class T>
Task<> settle(Task<T> task, Outcome<T>& out) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      out.value.emplace();
    } else {
      out.value.emplace(co_await std::move(task));
    }
  } catch (...) {
    out.error = std::current_exception();
  }
}

template <class T>
LatchChild run_into_outcome(Task<T> task, Outcome<T>& out) {
  co_await settle(std::move(task), out);
}

// Starts every child; suspends the awaiter unless all of them finished synchronously.
struct LatchAwaiter {
  Latch& latch;
  LatchChild* children;
  std::size_t count;
  bool await_ready() const noexcept { return count == 0; }
  bool await_suspend(std::coroutine_handle<> awaiter) noexcept {
    latch.awaiter = awaiter;
    latch.remaining.store(count + 1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < count; ++i) {
      children[i].handle.promise().latch = &latch;
      children[i].handle.resume();
    }
    // The awaiter's own share: whoever takes the count to zero resumes it.
    return latch.remaining.fetch_sub(1, std::memory_order_acq_rel) != 1;
  }
  void await_resume() const noexcept {}
};

template <class T>
ValueOrMonostate<T> take_outcome(Outcome<T>& out) {
  if (out.error) std::rethrow_exception(out.error);
  return std::move(*out.value);
}

template <class... Ts, std::size_t... I>
Task<std::tuple<ValueOrMonostate<Ts>...>> when_all_tuple(std::index_sequence<I...>, Task<Ts>... tasks) {
  std::tuple<Outcome<Ts>...> outcomes;
  LatchChild children[] = {run_into_outcome(std::move(tasks), std::get<I>(outcomes))...};
  Latch latch;
  co_await LatchAwaiter{latch, children, sizeof...(Ts)};
  std::exception_ptr first;
  ((first = first ? first : std::get<I>(outcomes).error), ...);
  if (first) std::rethrow_exception(first);
  co_return std::tuple<ValueOrMonostate<Ts>...>(std::move(*std::get<I>(outcomes).value)...);
}

// when_any's shared state: it outlives the awaiter while losing tasks still run.
template <class T>
struct AnyState {
  std::atomic<bool> decided{false};
  std::coroutine_handle<> awaiter;
  std::size_t index = 0;
  Outcome<T> outcome;
};

struct Detaching {
  struct promise_type : frame_pool::PooledFrame {
    Detaching get_return_object() noexcept {
      return Detaching{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

template <class T>
Detaching run_racing(Task<T> task, std::size_t index, std::shared_ptr<AnyState<T>> state) {
  Outcome<T> out;
  co_await settle(std::move(task), out);
  if (!state->decided.exchange(true, std::memory_order_acq_rel)) {
    state->index = index;
    state->outcome = std::move(out);
    state->awaiter.resume();
  }
}

// Holds references only: g++ 12 can destroy a co_await operand's temporary a second time when the
// awaiting frame is destroyed, which double-released a shared_ptr member here (seen under ASan).
template <class T>
struct AnyAwaiter {
  const std::shared_ptr<AnyState<T>>& state;
  std::vector<Task<T>>& tasks;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> awaiter) {
    state->awaiter = awaiter;
    std::vector<Detaching> racers;
    racers.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) racers.push_back(run_racing(std::move(tasks[i]), i, state));
    // Once the first racer starts, this awaiter may already be resumed and gone: use locals only.
    for (Detaching& r : racers) r.handle.resume();
  }
  void await_resume() const noexcept {}
};

}  // namespace detail

/// Runs all tasks concurrently; yields a tuple of their results (std::monostate for void).
template <class... Ts>
Task<std::tuple<detail::ValueOrMonostate<Ts>...>> when_all(Task<Ts>... tasks) {
  return detail::when_all_tuple(std::index_sequence_for<Ts...>{}, std::move(tasks)...);
}

/// Runs all tasks concurrently; yields their results in order (std::monostate for void).
template <class T>
Task<std::vector<detail::ValueOrMonostate<T>>> when_all(std::vector<Task<T>> tasks) {
  std::vector<detail::Outcome<T>> outcomes(tasks.size());
  std::vector<detail::LatchChild> children;
  children.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) children.push_back(detail::run_into_outcome(std::move(tasks[i]), outcomes[i]));
  detail::Latch latch;
  co_await detail::LatchAwaiter{latch, children.data(), children.size()};
  std::vector<detail::ValueOrMonostate<T>> values;
  values.reserve(outcomes.size());
  for (auto& out : outcomes) values.push_back(detail::take_outcome(out));
  co_return values;
}

/// Runs all tasks concurrently; yields the index and result of the first to finish (rethrows its
/// exception). Throws std::invalid_argument for an empty vector.
template <class T>
Task<std::pair<std::size_t, detail::ValueOrMonostate<T>>> when_any(std::vector<Task<T>> tasks) {
  if (tasks.empty()) throw std::invalid_argument("when_any needs at least one task");
  auto state = std::make_shared<detail::AnyState<T>>();
  co_await detail::AnyAwaiter<T>{state, tasks};
  co_return std::pair<std::size_t, detail::ValueOrMonostate<T>>(state->index, detail::take_outcome(state->outcome));
}

}  // namespace weft
