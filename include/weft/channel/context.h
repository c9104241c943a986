#pragma once
/// @file
/// Context: a handler's place in a pipeline. Handlers use it to pass events on -- inbound events to
/// the next handler (fire_*), outbound operations to the previous one -- and to reach the channel.
///
/// Loop thread only. A context stays valid while its handler is in the pipeline; once removed, it
/// stays usable until every invocation on the stack has returned, whatever entered it (so a handler
/// may remove itself, also from a timer, a future listener or a coroutine; see Pipeline).
///
/// No inbound read reaches a handler after its channel_inactive: a context that has passed
/// channel_inactive to its handler drops (and the sender releases) any read that arrives later.
///
/// Executor offload: the context of a handler added with an ExecutorGroup is used by that handler
/// on its executor thread. Its event and operation methods (fire_*, write, flush, read, close, bind,
/// connect) may be called there: they are posted to the channel's loop, in order. Events that reach
/// such a handler are posted to its executor, in order. What the handler emits after it was removed
/// is dropped (with a debug log line). channel(), loop(), allocator(), handler() and name() are safe
/// from the executor; pipeline() and is_removed() are not.

#include <any>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "weft/channel/handler.h"
#include "weft/channel/write_checks.h"
#include "weft/core/future.h"
#include "weft/core/unique_function.h"

