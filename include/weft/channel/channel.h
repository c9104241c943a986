#pragma once
/// @file
/// Channel: one connection (or listening socket) with its pipeline, bound to one event loop.
///
/// Threads: all pipeline callbacks run on the channel's loop. The public operations below are safe
/// from any thread: off the loop they are posted to it. Channels are shared: hold a ChannelPtr.
/// A registered channel keeps itself alive until it has closed and its pipeline has been torn
/// down, so a handler may close (and so destroy) its own channel from inside a callback.
///
/// No re-entrancy across channels: a call on one channel never runs another channel's events
/// nested inside it. The events a channel raises itself -- channel_inactive when it closes, the
/// exception of a failed write, writability_changed, the shutdown events -- are delivered after
/// the call on it that caused them has returned, so a handler that writes to (or closes) another
/// channel, even one on its loop, never finds that channel's handlers running inside its call.
/// Pipeline keeps the rule (see pipeline.h).
///
/// Transports derive from Channel and implement the do_* hooks; the hooks admit a readiness engine
/// (epoll: write when writable) as well as a completion engine (io_uring: submit, then complete).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel_config.h"
#include "weft/channel/outbound_buffer.h"
#include "weft/channel/pipeline.h"
#include "weft/channel/socket_address.h"
#include "weft/channel/write_checks.h"
#include "weft/channel/write_completions.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft {

/// Why a connection closed: the first cause noted (Channel::note_close_reason), as the server
/// connection metrics count it (`weft_server_connections_closed_total{reason}`).
enum class CloseReason : std::uint8_t {
  local,           ///< this side closed it, for no reason noted (a handler's close(), `Connection: close`)
  peer_closed,     ///< the peer ended its output (EOF)
  reset,           ///< the peer reset the connection (ECONNRESET, EPIPE)
  io_error,        ///< another I/O error
  idle_timeout,    ///< the protocol's idle timeout
  timeout,         ///< another of the protocol's time limits (a request, a send, a keepalive PING, a handshake)
  protocol_error,  ///< the peer broke the protocol or spent an abuse budget (a 400, a GOAWAY with an error)
  drain,           ///< the server's drain or the loop's graceful shutdown asked it to end
};
/// The number of CloseReason values.
inline constexpr std::size_t kCloseReasons = 8;
/// The metrics' name of `reason`: "local", "peer_closed", ... Thread-safe.
std::string_view close_reason_name(CloseReason reason) noexcept;

class Channel;
/// How channels are held: they are shared (see the file's description).
using ChannelPtr = std::shared_ptr<Channel>;

/// One connection (or listening socket) with its pipeline, bound to one event loop (see the
/// file's description for the thread contract). Transports derive from it.
class Channel : public std::enable_shared_from_this<Channel>, public LoopResource {
 public:
  ~Channel() override;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// Thread-safe.
  EventLoop& loop() const noexcept { return loop_; }
  /// Thread-safe. Unique per process.
  std::uint64_t id() const noexcept { return id_; }
  /// Loop thread only (or before registration).
  Pipeline& pipeline() noexcept { return pipeline_; }
  /// Loop thread only (or before registration). Change reading with set_auto_read().
  ChannelConfig& config() noexcept { return config_; }
  /// Thread-safe.
  ByteBufAllocator& allocator() const noexcept { return *allocator_; }

