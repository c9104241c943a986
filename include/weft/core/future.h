#pragma once
/// @file
/// Future<T> / Promise<T>: a one-shot result owned by an event loop.
///
/// A promise may be completed from any thread; the listeners of its future always run on the owning
/// loop (inline when completion happens there, posted otherwise). A future without an owning loop
/// runs listeners on the completing thread. get() and wait() block a non-loop thread; on the loop that
/// must complete the future they throw BlockingOperationError at once instead of deadlocking.
///
/// Every future completes, with its value or with a typed error: when the last Promise handle of a
/// pending future is destroyed, the future fails with BrokenPromiseError; a listener whose loop has
/// terminated runs on the completing thread instead of being dropped (see EventLoop::execute).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "weft/core/clock.h"
#include "weft/core/error.h"
#include "weft/core/frame_pool.h"
#include "weft/core/unique_function.h"

namespace weft {

class EventLoop;
template <class T>
class Future;
template <class T>
class Promise;

namespace detail {

bool loop_in_loop(const EventLoop* loop) noexcept;
void loop_execute(EventLoop* loop, UniqueFunction<void()> task);
[[noreturn]] void throw_blocking_on_loop(const EventLoop* loop);
void log_listener_exception(std::exception_ptr error) noexcept;

template <class T>
using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// A future state's lock: its sections are a few moves long, so a waiter spins (yielding after a
// while, for a holder that was preempted) rather than paying a mutex's calls on every completion.
class SpinLock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// The listeners of a pending future in the order they were added: the first one inline (most
// futures have one: a request's caller, a co_await), the others in a vector, so that one listener
// costs no allocation. Not thread-safe (the state's lock guards it).
template <class Listener>
class ListenerList {
 public:
  bool empty() const noexcept { return !first_; }
  void push_back(Listener fn) {
    if (!first_) {
      first_ = std::move(fn);
    } else {
      more_.push_back(std::move(fn));
    }
  }
  // Moves the listeners out, leaving this one empty.
  ListenerList take() noexcept {
    ListenerList out;
    out.first_ = std::move(first_);
    out.more_.swap(more_);
    return out;
  }
  template <class F>
  void for_each(F&& f) {
    if (!first_) return;
    f(first_);
    for (auto& fn : more_) f(fn);
  }

 private:
  Listener first_;
  std::vector<Listener> more_;
};

// std::allocate_shared's allocator for a future's state: blocks from the per-thread frame pool
// (frame_pool.h), so that a promise made and completed per request costs no trip to the general
// heap once the lists are warm (an HTTP response's state is larger than malloc's thread cache).
template <class T>
using FramePoolAllocator = frame_pool::Allocator<T>;

template <class T>
struct FutureState : std::enable_shared_from_this<FutureState<T>> {
  using Listener = UniqueFunction<void(const Future<T>&)>;
  using Listeners = ListenerList<Listener>;

  explicit FutureState(EventLoop* owner) : loop(owner) {}

  EventLoop* const loop;
  std::atomic<std::uint32_t> promises{1};  // Promise handles; the last one breaks a pending future
  SpinLock lock;                           // guards listeners, waiters and the completion itself
  // Set (release) once value or error is in place; neither changes after. Read without the lock.
  std::atomic<bool> done{false};
  std::uint32_t waiters = 0;  // threads that blocked (or are about to) in wait(): completion wakes them
  std::mutex wait_mutex;      // blocking waits only, with done_cv
  std::condition_variable done_cv;
  std::optional<Stored<T>> value;
  std::exception_ptr error;
  Listeners listeners;  // never hold the state itself: no cycle if never completed

  bool is_done() const noexcept { return done.load(std::memory_order_acquire); }

  // Blocks until done (the caller checked it may block); `until` is null for no deadline.
  bool block_until_done(const TimePoint* until) {
    {
      std::lock_guard guard(lock);
      if (done.load(std::memory_order_relaxed)) return true;
      ++waiters;
    }
    std::unique_lock wait_lock(wait_mutex);
    if (until == nullptr) {
      done_cv.wait(wait_lock, [&] { return is_done(); });
      return true;
    }
    return done_cv.wait_until(wait_lock, *until, [&] { return is_done(); });
  }

  // Runs the listeners on the owning loop (inline when already there).
  void run_listeners(Listeners fns) {
    if (fns.empty()) return;
    if (loop == nullptr || loop_in_loop(loop)) {
      Future<T> self(this->shared_from_this());
      fns.for_each([&self](Listener& fn) { run_guarded(fn, self); });
    } else {
      loop_execute(loop,
                   [self = Future<T>(this->shared_from_this()), fns = std::make_shared<Listeners>(std::move(fns))] {
                     fns->for_each([&self](Listener& fn) { run_guarded(fn, self); });
                   });
    }
  }

