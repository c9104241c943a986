#include "offload.h"

#include <exception>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/core/log.h"

namespace weft::detail {

Offload::Offload(ExecutorGroup& group, Channel& channel)
    : group_(group),
      executor_(group.next()),
      loop_(channel.loop()),
      channel_(channel),
      channel_ref_(channel.weak_from_this()) {}

void Offload::to_executor(std::size_t size, UniqueFunction<void()> task) {
  const std::size_t mine = queued_.fetch_add(size, std::memory_order_acq_rel) + size;
  group_.add_queued(size);
  const auto& limits = group_.options();
  if (!paused_.load(std::memory_order_relaxed)) {
    const bool group_full = group_.queued_bytes() >= limits.max_queued_bytes;
    if (mine >= limits.max_queued_bytes_per_channel || group_full) {
      paused_.store(true, std::memory_order_release);
      log(LogLevel::debug, "channel {}: executor queue full ({} bytes, group {}), reading paused", channel_.id(), mine,
          group_.queued_bytes());
      reading_.hold(channel_);  // on the loop: takes effect at once
      if (group_full) wait_for_group();
    }
  }
  auto self = shared_from_this();
  // The task may post to the loop (events the handler emits, a resume) while the loop group is
  // being destroyed: the hold keeps the loop's memory valid until the task is done.
  if (!executor_.try_execute([self, size, task = std::move(task), hold = EventLoop::KeepAlive(loop_)]() mutable {
        task();
        task = nullptr;  // captures (messages) are released before the bytes are
        self->after_task(size);
        hold.reset();
      })) {
    queued_.fetch_sub(size, std::memory_order_acq_rel);
    group_.release_queued(size);
    log(LogLevel::warn, "channel {}: executor has terminated; event dropped", channel_.id());
  }
}

void Offload::after_task(std::size_t size) {
  const std::size_t mine = queued_.fetch_sub(size, std::memory_order_acq_rel) - size;
  const std::size_t total = group_.release_queued(size);
  if (!paused_.load(std::memory_order_acquire)) return;
  const auto& limits = group_.options();
  if (mine > limits.max_queued_bytes_per_channel / 2) return;
  if (total <= limits.max_queued_bytes / 2) {
    post_resume();
  } else {
    wait_for_group();
  }
}

void Offload::wait_for_group() {
  if (waiting_for_group_.exchange(true, std::memory_order_acq_rel)) return;
  std::weak_ptr<Offload> weak = weak_from_this();
  group_.when_below_half([weak] {
    if (auto self = weak.lock()) {
      self->waiting_for_group_.store(false, std::memory_order_release);
      self->post_resume();
    }
  });
}

void Offload::post_resume() {
  if (resume_posted_.exchange(true, std::memory_order_acq_rel)) return;
  auto channel = channel_ref_.lock();
  if (!channel) return;
  auto self = shared_from_this();
  if (!loop_.try_execute([self, channel] {
        self->resume_posted_.store(false, std::memory_order_release);
        self->maybe_resume();
      })) {
    resume_posted_.store(false, std::memory_order_release);
  }
}

void Offload::maybe_resume() {
  if (!paused_.load(std::memory_order_relaxed)) return;
  const auto& limits = group_.options();
  if (queued_.load(std::memory_order_acquire) > limits.max_queued_bytes_per_channel / 2) return;  // after_task re-posts
  if (group_.queued_bytes() > limits.max_queued_bytes / 2) {
    wait_for_group();
    return;
  }
  paused_.store(false, std::memory_order_release);
  log(LogLevel::debug, "channel {}: executor queue drained, reading resumed", channel_.id());
  reading_.release(channel_);
}

void Offload::to_loop(UniqueFunction<void()> task) {
  if (!loop_.try_execute(std::move(task))) {
    log(LogLevel::debug, "channel {}: loop has terminated; event from the executor dropped", channel_.id());
  }
}

ContextPtr Offload::retire(ContextPtr ctx) {
  // The context, and the channel that keeps the pipeline it points into alive; both are freed on
  // the loop thread (or after it has finished), never while loop tasks may still use them.
  struct Retired {
    ContextPtr ctx;
    ChannelPtr keep;
    void free() noexcept {
      ctx.reset();
      keep.reset();
    }
  };
  auto retired = std::make_shared<Retired>(Retired{std::move(ctx), channel_ref_.lock()});
  auto self = shared_from_this();
  const bool queued = executor_.try_execute([self, retired, hold = EventLoop::KeepAlive(loop_)]() mutable {
    Context* raw = retired->ctx.get();
    try {
      raw->handler().handler_removed(*raw);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "handler '{}' threw from handler_removed: {}", raw->name(), e.what());
    }
    // Freed on the loop, after everything the handler posted there. A loop that has terminated may
    // still be draining those tasks: then free once its termination completes.
    if (!self->loop_.try_execute([retired] { retired->free(); })) {
      self->loop_.termination_future().add_listener([retired](const Future<void>&) { retired->free(); });
    }
    hold.reset();
  });
  if (queued) return nullptr;
  log(LogLevel::debug, "executor has terminated; handler_removed of '{}' runs on the loop", retired->ctx->name());
  return std::move(retired->ctx);
}

}  // namespace weft::detail
