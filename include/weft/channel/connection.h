#pragma once
/// @file
/// Connection<In>: a channel as seen by a coroutine. Codecs stay pipeline handlers; the application
/// logic after them reads like blocking code and runs on the channel's event loop.
///
///   ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
///   weft::serve<http::HttpRequest>(ch, [](weft::Connection<http::HttpRequest>& c) -> weft::Task<> {
///     for (;;) {
///       http::HttpRequest request = co_await c.read();          // the next decoded message
///       co_await c.write(http::HttpResponse(200).body_view("hi"));  // waits while not writable
///       c.flush();                                              // once per read batch at most
///     }
///   });
///
/// serve() adds the Connection's handler (Connection::Tail) at the end of the pipeline and starts the
/// coroutine when the channel becomes active (or at once if it already is). Lifetimes:
/// - The function object passed to serve() is copied for each channel and lives as long as that
///   channel's coroutine, so a lambda's captures stay valid across suspensions. Capture by value (or
///   capture only what outlives every channel); the Connection& parameter stays valid throughout.
/// - When the channel closes (peer, error, or close()), a read() or write() that is suspended resumes
///   by throwing ChannelClosedError, and so does every later read() or write(). A coroutine
///   suspended elsewhere (sleep, offload, a future) resumes as usual and meets the error at its next
///   read() or write(). Nothing the coroutine holds dangles: the Connection lives until it finishes.
/// - When the coroutine returns, the channel is closed after its writes are flushed. If it throws,
///   the exception is logged (ChannelClosedError is the normal end and is not) and the channel closed.
/// - An exception that reaches the Connection through the pipeline (a decoder error) is thrown by
///   the next read() once the messages before it are consumed; the channel is closed.
///
/// Inbound messages wait in a queue while the coroutine is busy; at max_queued the channel stops
/// reading until the coroutine has taken half of them (backpressure for free, both ways).
/// All methods run on the channel's loop thread (the coroutine's thread).

#include <algorithm>
#include <any>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/channel/pipeline.h"
#include "weft/core/error.h"
#include "weft/core/frame_pool.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"
#include "weft/core/unique_function.h"

namespace weft {

/// Settings of a Connection.
struct ConnectionOptions {
  std::size_t max_queued = 64;  ///< inbound messages held before the channel stops reading
};

namespace detail {
// Logs an exception that ended a connection coroutine (not ChannelClosedError).
void log_connection_failure(const Channel& channel, std::exception_ptr error) noexcept;
}  // namespace detail

/// A channel as seen by a coroutine: read() and write() messages of type In (and the responses
/// the pipeline encodes) like blocking calls (see the file's description). Loop thread only.
template <class In>
class Connection final : public std::enable_shared_from_this<Connection<In>> {
 public:
  /// The ring is made when a message first has to wait (none does while the coroutine is reading),
  /// small, and doubles as messages queue up: a slot holds a whole message (an HttpRequest is over
  /// 2 KiB), so max_queued slots up front would cost every idle connection ~150 KiB.
  explicit Connection(ConnectionOptions options = {}) : options_(options) {}

  // ---- for the coroutine

  /// What read() returns: co_await yields the next inbound message.
  class ReadAwaiter {
   public:
    /// Reads from `c`.
    explicit ReadAwaiter(Connection& c) noexcept : c_(c) {}
    /// Does not suspend when a message is queued or the channel is closed.
    bool await_ready() const noexcept { return c_.count_ > 0 || c_.closed_; }
    /// Waits for the next message.
    void await_suspend(std::coroutine_handle<> h) noexcept {
      c_.reader_ = h;
      c_.handoff_ = &handed_;
    }
    /// The message; throws ChannelClosedError (or the pipeline's error) once closed and drained.
    In await_resume() {
      // A message handed over by channel_read, which is still on the stack below this resume.
      if (handed_ != nullptr) return std::move(*handed_);
      return c_.take_queued();
    }

   private:
    Connection& c_;
    In* handed_ = nullptr;
  };
  /// The next inbound message; throws ChannelClosedError (or the pipeline's error) once the channel
  /// is closed and every message received before has been read.
  ReadAwaiter read() noexcept { return ReadAwaiter(*this); }

  /// What write() returns: co_await waits until the message is written (see write()).
  template <class Out>
  class [[nodiscard]] WriteAwaiter {
   public:
    /// Already written (or the channel is closed): nothing to wait for.
    explicit WriteAwaiter(Connection& c) noexcept : c_(c) {}
    /// Waits for writability, then writes `message`.
    WriteAwaiter(Connection& c, Out&& message) : c_(c), message_(std::move(message)) {}
    /// Does not suspend when the message was written at once.
    bool await_ready() const noexcept { return !message_ && !c_.closed_; }
    /// Waits for writability (resumes at once on a closed channel, to throw).
    void await_suspend(std::coroutine_handle<> h) noexcept {
      if (message_) c_.writer_ = h;
      else h.resume();  // closed: resume at once to throw
    }
    /// Writes the held message; throws ChannelClosedError when the channel closed before it was written.
    void await_resume() {
      if (c_.closed_) {
        if (message_ || !written_before_close_) throw ChannelClosedError("write: the channel is closed");
        return;
      }
      if (message_) c_.write_now(std::move(*message_));
    }
    /// Records that the message was written at once (a later close does not make it fail).
    void mark_written() noexcept { written_before_close_ = true; }

