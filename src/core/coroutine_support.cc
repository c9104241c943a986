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

void resume_on(EventLoop& loop, std::coroutine_handle<> handle) noexcept {
  if (loop.in_loop()) {
    handle.resume();
    return;
  }
  if (!loop.try_execute([handle] { handle.resume(); })) {
    log(LogLevel::warn, "a coroutine cannot resume: its event loop is shut down");
  }
}

}  // namespace detail

void SleepAwaiter::await_suspend(std::coroutine_handle<> handle) {
  EventLoop& loop = detail::current_loop_for("co_await sleep(...)");
  loop.schedule(delay_, [handle] { handle.resume(); });
}

}  // namespace weft
