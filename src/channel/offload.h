#pragma once
// Internal: the executor side of a context whose handler runs on an ExecutorGroup thread.
//
// Events for the handler are posted to one executor (an EventLoop: FIFO, so per-channel order
// holds); what the handler emits is posted back to the channel's loop (FIFO from that executor).
// Queued bytes are counted per offloaded context and for the group; at a bound the channel stops
// reading, and the loop turns reading back on once both are at or below half their bound.
//
// Lifetime: shared by the context and every task in flight. A removed context is handed to the
// executor (retire()) so that handler_removed runs after every queued event, and is freed on the
// loop after everything the handler posted there (or once a terminated loop finished draining) --
// while a ChannelPtr keeps the pipeline alive. Executor tasks hold an EventLoop::KeepAlive, so the
// loop's memory stays valid for their posts while its group is being destroyed.

#include <atomic>
#include <cstddef>
#include <memory>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/core/event_loop.h"
#include "weft/core/executor_group.h"
#include "weft/core/unique_function.h"

namespace weft {

class Channel;
class Context;

namespace detail {

class Offload : public std::enable_shared_from_this<Offload> {
 public:
  Offload(ExecutorGroup& group, Channel& channel);

  EventLoop& executor() const noexcept { return executor_; }
  // Loop thread. Queues `task` for the executor, counting `size` bytes until it has run.
  void to_executor(std::size_t size, UniqueFunction<void()> task);
  // Executor thread (any thread). Queues `task` for the loop.
  void to_loop(UniqueFunction<void()> task);
  // Loop thread. Runs handler_removed on the executor after every queued event, then frees the
  // context on the loop. Returns the context back when the executor has terminated.
  ContextPtr retire(ContextPtr ctx);

 private:
  void after_task(std::size_t size);  // executor thread
  void post_resume();                 // any thread
  void maybe_resume();                // loop thread
  void wait_for_group();              // any thread

  ExecutorGroup& group_;
  EventLoop& executor_;
  EventLoop& loop_;
  Channel& channel_;
  std::weak_ptr<Channel> channel_ref_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> paused_{false};  // written on the loop only
  std::atomic<bool> resume_posted_{false};
  std::atomic<bool> waiting_for_group_{false};
  ReadSuspension reading_;  // loop thread only
};

}  // namespace detail
}  // namespace weft
