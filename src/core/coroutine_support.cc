#include <stdexcept>
#include <string>

#include "weft/core/awaitables.h"
#include "weft/core/log.h"
#include "weft/core/spawn.h"

namespace weft {
namespace detail {

bool start_on(EventLoop& loop, std::coroutine_handle<> handle) noexcept {
  if (loop.in_loop()) {
    handle.resume();
    return true;
  }
  if (loop.try_execute([handle] { handle.resume(); })) return true;
  handle.destroy();
  return false;
}

void log_detached_failure(std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "a detached coroutine failed: {}", e.what());
  } catch (...) {
    log(LogLevel::warn, "a detached coroutine failed with a non-standard exception");
  }
}

EventLoop& current_loop_for(const char* what) {
  EventLoop* loop = EventLoop::current();
  if (loop == nullptr) throw std::logic_error(std::string(what) + " must run on an event loop thread");
  return *loop;
}

void resume_on(EventLoop& loop, std::coroutine_handle<> handle, bool* cancelled) noexcept {
  if (loop.in_loop()) {
    handle.resume();
    return;
  }
  UniqueFunction<void()> task(ResumeTask(handle, cancelled));
  // Rejected: `task` is still ours, and destroying it resumes the coroutine here, cancelled.
  loop.try_execute(std::move(task));
}

void throw_loop_terminated(const char* what) {
  throw EventLoopTerminatedError(std::string(what) + ": the coroutine's event loop terminated during the wait");
}

}  // namespace detail

bool SleepAwaiter::await_suspend(std::coroutine_handle<> handle) {
  EventLoop& loop = detail::current_loop_for("co_await sleep(...)");
  if (loop.is_terminated()) {  // its timers are gone already: nothing would ever fire
    cancelled_ = true;
    return false;
  }
  loop.schedule(delay_, detail::ResumeTask(handle, &cancelled_));
  return true;
}

}  // namespace weft
