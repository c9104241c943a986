#pragma once
/// @file
/// Pipeline: the ordered chain of handlers of one channel, between a head (the transport) and a
/// tail (which logs what nobody consumed).
///
///   socket -> head -> h1 -> h2 -> ... -> tail      inbound events (fire_*)
///   socket <- head <- h1 <- h2 <- ... <- tail      outbound operations (write, flush, close, ...)
///
/// Loop thread only, or before the channel is registered. Handlers may be added and removed at any
/// time, also from inside a handler's callback. Adding a handler whose message types do not match
/// its neighbours throws PipelineTypeError naming both handlers and both types; adding one that is
/// not sharable and already in a pipeline throws std::invalid_argument (see Handler::is_sharable).
///
/// Rules this class keeps, each by one mechanism:
/// - No re-entrancy across channels. An inbound event that enters at the head (fire_* below) while
///   another channel's event is being handled on this thread and this pipeline was called from it
///   (a write, flush or close by that channel's handler) is posted to the loop and delivered once
///   the call has returned. So the events a channel raises itself (channel_inactive when it closes,
///   the exception of a failed write, writability_changed, the shutdown events) never run inside
///   another channel's handler. Raised while one of the pipeline's own events is being handled, or
///   with no channel's event on the stack (I/O, a timer, a task, a test), they are delivered at
///   once, as Netty does. fire_read is the transport's, from I/O only.
/// - Removal is delayed destruction. A removed context and its handler are freed from a loop task,
///   once every invocation on the stack has returned, whatever entered it: I/O, a timer, a future
///   listener, a resumed coroutine (none needs a guard of its own). Once the loop has terminated
///   (its final drain over) no task runs any more, and the thread that calls on the channel stands
///   for the loop: what is removed then is freed when no call on any pipeline is left on that
///   thread's stack -- at once when there is none. A handler that removes itself there from
///   outside any pipeline call (a coroutine resumed by a completion) must not use its context
///   after the removal.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/channel/context.h"
#include "weft/core/frame_pool.h"
#include "weft/core/stall_watch.h"

namespace weft {

class ExecutorGroup;

namespace detail {
// Pipeline events (of any channel) being handled on this thread's stack.
extern constinit thread_local int events_on_this_thread;
// Calls on pipelines (of any channel) on this thread's stack.
extern constinit thread_local int pipeline_calls_on_this_thread;
// Pipelines whose loop has terminated wait for this thread's outermost pipeline call to return to
// free what was removed from them (Pipeline::schedule_free).
extern constinit thread_local bool frees_wait_on_this_thread;
// Frees what waits: no pipeline call is left on this thread's stack.
void free_what_waits_on_this_thread() noexcept;

// The transport end of the pipeline: outbound operations reach the channel here.
class PipelineHead final : public Handler {
 public:
  explicit PipelineHead(Channel& channel) noexcept : channel_(channel) {}
  void write_message(Context&, MessageRef message) override;
  void flush(Context&) override;
  void read(Context&) override;
  void close(Context&, Promise<void> promise) override;
  void bind(Context&, const SocketAddress& local, Promise<void> promise) override;
  void connect(Context&, const SocketAddress& remote, Promise<void> promise) override;

 private:
  Channel& channel_;
};

// The application end: whatever arrives here was not consumed by any handler.
class PipelineTail final : public Handler {
 public:
  explicit PipelineTail(Channel& channel) noexcept : channel_(channel) {}
  void channel_active(Context&) override {}
  void channel_inactive(Context&) override {}
  void channel_read_complete(Context&) override {}
  void user_event(Context&, const std::any&) override {}
  void writability_changed(Context&) override {}
  void exception_caught(Context&, std::exception_ptr error) override;
  void read_message(Context&, MessageRef message) override;

 private:
  Channel& channel_;
};
}  // namespace detail

/// The ordered chain of handlers of one channel (see the file's description). Loop thread only,
/// or before the channel is registered.
class Pipeline {
 public:
  /// The empty pipeline of `channel` (the channel makes it).
  explicit Pipeline(Channel& channel);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// Throw std::invalid_argument on a duplicate or unknown name, PipelineTypeError on a type mismatch
  /// (the pipeline is then unchanged).
  Pipeline& add_last(std::string name, std::shared_ptr<Handler> handler);
  /// Adds `handler` as `name` right after the head. Throws as add_last().
  Pipeline& add_first(std::string name, std::shared_ptr<Handler> handler);
  /// Adds `handler` as `name` right before the handler named `base`. Throws as add_last().
  Pipeline& add_before(std::string_view base, std::string name, std::shared_ptr<Handler> handler);
  /// Adds `handler` as `name` right after the handler named `base`. Throws as add_last().
  Pipeline& add_after(std::string_view base, std::string name, std::shared_ptr<Handler> handler);
  /// Executor offload: the handler's callbacks run on one executor thread of `executors`, in order,
  /// while the rest of the pipeline stays on the loop (see ExecutorGroup for the queue bounds).
  /// The channel must be owned by a shared_ptr (every registered channel is); throws
  /// std::logic_error otherwise.
  Pipeline& add_last(ExecutorGroup& executors, std::string name, std::shared_ptr<Handler> handler);
  /// As add_last(ExecutorGroup&, ...), right after the head.
  Pipeline& add_first(ExecutorGroup& executors, std::string name, std::shared_ptr<Handler> handler);
  /// Makes an H from `args` and adds it last as `name`; returns it.
  template <class H, class... Args>
  H& emplace_last(std::string name, Args&&... args) {
    auto handler = std::make_shared<H>(std::forward<Args>(args)...);
    H& ref = *handler;
    add_last(std::move(name), std::move(handler));
    return ref;
  }