   private:
    Connection& c_;
    std::optional<Out> message_;
    bool written_before_close_ = false;
  };
  /// Writes `message` through the pipeline at once when the channel is writable; otherwise the
  /// returned awaiter holds it and writes it once the channel drains. Throws ChannelClosedError when
  /// the channel is closed. Does not flush. Always co_await the result.
  template <class Out>
  WriteAwaiter<std::decay_t<Out>> write(Out&& message) {
    using Message = std::decay_t<Out>;
    if (!closed_ && channel_->is_writable()) {
      write_now(std::forward<Out>(message));
      WriteAwaiter<Message> done(*this);
      done.mark_written();
      return done;
    }
    if (closed_) return WriteAwaiter<Message>(*this);
    return WriteAwaiter<Message>(*this, Message(std::forward<Out>(message)));
  }

  /// Flushes written messages: inside a read batch the flush is deferred to the batch's end (one
  /// syscall for all responses of a pipelined batch), otherwise it happens now. `co_await` on the
  /// result is allowed and does not suspend.
  std::suspend_never flush() {
    if (closed_ || ctx_ == nullptr) return {};
    if (in_read_batch_) {
      flush_pending_ = true;
    } else {
      ctx_->flush();
    }
    return {};
  }

  /// Closes the channel (after flushing what was written: now, even inside a read batch, so that
  /// close_after_flush sees it).
  void close() {
    if (channel_ && !closed_) {
      flush_pending_ = false;
      if (ctx_ != nullptr) ctx_->flush();
      channel_->close_after_flush();
    }
  }

  /// Whether the channel has closed.
  bool is_closed() const noexcept { return closed_; }
  /// The channel; valid once the connection is served (serve()).
  Channel& channel() const noexcept { return *channel_; }

  // ---- pipeline side: the handler that serve() adds at the tail of the pipeline forwards here

  /// Loop thread only. The pipeline handler that feeds this connection.
  class Tail final : public InboundHandler<In, In> {
   public:
    /// Feeds `c`.
    explicit Tail(std::shared_ptr<Connection> c) noexcept : c_(std::move(c)) {}
    void handler_added(Context& ctx) override { c_->on_added(ctx); }
    void handler_removed(Context&) override { c_->on_removed(); }
    void channel_active(Context& ctx) override {
      c_->start();
      ctx.fire_channel_active();
    }
    void channel_read(Context& ctx, In&& message) override { c_->on_read(ctx, std::move(message)); }
    void channel_read_complete(Context& ctx) override {
      c_->on_read_complete(ctx);
      ctx.fire_read_complete();
    }
    void writability_changed(Context& ctx) override {
      c_->on_writability_changed(ctx);
      ctx.fire_writability_changed();
    }
    void channel_inactive(Context& ctx) override {
      c_->mark_closed();
      ctx.fire_channel_inactive();
    }
    void exception_caught(Context& ctx, std::exception_ptr error) override { c_->on_exception(ctx, error); }

   private:
    std::shared_ptr<Connection> c_;
  };

  /// Starts `fn(*this)` as this connection's coroutine once active (see serve()).
  template <class Fn>
  void set_body(Fn fn) {
    body_ = [fn = std::move(fn)](std::shared_ptr<Connection> self) mutable { return run(std::move(self), std::move(fn)); };
  }

 private:
  template <class Fn>
  static detail::Detached run(std::shared_ptr<Connection> self, Fn fn) {
    try {
      co_await fn(*self);
    } catch (const ChannelClosedError&) {
      // the normal end of a connection that closed while the coroutine waited on it
    } catch (...) {
      detail::log_connection_failure(*self->channel_, std::current_exception());
    }
    self->close();
  }