  static void run_guarded(Listener& fn, const Future<T>& self) noexcept {
    try {
      fn(self);
    } catch (...) {
      log_listener_exception(std::current_exception());
    }
  }

  template <class Setter>
  bool complete(Setter&& set) {
    // A waiter may drop the last other reference as soon as it sees `done` (a promise completed
    // through a reference, on another thread, by a task that outlives its owner's wait).
    const auto keep_alive = this->shared_from_this();
    Listeners to_run;
    bool wake = false;
    {
      std::lock_guard guard(lock);
      if (done.load(std::memory_order_relaxed)) return false;
      set();
      done.store(true, std::memory_order_release);
      to_run = listeners.take();
      wake = waiters != 0;
    }
    if (wake) {
      // Under wait_mutex: a waiter checks `done` and sleeps atomically with respect to this.
      std::lock_guard wait_lock(wait_mutex);
      done_cv.notify_all();
    }
    run_listeners(std::move(to_run));
    return true;
  }
};

std::exception_ptr broken_promise_error() noexcept;

// The slow path of ~Promise: fails a pending future whose last promise is gone.
// `sole_owner`: no Future handle is left, so only a listener could still see the outcome.
template <class T>
void break_promise(FutureState<T>& state, bool sole_owner) noexcept {
  if (sole_owner) {
    std::lock_guard guard(state.lock);
    if (state.listeners.empty()) return;
  }
  try {
    state.complete([&] { state.error = broken_promise_error(); });
  } catch (...) {
    log_listener_exception(std::current_exception());
  }
}

template <class T>
struct FutureTraits {
  using type = T;
  static constexpr bool is_future = false;
};
template <class T>
struct FutureTraits<Future<T>> {
  using type = T;
  static constexpr bool is_future = true;
};

}  // namespace detail

/// The read side of a one-shot result of type T (see the file's description). Copyable: copies
/// share the result. Thread-safe unless noted.
template <class T>
class Future {
 public:
  /// The result's type.
  using value_type = T;

  Future() = default;  ///< invalid until assigned; valid() is false

  /// Thread-safe.
  bool valid() const noexcept { return state_ != nullptr; }
  /// Thread-safe.
  bool is_done() const noexcept { return state_->is_done(); }
  /// Thread-safe. True when done without error.
  bool is_success() const noexcept { return state_->is_done() && !state_->error; }
  /// Thread-safe. The failure, or null while pending or after success.
  std::exception_ptr error() const noexcept { return state_->is_done() ? state_->error : nullptr; }
  /// Thread-safe; the owning loop may call it only once the future is done.
  void wait() const {
    if (state_->is_done()) return;
    if (detail::loop_in_loop(state_->loop)) detail::throw_blocking_on_loop(state_->loop);
    state_->block_until_done(nullptr);
  }
  /// Thread-safe; as wait(). Returns false on timeout.
  bool wait_for(Duration timeout) const {
    if (state_->is_done()) return true;
    if (detail::loop_in_loop(state_->loop)) detail::throw_blocking_on_loop(state_->loop);
    const TimePoint until = Clock::now() + timeout;
    return state_->block_until_done(&until);
  }
  /// Thread-safe; as wait(). Returns the value or rethrows the failure.
  decltype(auto) get() const {
    wait();
    if (state_->error) std::rethrow_exception(state_->error);
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      return static_cast<const T&>(*state_->value);
    }
  }

  /// Thread-safe; as wait(). Moves the value out, or rethrows the failure: the way to receive a
  /// move-only value (co_await uses it for those). For a future with one consumer: the value is taken
  /// once, and get() on any copy of this future afterwards sees what the move left behind.
  T take() const
    requires(!std::is_void_v<T>)
  {
    wait();
    if (state_->error) std::rethrow_exception(state_->error);
    return std::move(*state_->value);
  }

  /// Thread-safe. `fn(const Future<T>&)` runs on the owning loop once done (at once when done and
  /// called on that loop).
  template <class F>
  void add_listener(F&& fn) const {
    typename detail::FutureState<T>::Listener listener(std::forward<F>(fn));
    if (!state_->is_done()) {
      std::lock_guard guard(state_->lock);
      if (!state_->done.load(std::memory_order_relaxed)) {
        state_->listeners.push_back(std::move(listener));
        return;
      }
    }
    typename detail::FutureState<T>::Listeners one;
    one.push_back(std::move(listener));
    state_->run_listeners(std::move(one));
  }