  /// Remove a handler (handler_removed runs). Throw std::invalid_argument when absent.
  std::shared_ptr<Handler> remove(std::string_view name);
  /// Removes `handler` (handler_removed runs). Throws std::invalid_argument when absent.
  void remove(const Handler& handler);
  /// Replaces a handler in place; type-checked like add.
  std::shared_ptr<Handler> replace(std::string_view old_name, std::string new_name, std::shared_ptr<Handler> handler);

  /// The handler named `name`, or null.
  Handler* get(std::string_view name) const noexcept;
  /// The handler named `name` as an H, or null (absent, or not an H).
  template <class H>
  H* get_as(std::string_view name) const noexcept {
    return dynamic_cast<H*>(get(name));
  }
  /// The context of the handler named `name`, or null.
  Context* context(std::string_view name) const noexcept;
  /// The context of `handler`, or null when it is not in this pipeline.
  Context* context(const Handler& handler) const noexcept;
  /// The handlers' names, head to tail.
  std::vector<std::string> names() const;
  /// The channel this pipeline belongs to.
  Channel& channel() const noexcept { return channel_; }

  // ---- inbound events, starting at the first handler
  /// Fires channel_active at the first handler.
  void fire_channel_active();
  /// Fires channel_inactive at the first handler.
  void fire_channel_inactive();
  /// Fires a read of `message` at the first handler (the transport's, from I/O). Takes ownership.
  template <class T>
  void fire_read(T&& message) {
    EventDepth depth(*this);
    if (detail::StallWatch* watch = detail::t_stall_watch) [[unlikely]] {
      fire_read_watched(*watch, MessageRef::of(message));
      return;
    }
    head_.fire_read(std::forward<T>(message));
  }
  /// Fires channel_read_complete at the first handler.
  void fire_read_complete();
  /// Fires a user event at the first handler.
  void fire_user_event(const std::any& event);
  /// Fires writability_changed at the first handler.
  void fire_writability_changed();
  /// Fires an exception at the first handler.
  void fire_exception(std::exception_ptr error);

  // ---- outbound operations, starting at the last handler
  /// Writes `message` starting at the last handler; not sent until flush(). Takes ownership.
  template <class T>
  void write(T&& message) {
    Depth depth(*this);
    tail_.write(std::forward<T>(message));
  }
  /// write() then flush().
  template <class T>
  void write_and_flush(T&& message) {
    Depth depth(*this);
    tail_.write(std::forward<T>(message));
    tail_.flush();
  }
  /// As write(), completing `done` once the bytes have been written (see Channel::write(message, done)).
  template <class T>
  void write(T&& message, Promise<void> done) {
    const std::uint32_t refusals = channel_write_refusals();
    write(std::forward<T>(message));
    add_write_completion(std::move(done), refusals);
  }
  /// As write_and_flush(), completing `done` as write(message, done) does.
  template <class T>
  void write_and_flush(T&& message, Promise<void> done) {
    const std::uint32_t refusals = channel_write_refusals();
    write_and_flush(std::forward<T>(message));
    add_write_completion(std::move(done), refusals);
  }
  /// Flushes starting at the last handler.
  void flush();
  /// Requests a read batch starting at the last handler.
  void read();
  /// Closes the channel starting at the last handler; completes `promise` when closed.
  void close(Promise<void> promise);
  /// Binds starting at the last handler; completes `promise`.
  void bind(const SocketAddress& local, Promise<void> promise);
  /// Connects starting at the last handler; completes `promise`.
  void connect(const SocketAddress& remote, Promise<void> promise);

  /// Removes every handler (handler_removed runs for each). Used when a channel is torn down.
  void clear();

 private:
  friend class Context;
  friend struct detail::ContextDeleter;
  friend class Channel;
  friend void detail::free_what_waits_on_this_thread() noexcept;

