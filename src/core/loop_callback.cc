#include "weft/core/loop_callback.h"

#include <atomic>

#include "weft/core/event_loop.h"

namespace weft {

bool LoopCallback::schedule(EventLoop& loop) noexcept {
  loop.assert_in_loop("LoopCallback::schedule");
  if (loop_ != nullptr) return true;
  // As a task posted from the loop's own thread: accepted until the final drain ends.
  if (loop.state_.load(std::memory_order_relaxed) == EventLoop::kTerminated && !loop.draining_) return false;
  link_before(loop.callbacks_);
  loop_ = &loop;
  return true;
}

void LoopCallback::unschedule() noexcept {
  loop_->assert_in_loop("LoopCallback::cancel");
  unlink();
  loop_ = nullptr;
}

}  // namespace weft