namespace weft {

class Channel;
class Pipeline;
class EventLoop;
class ByteBufAllocator;
namespace detail {
class Offload;
// What a context needs only when it is set up, removed or reports an error: kept out of its hot line.
struct ContextCold {
  std::string name;
  std::shared_ptr<Handler> owner;    // null for the pipeline's own head and tail
  std::shared_ptr<Offload> offload;  // owns Context::offload_
};
// Frees a context: a heap one is deleted, one in the pipeline's inline slots gives its slot back.
struct ContextDeleter {
  void operator()(Context* ctx) const noexcept;
};
}  // namespace detail
/// How a pipeline owns its contexts.
using ContextPtr = std::unique_ptr<Context, detail::ContextDeleter>;

/// One cache line: a pipeline's contexts are touched on every request, so each costs a line when the
/// connection is cold, and the pipeline keeps its first ones side by side; the rest is in ContextCold.
class alignas(64) Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The channel of the pipeline (safe from a handler's executor too).
  Channel& channel() const noexcept;
  /// The pipeline the handler is in. Loop thread only.
  Pipeline& pipeline() const noexcept { return pipeline_; }
  /// The channel's event loop (safe from a handler's executor too).
  EventLoop& loop() const noexcept;
  /// The channel's allocator, for the buffers a handler makes (safe from a handler's executor too).
  ByteBufAllocator& allocator() const noexcept;
  /// The handler this context belongs to (safe from a handler's executor too).
  Handler& handler() const noexcept { return *handler_; }
  /// The handler's name in the pipeline (safe from a handler's executor too).
  const std::string& name() const noexcept { return cold_->name; }
  /// Whether the handler has been removed from the pipeline. Loop thread only.
  bool is_removed() const noexcept { return removed_; }
  /// Whether what this handler writes goes straight into the channel's write queue: no handler
  /// between it and the socket (a TLS handler, say) sees or transforms it. Loop thread only.
  bool writes_to_channel() const noexcept;

  // ---- inbound: to the next handler
  /// Passes channel_active to the next handler.
  void fire_channel_active();
  /// Passes channel_inactive to the next handler.
  void fire_channel_inactive();
  /// Takes ownership: pass an rvalue. The message is handed over by address; nothing is copied.
  template <class T>
  void fire_read(T&& message) {
    static_assert(!std::is_lvalue_reference_v<T>, "fire_read takes ownership: pass std::move(message)");
    if (offload_ != nullptr && offloaded_fire_read(MessageRef::of(message))) [[unlikely]] return;
    next_->invoke_read(MessageRef::of(message));
  }
  /// Passes channel_read_complete to the next handler.
  void fire_read_complete();
  /// Passes a user event to the next handler.
  void fire_user_event(const std::any& event);
  /// Passes writability_changed to the next handler.
  void fire_writability_changed();
  /// Passes an exception to the next handler (exception_caught).
  void fire_exception(std::exception_ptr error);

  // ---- outbound: to the previous handler
  /// Writes `message` through the previous handler (towards the socket); not sent until flush().
  /// Takes ownership: pass an rvalue.
  template <class T>
  void write(T&& message) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (offload_ != nullptr && offloaded_write(MessageRef::of(message))) [[unlikely]] return;
    prev_->invoke_write(MessageRef::of(message));
  }
  /// As write(), and completes `done` once the message's bytes (with every byte queued before them)
  /// have left the write queue for the socket, or fails it; see Channel::write(message, done). From
  /// an offloaded handler's executor, `done` fails with BrokenPromiseError when the handler is
  /// removed before the write reaches the loop.
  template <class T>
  void write(T&& message, Promise<void> done) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (offload_ != nullptr && off_loop()) [[unlikely]] {
      write(std::forward<T>(message));
      offloaded_write_completion(std::move(done));
      return;
    }
    const std::uint32_t refusals = write_refusals();
    prev_->invoke_write(MessageRef::of(message));
    add_write_completion(std::move(done), refusals);
  }
  /// Flushes through the previous handler: sends what was written.
  void flush();
  /// write() then flush(). Takes ownership: pass an rvalue.
  template <class T>
  void write_and_flush(T&& message) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    write(std::forward<T>(message));
    flush();
  }
  /// write(message, done) then flush().
  template <class T>
  void write_and_flush(T&& message, Promise<void> done) {
    write(std::forward<T>(message), std::move(done));
    flush();
  }
  /// Requests one read batch (when auto-read is off).
  void read();
  /// Closes the channel through the previous handler; the future completes when it is closed.
  Future<void> close();
  /// As close(), completing `promise`.
  void close(Promise<void> promise);
  /// Binds through the previous handler; the future completes when bound.
  Future<void> bind(const SocketAddress& local);
  /// As bind(const SocketAddress&), completing `promise`.
  void bind(const SocketAddress& local, Promise<void> promise);
  /// Connects through the previous handler; the future completes when connected.
  Future<void> connect(const SocketAddress& remote);
  /// As connect(const SocketAddress&), completing `promise`.
  void connect(const SocketAddress& remote, Promise<void> promise);

  /// For handlers that pass on messages of any type (AnyMessage): forward without knowing the type.
  /// Passes a message of any type to the next handler.
  void fire_read_erased(MessageRef message) {
    if (offload_ != nullptr && offloaded_fire_read(message)) [[unlikely]] return;
    next_->invoke_read(message);
  }
  /// Writes a message of any type through the previous handler.
  void write_erased(MessageRef message) {
    if (offload_ != nullptr && offloaded_write(message)) [[unlikely]] return;
    prev_->invoke_write(message);
  }

 private:
  friend class Pipeline;
  friend class detail::Offload;
  friend struct detail::ContextDeleter;
  // `cold` null: the context allocates and owns its own. The caller fills in the cold part.
  Context(Pipeline& pipeline, Handler* handler, detail::ContextCold* cold, int slot = -1);

  void invoke_read(MessageRef message);
  void invoke_read_unwatched(MessageRef message);
  void read_on_executor(MessageRef message);
  [[gnu::noinline, gnu::cold]] void read_through_gate(MessageRef message);
  void invoke_write(MessageRef message);
  void handle_inbound_exception(std::exception_ptr error) noexcept;
  void handle_outbound_exception(std::exception_ptr error) noexcept;
  // Write completions (write(message, done)): see Channel.
  std::uint32_t write_refusals() const noexcept;
  void add_write_completion(Promise<void> done, std::uint32_t refusals_before);
  void offloaded_write_completion(Promise<void> done);

  // ---- executor offload (slow path; only for contexts with offload_)
  // This context's handler runs on an executor: true when called off the loop (then posted to it).
  bool off_loop() const noexcept;
  bool offloaded_fire_read(MessageRef message);
  bool offloaded_write(MessageRef message);
  // Runs `task` on the loop, unless this context has been removed by then.
  void to_loop(UniqueFunction<void()> task);
  // Runs `task` on this context's executor (counted against the offload bounds).
  void to_executor(std::size_t size, UniqueFunction<void()> task);

  Handler* handler_;
  Context* next_ = nullptr;
  Context* prev_ = nullptr;
  detail::Offload* offload_ = nullptr;  // set when the handler runs on an executor
  Pipeline& pipeline_;
  detail::ContextCold* cold_;
  std::unique_ptr<detail::ContextCold> own_cold_;  // a heap context's; the pipeline keeps its slots'
  bool removed_ = false;
  // invoke_read's one test for its slow paths: kReadsDropped, the handler has seen channel_inactive;
  // kReadTimed, its reads are timed for the loop's stall watch (a pipeline whose read stalled).
  static constexpr std::uint8_t kReadsDropped = 1, kReadTimed = 2;
  std::uint8_t read_gate_ = 0;
  std::int8_t slot_;  // index of the pipeline's inline slot this context lives in; -1: the heap
};
static_assert(sizeof(Context) == 64, "a context is one cache line");

}  // namespace weft
