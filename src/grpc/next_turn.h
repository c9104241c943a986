#pragma once
// An awaiter that resumes the coroutine from its loop's task queue, after the loop has polled its
// I/O: a coroutine that writes or reads many messages without suspending (each completing at once)
// lets the loop take a turn with it -- other streams, a reset read meanwhile -- and, in builds
// without tail calls (ASan), does not grow the stack without bound. Does not suspend on a
// terminated loop. Loop thread only.

#include <coroutine>

#include "weft/core/event_loop.h"

namespace weft::grpc::detail {

struct NextTurn {
  EventLoop& loop;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> handle) noexcept {
    return loop.try_execute(UniqueFunction<void()>([handle] { handle.resume(); }));
  }
  void await_resume() const noexcept {}
};

}  // namespace weft::grpc::detail