  /// Thread-safe. Chains `fn` on success: fn(const T&) (or fn() for void) returning R or Future<R>.
  /// A failure, or an exception thrown by fn, fails the returned future.
  template <class F>
  auto then(F&& fn) const {
    using Raw = std::conditional_t<std::is_void_v<T>, std::invoke_result<F>, std::invoke_result<F, const T&>>;
    using R = typename Raw::type;
    using Traits = detail::FutureTraits<R>;
    using Out = typename Traits::type;
    Promise<Out> next(state_->loop);
    Future<Out> result = next.future();
    add_listener([next, fn = std::forward<F>(fn)](const Future<T>& done) mutable {
      if (auto err = done.error()) {
        next.set_error(err);
        return;
      }
      try {
        if constexpr (Traits::is_future) {
          R inner = call(fn, done);
          inner.add_listener([next](const R& f) mutable { next.complete_from(f); });
        } else if constexpr (std::is_void_v<Out>) {
          call(fn, done);
          next.set_value();
        } else {
          next.set_value(call(fn, done));
        }
      } catch (...) {
        next.set_error(std::current_exception());
      }
    });
    return result;
  }

  /// The loop that runs this future's listeners (may be null).
  EventLoop* loop() const noexcept { return state_->loop; }

 private:
  template <class F>
  static decltype(auto) call(F& fn, const Future<T>& done) {
    if constexpr (std::is_void_v<T>) {
      return fn();
    } else {
      return fn(*done.state_->value);
    }
  }

  friend class Promise<T>;
  friend struct detail::FutureState<T>;
  explicit Future(std::shared_ptr<detail::FutureState<T>> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::FutureState<T>> state_;
};

/// The write side of a one-shot result of type T: completes its future once (see the file's
/// description). Copyable: copies complete the same future.
template <class T>
class Promise {
 public:
  /// `loop` owns the future: its listeners run there. Null: listeners run on the completing thread.
  explicit Promise(EventLoop* loop = nullptr)
      : state_(
            std::allocate_shared<detail::FutureState<T>>(detail::FramePoolAllocator<detail::FutureState<T>>(), loop)) {}
  /// Copies share the future; it breaks only when the last copy goes without completing it.
  Promise(const Promise& other) noexcept : state_(other.state_) {
    if (state_) state_->promises.fetch_add(1, std::memory_order_relaxed);
  }
  /// Takes `other`'s future; `other` no longer completes it.
  Promise(Promise&& other) noexcept = default;
  /// Lets go of the current future (failing it if this was its last handle), then shares `other`'s.
  Promise& operator=(const Promise& other) noexcept {
    if (this != &other) *this = Promise(other);
    return *this;
  }
  /// Lets go of the current future (failing it if this was its last handle), then takes `other`'s.
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      release();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  /// Not thread-safe with other uses of this handle. The last handle of a pending future fails it
  /// with BrokenPromiseError (listeners run as for any completion).
  ~Promise() { release(); }

  /// Thread-safe.
  Future<T> future() const { return Future<T>(state_); }

  /// Thread-safe. Returns false when already completed.
  template <class U = T, class = std::enable_if_t<!std::is_void_v<U>>>
  bool set_value(U value) {
    return state_->complete([&] { state_->value.emplace(std::move(value)); });
  }
  /// Thread-safe. Returns false when already completed.
  template <class U = T, class = std::enable_if_t<std::is_void_v<U>>>
  bool set_value() {
    return state_->complete([&] { state_->value.emplace(); });
  }
  /// Thread-safe. Returns false when already completed.
  bool set_error(std::exception_ptr error) {
    return state_->complete([&] { state_->error = std::move(error); });
  }
  /// Thread-safe. Completes with an exception object.
  template <class E>
  bool fail(E&& error) {
    return set_error(std::make_exception_ptr(std::forward<E>(error)));
  }
  /// Thread-safe. Completes with the outcome of a finished future of the same type.
  bool complete_from(const Future<T>& done) {
    if (auto err = done.error()) return set_error(err);
    if constexpr (std::is_void_v<T>) {
      return set_value();
    } else {
      return set_value(done.get());
    }
  }
  /// Thread-safe.
  bool is_done() const noexcept { return state_->is_done(); }

 private:
  void release() noexcept {
    if (!state_) return;
    std::shared_ptr<detail::FutureState<T>> state = std::move(state_);
    // acq_rel: the last handle sees whatever the others did before letting go.
    if (state->promises.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    detail::break_promise(*state, state.use_count() == 1);
  }

  std::shared_ptr<detail::FutureState<T>> state_;
};

/// A future that is already complete. Thread-safe.
inline Future<void> make_ready_future(EventLoop* loop = nullptr) {
  Promise<void> p(loop);
  p.set_value();
  return p.future();
}
/// A future that already holds `value`. Thread-safe.
template <class T>
Future<T> make_ready_future(T value, EventLoop* loop = nullptr) {
  Promise<T> p(loop);
  p.set_value(std::move(value));
  return p.future();
}
/// A future that already failed with `error`. Thread-safe.
template <class T>
Future<T> make_failed_future(std::exception_ptr error, EventLoop* loop = nullptr) {
  Promise<T> p(loop);
  p.set_error(std::move(error));
  return p.future();
}

}  // namespace weft