  /// Thread-safe.
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }
  /// Thread-safe. Connected (socket) or bound (server).
  bool is_active() const noexcept { return active_.load(std::memory_order_acquire); }
  /// Thread-safe. False while the write queue is above the high water mark.
  bool is_writable() const noexcept { return writable_.load(std::memory_order_acquire); }
  /// Thread-safe. Set when the channel turns active.
  SocketAddress local_address() const noexcept { return local_address_; }
  /// Thread-safe. Set when the channel turns active.
  SocketAddress remote_address() const noexcept { return remote_address_; }
  /// Thread-safe. Completes once the channel has closed.
  Future<void> close_future() const { return close_promise_.future(); }

  /// Thread-safe. Writes through the whole pipeline (from its tail).
  template <class T>
  void write(T&& message) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (loop_.in_loop()) {
      pipeline_.write(std::move(message));
    } else {
      std::decay_t<T> owned(std::move(message));
      own_borrowed(owned);  // what it borrows may die with this thread's stack before the loop runs
      loop_.execute([self = shared_from_this(), m = std::move(owned)]() mutable { self->pipeline_.write(std::move(m)); });
    }
  }
  /// Thread-safe.
  template <class T>
  void write_and_flush(T&& message) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (loop_.in_loop()) {
      pipeline_.write_and_flush(std::move(message));
    } else {
      std::decay_t<T> owned(std::move(message));
      own_borrowed(owned);
      loop_.execute([self = shared_from_this(), m = std::move(owned)]() mutable {
        self->pipeline_.write_and_flush(std::move(m));
      });
    }
  }
  /// Thread-safe. As write(), and completes `done` once the message's bytes -- and every byte
  /// written to the channel before them -- have left the write queue for the socket (Netty's
  /// write(msg, promise)). Fails it with ChannelOutputShutdownError or ChannelClosedError when the
  /// write is refused (after shutdown_output(), on a closed channel), with the handler's error when
  /// the pipeline rejects the message (PipelineTypeError), and with ChannelClosedError when the
  /// channel closes while its bytes are still queued. Exactly once, on the channel's loop: inline
  /// when the bytes leave (deferred to a loop task when another channel's call is on the stack).
  /// A write that did not ask costs nothing more. A handler that holds writes back (TLS during its
  /// handshake, see hold_write_bytes) delays the completion until it has passed them on.
  template <class T>
  void write(T&& message, Promise<void> done) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (loop_.in_loop()) {
      pipeline_.write(std::move(message), std::move(done));
    } else {
      std::decay_t<T> owned(std::move(message));
      own_borrowed(owned);
      loop_.execute([self = shared_from_this(), m = std::move(owned), done = std::move(done)]() mutable {
        self->pipeline_.write(std::move(m), std::move(done));
      });
    }
  }
  /// Thread-safe. As write_and_flush(), completing `done` as write(message, done) does.
  template <class T>
  void write_and_flush(T&& message, Promise<void> done) {
    static_assert(detail::WrittenMessageCheck<T>::ok);
    static_assert(!std::is_lvalue_reference_v<T>, "write takes ownership: pass std::move(message)");
    if (loop_.in_loop()) {
      pipeline_.write_and_flush(std::move(message), std::move(done));
    } else {
      std::decay_t<T> owned(std::move(message));
      own_borrowed(owned);
      loop_.execute([self = shared_from_this(), m = std::move(owned), done = std::move(done)]() mutable {
        self->pipeline_.write_and_flush(std::move(m), std::move(done));
      });
    }
  }
  /// Thread-safe.
  void flush();
  /// Thread-safe. Flushes, and completes `done` once every byte written to the channel so far has
  /// left the write queue for the socket (fails it as write(message, done) does when the channel
  /// closes first): "after all of this is written, do X" without a message of its own.
  void flush(Promise<void> done);
  /// Thread-safe. Requests one read batch; with auto-read on, reading is continuous anyway.
  void read();
  /// Thread-safe. Idempotent: every call returns the close future. Queued writes are dropped.
  Future<void> close();
  /// Thread-safe. Closes once every buffer flushed so far has been written (or at once if none).
  Future<void> close_after_flush();
  /// Thread-safe. The graceful end of a connection whose peer may still be sending (an HTTP server
  /// after an error answer): once every buffer flushed so far has been written, sends FIN, then
  /// keeps reading -- whatever suspended it -- until the peer's FIN or until `linger` has passed,
  /// and closes. What arrives meanwhile still reaches the pipeline (a codec that has finished
  /// drops it). Closing with unread input makes the kernel send RST, which on a real network can
  /// destroy the answer still in flight; this does not. Idempotent; returns the close future.
  /// Waiting for the flushed bytes is bounded by `flush_timeout` (a peer that reads nothing).
  /// ChannelOutputClosingEvent goes through the pipeline first: what a handler writes and flushes
  /// on it (TLS's close_notify) goes out before the FIN.
  Future<void> close_gracefully(Duration linger, Duration flush_timeout = std::chrono::seconds(60));
  /// Thread-safe. Turns continuous reading on or off: the application's own switch. Reading runs
  /// while auto-read is on and no source holds a suspension (below).
  void set_auto_read(bool on);
  /// Loop thread only. Backpressure by source: each source that must stop the channel's reading (a
  /// codec whose channel is unwritable, an executor queue at its bound, a coroutine's full inbox)
  /// holds one suspension and later resumes only its own, so one source's resume never undoes
  /// another's. Hold them through ReadSuspension, which keeps each source's calls balanced.
  void suspend_reading();
  /// Loop thread only. Gives back one suspension (see suspend_reading()); reading resumes when none
  /// is left and auto-read is on.
  void resume_reading();
  /// Loop thread only. Suspensions held now.
  std::uint32_t read_suspensions() const noexcept { return read_suspensions_; }
  /// Thread-safe. Ends the output after what was written before it (the channel can still read):
  /// flushes it, and sends FIN once all of it has been written. From the call on, a write fails:
  /// its message is dropped and ChannelOutputShutdownError is fired as an exception event. The
  /// future completes when the FIN has been sent; it fails with ChannelClosedError when the channel
  /// closes first (close() drops what is queued, as always), with IoError when shutdown(2) fails.
  /// Called again, it completes with the first call.
  Future<void> shutdown_output();
  /// Loop thread only. Asks this connection to end gracefully, as the loop's graceful shutdown asks
  /// each of its channels (drain_server asks a server's connections): fires
  /// ChannelShutdownRequestedEvent, and closes the channel right after it unless a handler took the
  /// end over (end_for_shutdown_itself: the HTTP codecs answer what they owe first). A channel not
  /// active yet closes at once. Calling it again fires the event again.
  void request_shutdown();
  /// Loop thread only. Called by a handler on ChannelShutdownRequestedEvent: it ends the connection
  /// itself (HTTP/2's GOAWAY and drain), so the channel is not closed right after the event; the
  /// loop still closes it at its shutdown timeout.
  void end_for_shutdown_itself() noexcept { ended_by_handler_ = true; }
  /// Loop thread only. Counts `n` bytes a handler holds for writing on the channel's behalf --
  /// written to it, not yet passed on (a TlsHandler's plaintext until its handshake is done) --
  /// toward writability, as bytes in the write queue are. Give them back with
  /// release_held_write_bytes() when they are passed on or dropped.
  void hold_write_bytes(std::size_t n);
  /// Loop thread only. Takes back bytes counted by hold_write_bytes().
  void release_held_write_bytes(std::size_t n);
  /// Loop thread only. Bytes queued for writing, with those handlers hold (hold_write_bytes).
  std::size_t pending_write_bytes() const noexcept { return outbound_.pending_bytes(); }
  /// Loop thread only.
  std::size_t bytes_before_unwritable() const noexcept { return outbound_.bytes_before_unwritable(); }
  /// Loop thread only. The connection's socket, for what weft does not offer (a socket option, kTLS):
  /// -1 when there is none (EmbeddedChannel, a client before it connects, a closed channel). Do not
  /// read, write or close it: the transport owns it.
  virtual int native_fd() const noexcept { return -1; }
  /// Thread-safe. Whether the transport sends a FileRegion written to the channel itself, from the
  /// file to the socket without copying it through buffers (sendfile: epoll and blocking; splice
  /// through the channel's pipe: io_uring). Else a FileRegion reaching the channel is refused, and
  /// FileRegionWriter reads it into buffers.
  virtual bool sends_files() const noexcept { return false; }

  /// Loop thread only. Notes why the channel is about to close (see CloseReason); the first reason
  /// noted wins, so a handler that ends the connection notes its cause before it closes.
  void note_close_reason(CloseReason reason) noexcept {
    if (close_reason_ == kNoCloseReason) close_reason_ = static_cast<std::uint8_t>(reason);
  }
  /// Loop thread only. The first reason noted, CloseReason::local if none was.
  CloseReason close_reason() const noexcept {
    return close_reason_ == kNoCloseReason ? CloseReason::local : static_cast<CloseReason>(close_reason_);
  }

  /// Thread-safe. Registers the channel with its loop (done by the bootstraps); completes on the loop.
  Future<void> register_channel();

 protected:
  /// For transports: a channel on `loop` with `config`, reading into buffers from `allocator`.
  Channel(EventLoop& loop, ChannelConfig config, ByteBufAllocator& allocator);

  // ---- transport hooks; loop thread only
  /// The channel is being registered with its loop (on the loop thread).
  virtual void do_register() = 0;
  /// Reads are wanted (auto-read on, or read() requested).
  virtual void do_begin_read() = 0;
  /// Reads are no longer wanted.
  virtual void do_stop_read() = 0;
  /// Write out what outbound() has flushed.
  virtual void do_flush() = 0;
  /// Release the socket. Called once.
  virtual void do_close() = 0;
  /// Bind to `local` and complete `promise`. Default: fails it (not supported).
  virtual void do_bind(const SocketAddress& local, Promise<void> promise);
  /// Connect to `remote` and complete `promise`. Default: fails it (not supported).
  virtual void do_connect(const SocketAddress& remote, Promise<void> promise);
  /// Send FIN now and complete `promise` (shutdown_output() calls it once the flushed bytes have
  /// been written). Default: fails it (not supported).
  virtual void do_shutdown_output(Promise<void> promise);
  /// The message type that reaches the outbound end of the pipeline; ByteBuf unless overridden.
  virtual void do_write_message(MessageRef message);
  /// The type the transport emits into the pipeline (null: any); ByteBuf unless overridden.
  virtual const std::type_info* inbound_message_type() const noexcept { return &typeid(ByteBuf); }
  /// The type the transport accepts from the pipeline (null: any).
  virtual const std::type_info* outbound_message_type() const noexcept { return &typeid(ByteBuf); }
  /// A message reached the tail unconsumed. Default: debug log, the message is dropped.
  virtual void on_unhandled_read(MessageRef message);
  /// An exception reached the tail. Default: warning log.
  virtual void on_unhandled_exception(std::exception_ptr error);

  // ---- helpers for transports; loop thread only
  /// register_channel() on the loop thread, without its future: throws what would fail it.
  void register_on_loop();
  /// The write queue.
  OutboundBuffer& outbound() noexcept { return outbound_; }
  /// Whether the transport should read now: auto-read on and not suspended, or a read() requested.
  bool auto_read_or_requested() const noexcept {
    return (config_.auto_read && read_suspensions_ == 0) || read_requested_;
  }
  /// After a read batch: reset a one-shot read() request.
  void read_batch_done();
  /// Marks the channel active, fires channel_active and starts reading if auto-read.
  void activate(const SocketAddress& local, const SocketAddress& remote);
  /// Bytes left the write queue: updates writability (and closes if close_after_flush asked for it).
  void on_bytes_written(std::size_t n);
  /// `n` bytes of outbound().flushed_file() were sent: as on_bytes_written(), for the file.
  void on_file_bytes_written(std::size_t n);
  /// Reports an I/O error as an exception event, then closes.
  void fail_and_close(std::exception_ptr error);
  /// The full close sequence: do_close, drop queued writes, then channel_inactive and the close
  /// future (posted when a call on this channel is on the stack, see Pipeline).
  void close_now();
  /// The peer's input ended and the channel does not stay half-closed: fires
  /// ChannelOutputClosingEvent, then closes once what was flushed has been written (for at most
  /// kInputEndFlushTimeout), so a FIN never cuts off bytes owed to it.
  void close_at_input_end();
  /// The longest close_at_input_end() waits for flushed bytes to be written.
  static constexpr Duration kInputEndFlushTimeout = std::chrono::seconds(30);
  /// Whether do_register() has run.
  bool is_registered() const noexcept { return registered_; }
  /// Whether output was shut down (FIN sent).
  bool is_output_shutdown() const noexcept { return output_shutdown_; }
  /// Records that output was shut down.
  void set_output_shutdown() noexcept { output_shutdown_ = output_refused_ = true; }

 private:
  friend class Pipeline;
  friend class Context;
  friend class detail::PipelineHead;
  friend class detail::PipelineTail;

  // The loop's graceful shutdown: request_shutdown().
  void close_for_shutdown() override { request_shutdown(); }
  void abort_for_shutdown() override {
    note_close_reason(CloseReason::drain);
    close_now();
  }
  void start_linger();
  // close_gracefully once ChannelOutputClosingEvent has been delivered.
  void end_output_gracefully(Duration linger, Duration flush_timeout);
  // close_at_input_end once ChannelOutputClosingEvent has been delivered: closes once what was
  // flushed has been written (bounded by kInputEndFlushTimeout).
  void close_once_flushed();
  // shutdown_output() once what it waited for has been written (or at once when nothing was).
  void send_fin_requested();
  // head_write on a channel that is closed or whose output is closed (or closing).
  void refuse_write();
  void arm_close_timer(Duration after);  // closes the channel then, unless it has closed
  // channel_inactive and what follows it: the close future, the pipeline's teardown.
  void finish_close(bool was_active, const ChannelPtr& keep_alive);
  // What follows bytes leaving the queue, ByteBufs' or a file's: completions, FIN, close.
  void after_bytes_written(std::size_t n);
  void set_writable(bool writable);
  // ---- write completions (write(message, done)); cold unless a write asks for one
  // Refusals so far: a write whose completion sees the count move was refused (or rejected).
  std::uint32_t write_refusals() const noexcept { return write_refusals_; }
  // After the write: `done` completes once what is queued now has been written (see write()).
  void add_write_completion(Promise<void> done, std::uint32_t refusals_before);
  // `n` bytes were written: completes the completions they finish.
  void complete_written_writes(std::size_t n);
  // Completes `done` (with `error`, or with success when null): inline, or from a loop task when
  // another channel's call is on the stack (no re-entrancy across channels).
  void settle_write_completions(std::vector<Promise<void>> done, std::exception_ptr error);
  // head of the pipeline
  void head_write(MessageRef message);
  void head_flush();
  void head_read();
  void head_close(Promise<void> promise);

  // What each request reads comes first, and the pipeline right after it: a server with many
  // connections finds most of them out of cache, and each line here is a miss per request.
  std::atomic<bool> open_{true};
  std::atomic<bool> active_{false};
  std::atomic<bool> writable_{true};
  bool registered_ = false;
  bool read_requested_ = false;
  bool close_when_flushed_ = false;
  bool output_shutdown_ = false;
  bool output_refused_ = false;  // FIN sent or asked for (shutdown_output): writes are refused
  bool fin_when_flushed_ = false;  // shutdown_output: FIN once the flushed bytes are out
  bool shutdown_output_called_ = false;  // a write refused then is the caller's error: reported
  bool was_active_ = false;
  bool shutdown_when_flushed_ = false;  // close_gracefully: FIN once the flushed bytes are out
  bool lingering_ = false;              // close_gracefully: FIN sent or due; reading forced on
  bool output_closing_ = false;         // ChannelOutputClosingEvent fired (once per channel)
  bool ended_by_handler_ = false;       // a handler ends the connection for the loop's shutdown
  bool tracks_write_completions_ = false;  // write_completions_ exists: count written bytes
  static constexpr std::uint8_t kNoCloseReason = 0xff;
  std::uint8_t close_reason_ = kNoCloseReason;  // a CloseReason once one is noted
  std::uint32_t read_suspensions_ = 0;
  ByteBufAllocator* allocator_;
  ChannelConfig config_;  // its per-read and per-write fields first
  OutboundBuffer outbound_;
  EventLoop& loop_;
  Pipeline pipeline_;
  // ---- cold
  const std::uint64_t id_;
  Promise<void> close_promise_;
  SocketAddress local_address_;
  SocketAddress remote_address_;
  ChannelPtr self_;  // keeps a registered channel alive until it is torn down
  std::optional<Promise<void>> fin_promise_;  // shutdown_output() waiting for the flushed bytes
  Duration linger_ = {};
  TimerId linger_timer_ = 0;
  std::unique_ptr<WriteCompletions> write_completions_;  // made by the first write that asks
  std::size_t held_write_bytes_ = 0;                     // hold_write_bytes' count
  std::uint32_t write_refusals_ = 0;
  std::exception_ptr last_refusal_;  // why the latest refused write was refused
};

/// One source's hold on a channel's reading (see Channel::suspend_reading): hold() and release() are
/// idempotent, so the source cannot suspend twice or resume what it did not suspend. Loop thread
/// only; release it before the channel is destroyed (a closed channel ignores both).
class ReadSuspension {
 public:
  /// Whether this source holds a suspension now.
  bool held() const noexcept { return held_; }
  /// Suspends `channel`'s reading unless already held.
  void hold(Channel& channel) {
    if (held_) return;
    held_ = true;
    channel.suspend_reading();
  }
  /// Gives the suspension back unless not held.
  void release(Channel& channel) {
    if (!held_) return;
    held_ = false;
    channel.resume_reading();
  }

 private:
  bool held_ = false;
};

}  // namespace weft