  void on_added(Context& ctx) {
    ctx_ = &ctx;
    channel_ = ctx.channel().shared_from_this();
    if (ctx.channel().is_active()) start();  // added to a live channel: no channel_active will come
  }
  void on_removed() {
    ctx_ = nullptr;
    mark_closed();
  }
  void on_read(Context& ctx, In&& message) {
    in_read_batch_ = true;
    if (reader_) {
      *handoff_ = &message;  // the reader moves it out before this call returns
      std::exchange(reader_, {}).resume();  // the pipeline keeps the Tail, and so this, alive meanwhile
      return;
    }
    if (count_ == queue_.size()) {
      // Below max_queued the ring is still growing; past it the codec ignored our stop: grow rather
      // than drop.
      grow_queue();
    }
    queue_[(head_ + count_) % queue_.size()].emplace(std::move(message));
    ++count_;
    if (count_ >= options_.max_queued) reading_.hold(ctx.channel());
  }
  void on_read_complete(Context& ctx) {
    in_read_batch_ = false;
    if (flush_pending_ && !closed_) {
      flush_pending_ = false;
      ctx.flush();
    }
  }
  void on_writability_changed(Context& ctx) {
    if (writer_ && ctx.channel().is_writable()) std::exchange(writer_, {}).resume();
  }
  void on_exception(Context& ctx, std::exception_ptr error) {
    if (!error_) error_ = error;
    ctx.channel().close();
    mark_closed();
  }

  void start() {
    if (started_ || !body_) return;
    started_ = true;
    detail::Detached runner = body_(this->shared_from_this());
    body_ = nullptr;
    runner.handle.resume();
  }

  // A resumed coroutine may finish and drop the last reference to this Connection.
  void resume(std::coroutine_handle<> h) {
    auto keep = this->shared_from_this();
    h.resume();
  }

  void mark_closed() {
    if (closed_) return;
    closed_ = true;
    if (reader_) resume(std::exchange(reader_, {}));
    if (writer_) resume(std::exchange(writer_, {}));
  }

  In take_queued() {
    if (count_ == 0) {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      throw ChannelClosedError("read: the channel is closed");
    }
    In message = std::move(*queue_[head_]);
    queue_[head_].reset();
    head_ = (head_ + 1) % queue_.size();
    --count_;
    if (reading_.held() && count_ <= options_.max_queued / 2 && !closed_) reading_.release(*channel_);
    return message;
  }

  void grow_queue() {
    const std::size_t first = std::clamp<std::size_t>(options_.max_queued, 1, kInitialSlots);
    std::vector<std::optional<In>> bigger(queue_.empty() ? first : queue_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(queue_[(head_ + i) % queue_.size()]);
    queue_ = std::move(bigger);
    head_ = 0;
  }

  template <class Out>
  void write_now(Out&& message) {
    if (ctx_ != nullptr) ctx_->write(std::forward<Out>(message));
  }

  ConnectionOptions options_;
  Context* ctx_ = nullptr;
  ChannelPtr channel_;
  UniqueFunction<detail::Detached(std::shared_ptr<Connection>)> body_;
  static constexpr std::size_t kInitialSlots = 4;
  std::vector<std::optional<In>> queue_;  // ring, doubled when full
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::coroutine_handle<> reader_;
  In** handoff_ = nullptr;
  std::coroutine_handle<> writer_;
  std::exception_ptr error_;
  bool started_ = false;
  bool closed_ = false;
  bool in_read_batch_ = false;
  bool flush_pending_ = false;
  ReadSuspension reading_;  // held while the inbox is full
};

namespace detail {
// Whether `fn(connection)` is a Task<>; true when fn is not callable so (serve reports that first).
template <class Fn, class Arg>
constexpr bool serve_fn_returns_task() noexcept {
  if constexpr (std::is_invocable_v<Fn&, Arg&>) return std::is_same_v<std::invoke_result_t<Fn&, Arg&>, Task<>>;
  else return true;
}
}  // namespace detail

/// Loop thread only (typically in a child_handler initializer). Adds a Connection<In> named
/// "connection" at the tail of `channel`'s pipeline and runs `fn(connection)` — a function returning
/// Task<> — as the channel's coroutine. See Connection for lifetimes.
template <class In, class Fn>
std::shared_ptr<Connection<In>> serve(Channel& channel, Fn fn, ConnectionOptions options = {}) {
  static_assert(std::is_invocable_v<Fn&, Connection<In>&>,
                "serve<In>(channel, fn): fn must take weft::Connection<In>&, "
                "e.g. [](weft::Connection<In>& c) -> weft::Task<> { auto m = co_await c.read(); ... }");
  static_assert(detail::serve_fn_returns_task<Fn, Connection<In>>(),
                "serve<In>(channel, fn): fn must return weft::Task<>: make it a coroutine, "
                "[](weft::Connection<In>& c) -> weft::Task<> { ... co_await c.read(); ... }, "
                "or a function that returns one");
  // (from the frame pool: a connection is made per HTTP/2 stream served as a channel)
  auto connection = std::allocate_shared<Connection<In>>(frame_pool::Allocator<Connection<In>>(), options);
  connection->set_body(std::move(fn));
  using Tail = typename Connection<In>::Tail;
  channel.pipeline().add_last("connection", std::allocate_shared<Tail>(frame_pool::Allocator<Tail>(), connection));
  return connection;
}

}  // namespace weft
