#pragma once
/// @file
/// LoopCallback: work a component asks its event loop to run once, on the loop's next turn, outside
/// whatever is on the stack now (folly's EventBase::LoopCallback). The component owns it as a member:
///
///   class Codec {
///     LoopCallback flush_later_{[this] { flush(); }};
///     void want_flush() { if (!flush_later_.schedule(loop)) flush(); }  // terminated: no later turn
///   };
///
/// It replaces a "posted" flag and an alive token: scheduling it again while it waits changes nothing
/// (it runs once), and destroying it cancels it, so a callback never runs for a component that is
/// gone. Scheduling allocates nothing: the callback is linked into the loop's list, which the loop
/// runs each turn after the tasks posted from other threads and before its own tasks.
///
/// A terminated loop (its final drain over) runs nothing more: schedule() then returns false and
/// the callback does not run, now or later. It never throws and never runs inside schedule(); the
/// owner learns it there and decides what the work becomes (a flush of bytes owed is done at once,
/// work that only serves a later turn is given up). Coroutines wait through the awaitables of
/// loop_signal.h, where the same case resumes the co_await with EventLoopTerminatedError, as
/// ResumeTask (awaitables.h) does.

#include <utility>

#include "weft/core/unique_function.h"

namespace weft {

class EventLoop;

namespace detail {
// A link of the loop's circular list of callbacks (the loop's sentinel is one too).
struct LoopCallbackLink {
  LoopCallbackLink* prev = this;
  LoopCallbackLink* next = this;

  bool linked() const noexcept { return next != this; }
  void unlink() noexcept {
    prev->next = next;
    next->prev = prev;
    prev = next = this;
  }
  void link_before(LoopCallbackLink& at) noexcept {
    prev = at.prev;
    next = &at;
    at.prev->next = this;
    at.prev = this;
  }
};
}  // namespace detail

/// A callback run once on its loop's next turn when scheduled (see the file's description).
/// Neither copyable nor movable: the loop links it where it is.
class LoopCallback : private detail::LoopCallbackLink {
 public:
  /// Runs `fn` each time the callback comes due. `fn` may schedule the callback again (it then runs
  /// on the following turn) and may destroy it (its owner): the loop touches nothing of it after.
  explicit LoopCallback(UniqueFunction<void()> fn) noexcept : fn_(std::move(fn)) {}
  /// Loop thread only while scheduled. Cancels it.
  ~LoopCallback() { cancel(); }
  LoopCallback(const LoopCallback&) = delete;
  LoopCallback& operator=(const LoopCallback&) = delete;

  /// Loop thread only. Runs the callback once on `loop`'s next turn. True when it will run (also
  /// when it was already scheduled: nothing changes); false when `loop` has terminated: it will not
  /// run, and the caller decides what the work becomes. Never throws, allocates nothing.
  [[nodiscard]] bool schedule(EventLoop& loop) noexcept;
  /// Loop thread only. It will not run unless scheduled again; nothing when it is not scheduled.
  void cancel() noexcept {
    if (loop_ != nullptr) unschedule();
  }
  /// Loop thread only. True from schedule() until it runs or is cancelled.
  bool is_scheduled() const noexcept { return loop_ != nullptr; }

 private:
  friend class EventLoop;
  void unschedule() noexcept;

  UniqueFunction<void()> fn_;
  EventLoop* loop_ = nullptr;  // scheduled on it
};

}  // namespace weft