  // Counts the calls on this pipeline that are on the stack (see the rules above).
  struct Depth {
    explicit Depth(Pipeline& p) noexcept : pipeline(p) {
#ifndef NDEBUG
      pipeline.check_thread("a pipeline operation");
#endif
      ++pipeline.depth_;
      ++detail::pipeline_calls_on_this_thread;
    }
    ~Depth() {
      --pipeline.depth_;
      // The thread's outermost pipeline call returns: what was removed meanwhile from pipelines
      // whose loop has terminated is freed now (this pipeline may go with it: nothing after).
      if (--detail::pipeline_calls_on_this_thread == 0 && detail::frees_wait_on_this_thread) [[unlikely]] {
        detail::free_what_waits_on_this_thread();
      }
    }
    Pipeline& pipeline;
  };
  // A call that is one of the pipeline's own inbound events.
  struct EventDepth : Depth {
    explicit EventDepth(Pipeline& p) noexcept : Depth(p) {
      ++pipeline.events_;
      ++detail::events_on_this_thread;
    }
    ~EventDepth() {
      --pipeline.events_;
      --detail::events_on_this_thread;
    }
  };
  // This pipeline was called from another channel's event: none of its own is on the stack.
  bool called_from_another_channel() const noexcept {
    return depth_ != 0 && events_ == 0 && detail::events_on_this_thread != 0;
  }

  // Runs `event` (it enters at the head) as one of the pipeline's events: now, or from a loop task
  // when called_from_another_channel(). The one place that keeps the re-entrancy rule.
  template <class Event>
  void deliver(const Event& event);
  // Posts a copy of `event` to run as an event; false when the channel has no loop to run it.
  template <class Event>
  bool post_later(const Event& event);
  // The end of Channel::close_now -- channel_inactive, the close future, the teardown -- as one
  // event, so that nothing of it runs inside the call that closed the channel.
  void deliver_close(bool was_active, std::shared_ptr<Channel> keep_alive);
  // ChannelOutputClosingEvent from the head, then `then`, as one event (so that what the handlers
  // write on the event is queued before `then` looks at the write queue).
  void deliver_output_closing(std::function<void()> then);
  // Frees the removed contexts from a loop task (once the channel is registered: it has a loop);
  // on a terminated loop, once no pipeline call is on the thread's stack (see the rules above).
  void schedule_free();
  // Frees the removed contexts now. It may free the channel, and this pipeline: nothing after.
  void free_removed() noexcept;
  // A handler that is not sharable is in one pipeline at a time (Handler::is_sharable).
  static void claim(Handler& handler, std::string_view name);
  static void release(Handler& handler) noexcept;

  // The channel's write completions (Channel::write(message, done)), for the templates above and Context.
  std::uint32_t channel_write_refusals() const noexcept;
  void add_write_completion(Promise<void> done, std::uint32_t refusals_before);
  // Debug builds: aborts when a registered channel's pipeline is used off its loop.
  void check_thread(const char* operation) const noexcept;
  Context* find(std::string_view name) const noexcept;
  Context& find_or_throw(std::string_view name) const;
  std::shared_ptr<Handler> remove_context(Context& c);  // remove(name) once found
  void link_after(Context& prev, ContextPtr ctx);
  // In a free inline slot when there is one and the handler runs on the loop, else on the heap.
  ContextPtr new_context(std::string name, std::shared_ptr<Handler> handler, ExecutorGroup* executors = nullptr);
  void free_slot(int slot) noexcept { used_slots_ &= static_cast<std::uint8_t>(~(1u << slot)); }
  void unlink(Context& ctx);
  void check_types() const;
  void check_name_free(std::string_view name) const;
  // fire_read while the loop watches for stalls: the read is a unit of the loop's work, named by the
  // pipeline's handlers; once one stalled, each handler's read is timed too (time_handler_reads()),
  // so that the next stall names the handler.
  void fire_read_watched(detail::StallWatch& watch, MessageRef message);
  void time_handler_reads() noexcept;

  // Storage for the first few handlers' contexts, so that a connection's pipeline is one block
  // with its channel rather than a chain of heap objects each a cache miss away.
  static constexpr int kInlineContexts = 4;
  struct alignas(Context) ContextSlot {
    std::byte bytes[sizeof(Context)];
  };

  // ---- one line read on every event, then the contexts' lines side by side
  detail::PipelineHead head_handler_;
  detail::PipelineTail tail_handler_;
  Channel& channel_;
  std::uint16_t depth_ = 0;   // calls on this pipeline on the stack
  std::uint16_t events_ = 0;  // ... of which are its own inbound events
  std::uint8_t used_slots_ = 0;  // bit i: slots_[i] holds a context
  bool free_scheduled_ = false;  // a task to free removed_ is posted
  bool free_when_unwound_ = false;  // waits for the thread's outermost pipeline call to return
  bool handler_reads_timed_ = false;  // a read stalled: contexts added get Context::kReadTimed too
  Context head_;
  Context tail_;
  ContextSlot slots_[kInlineContexts];
  // ---- cold (a stream's pipeline is made per request: the lists come from the frame pool)
  using ContextList = std::vector<ContextPtr, frame_pool::Allocator<ContextPtr>>;
  ContextList contexts_;  // owns the contexts between head and tail
  ContextList removed_;   // freed by the task schedule_free() posts
  detail::ContextCold head_cold_;
  detail::ContextCold tail_cold_;
  detail::ContextCold slot_cold_[kInlineContexts];
};

}  // namespace weft
