#pragma once
// The five threading modes a behaviour is tested in (README's "Threading models"): handlers on the
// loop, the loop with asynchronous waits, handlers offloaded to an executor group, a coroutine per
// connection, and coroutines with asynchronous waits. Each test says how its mode is set up; this
// names them, for the test matrix and its test names. Thread-safe (constants).

namespace weft::test {

enum class ThreadingMode { loop, loop_async, offload, coroutine, coroutine_async };

inline const char* threading_mode_name(ThreadingMode mode) noexcept {
  switch (mode) {
    case ThreadingMode::loop: return "loop";
    case ThreadingMode::loop_async: return "loop_async";
    case ThreadingMode::offload: return "offload";
    case ThreadingMode::coroutine: return "coroutine";
    case ThreadingMode::coroutine_async: return "coroutine_async";
  }
  return "?";
}

}  // namespace weft::test
