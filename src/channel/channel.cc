#include "weft/channel/channel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>

#include "weft/channel/events.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

std::atomic<std::uint64_t> g_next_channel_id{1};

// The reason an I/O error closes a connection for.
CloseReason close_reason_of(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::system_error& e) {
    const int code = e.code().value();
    if (e.code().category() == std::system_category() && (code == ECONNRESET || code == EPIPE))
      return CloseReason::reset;
  } catch (...) {
  }
  return CloseReason::io_error;
}

constexpr std::array<std::string_view, kCloseReasons> kCloseReasonNames = {
    "local", "peer_closed", "reset", "io_error", "idle_timeout", "timeout", "protocol_error", "drain"};

}  // namespace

std::string_view close_reason_name(CloseReason reason) noexcept {
  return kCloseReasonNames[static_cast<std::size_t>(reason)];
}

Channel::Channel(EventLoop& loop, ChannelConfig config, ByteBufAllocator& allocator)
    : allocator_(&allocator),
      config_(std::move(config)),
      outbound_(config_.write_buffer_low_water_mark, config_.write_buffer_high_water_mark),
      loop_(loop),
      pipeline_(*this),
      id_(g_next_channel_id.fetch_add(1, std::memory_order_relaxed)),
      close_promise_(&loop) {
  config_.validate();
}

Channel::~Channel() = default;

Future<void> Channel::register_channel() {
  Promise<void> promise(&loop_);
  auto work = [this, promise]() mutable {
    try {
      register_on_loop();
      promise.set_value();
    } catch (...) {
      promise.set_error(std::current_exception());
    }
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.execute([self = shared_from_this(), work = std::move(work)]() mutable { work(); });
  }
  return promise.future();
}

void Channel::register_on_loop() {
  if (registered_) throw Error(fmt::format("channel {} is already registered", id_));
  if (!is_open()) throw ChannelClosedError();
  config_.validate();
  outbound_.set_water_marks(config_.write_buffer_low_water_mark, config_.write_buffer_high_water_mark);
  self_ = weak_from_this().lock();
  loop_.track(*this);
  registered_ = true;
  pipeline_.schedule_free();  // handlers removed while the pipeline was set up
  try {
    do_register();
  } catch (...) {
    close_now();
    throw;
  }
}

void Channel::activate(const SocketAddress& local, const SocketAddress& remote) {
  local_address_ = local;
  remote_address_ = remote;
  active_.store(true, std::memory_order_release);
  was_active_ = true;
  pipeline_.fire_channel_active();
  if (is_open() && config_.auto_read) do_begin_read();
}

void Channel::flush() {
  if (loop_.in_loop()) {
    pipeline_.flush();
  } else {
    loop_.execute([self = shared_from_this()] { self->pipeline_.flush(); });
  }
}

void Channel::flush(Promise<void> done) {
  auto work = [this, done = std::move(done)]() mutable {
    pipeline_.flush();
    add_write_completion(std::move(done), write_refusals_);
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.execute([self = shared_from_this(), work = std::move(work)]() mutable { work(); });
  }
}

void Channel::read() {
  if (loop_.in_loop()) {
    pipeline_.read();
  } else {
    loop_.execute([self = shared_from_this()] { self->pipeline_.read(); });
  }
}

Future<void> Channel::close() {
  if (loop_.in_loop()) {
    pipeline_.close(Promise<void>(&loop_));
  } else if (is_open()) {
    loop_.try_execute([self = shared_from_this()] { self->pipeline_.close(Promise<void>(&self->loop_)); });
    loop_.driver().interrupt_blocking_call(this);  // the loop thread may be blocked in a send (blocking transport)
  }
  return close_future();
}

Future<void> Channel::close_after_flush() {
  auto work = [this] {
    note_close_reason(CloseReason::local);
    if (outbound_.has_flushed() && is_active()) {
      close_when_flushed_ = true;
    } else {
      pipeline_.close(Promise<void>(&loop_));
    }
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.try_execute([self = shared_from_this(), work] { work(); });
  }
  return close_future();
}

Future<void> Channel::close_gracefully(Duration linger, Duration flush_timeout) {
  auto work = [this, linger, flush_timeout] {
    if (!is_open() || lingering_ || shutdown_when_flushed_ || output_closing_) return;
    note_close_reason(CloseReason::local);
    if (!is_active()) {
      close_now();
      return;
    }
    output_closing_ = true;
    pipeline_.deliver_output_closing([this, linger, flush_timeout] { end_output_gracefully(linger, flush_timeout); });
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.try_execute([self = shared_from_this(), work] { work(); });
  }
  return close_future();
}

void Channel::end_output_gracefully(Duration linger, Duration flush_timeout) {
  if (!is_open() || lingering_ || shutdown_when_flushed_) return;  // closed meanwhile
  linger_ = linger;
  if (outbound_.has_flushed()) {
    shutdown_when_flushed_ = true;  // on_bytes_written goes on
    arm_close_timer(flush_timeout);
  } else {
    start_linger();
  }
}

void Channel::start_linger() {
  shutdown_when_flushed_ = false;
  lingering_ = true;
  // The peer's remaining input is read (and dropped by whoever finished) until its FIN.
  read_suspensions_ = 0;
  config_.auto_read = true;
  arm_close_timer(linger_);
  if (!is_output_shutdown()) {
    Promise<void> promise(&loop_);
    do_shutdown_output(promise);  // closes at once when the input has ended already
    if (promise.future().error() != nullptr) {
      close_now();
      return;
    }
  }
  if (is_open()) do_begin_read();
}

void Channel::arm_close_timer(Duration after) {
  if (linger_timer_ != 0) loop_.cancel(linger_timer_);
  linger_timer_ = loop_.schedule(after, [this] {
    linger_timer_ = 0;
    close_now();
  });
}

void Channel::close_at_input_end() {
  note_close_reason(CloseReason::peer_closed);
  if (!is_active() || is_output_shutdown() || output_closing_) {
    close_once_flushed();
    return;
  }
  output_closing_ = true;
  pipeline_.deliver_output_closing([this] { close_once_flushed(); });
}

void Channel::close_once_flushed() {
  if (!is_open()) return;
  if (!outbound_.has_flushed() || !is_active() || is_output_shutdown()) {
    close_now();
    return;
  }
  close_when_flushed_ = true;
  arm_close_timer(kInputEndFlushTimeout);
}

void Channel::set_auto_read(bool on) {
  auto work = [this, on] {
    config_.auto_read = on;
    if (!is_open() || !registered_) return;
    if (on && read_suspensions_ == 0) {
      do_begin_read();
    } else if (!on && !read_requested_) {
      do_stop_read();
    }
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.execute([self = shared_from_this(), work] { work(); });
  }
}

void Channel::suspend_reading() {
  if (lingering_) return;  // a lingering close reads until the peer's FIN
  if (read_suspensions_++ == 0 && is_open() && registered_ && !read_requested_) do_stop_read();
}

void Channel::resume_reading() {
  if (read_suspensions_ == 0) return;
  if (--read_suspensions_ == 0 && config_.auto_read && is_open() && registered_) do_begin_read();
}

Future<void> Channel::shutdown_output() {
  Promise<void> promise(&loop_);
  auto work = [this, promise]() mutable {
    Pipeline::Depth depth(pipeline_);  // a call on this channel: the events it raises wait for its end
    if (!is_active()) {
      promise.fail(ChannelClosedError("shutdown_output: channel is not active"));
      return;
    }
    if (output_shutdown_) {
      promise.set_value();
      return;
    }
    if (fin_promise_) {  // asked for already: completes with the first call
      fin_promise_->future().add_listener([promise](const Future<void>& first) mutable { promise.complete_from(first); });
      return;
    }
    output_refused_ = shutdown_output_called_ = true;
    fin_promise_.emplace(std::move(promise));
    // What was written before the call goes out before the FIN.
    outbound_.add_flush();
    if (!outbound_.has_flushed()) {
      send_fin_requested();
      return;
    }
    fin_when_flushed_ = true;  // on_bytes_written sends it
    do_flush();
  };
  if (loop_.in_loop()) {
    work();
  } else {
    loop_.execute([self = shared_from_this(), work = std::move(work)]() mutable { work(); });
  }
  return promise.future();
}

void Channel::send_fin_requested() {
  fin_when_flushed_ = false;
  Promise<void> promise = std::move(*fin_promise_);
  fin_promise_.reset();
  if (output_shutdown_) {  // sent meanwhile (a graceful close)
    promise.set_value();
    return;
  }
  do_shutdown_output(std::move(promise));
}

void Channel::do_bind(const SocketAddress&, Promise<void> promise) {
  promise.fail(Error("bind is not supported by this channel"));
}

void Channel::do_connect(const SocketAddress&, Promise<void> promise) {
  promise.fail(Error("connect is not supported by this channel"));
}

void Channel::do_shutdown_output(Promise<void> promise) {
  promise.fail(Error("shutdown_output is not supported by this channel"));
}

void Channel::do_write_message(MessageRef message) {
  if (!message.is<ByteBuf>()) [[unlikely]] {
    if (message.is<FileRegion>() && sends_files()) {
      if (outbound_.add_file(std::move(message.as<FileRegion>()))) set_writable(false);
      return;
    }
    ++write_refusals_;
    last_refusal_ = std::make_exception_ptr(PipelineTypeError(fmt::format(
        "channel {} writes ByteBuf to its socket but received {}; add an encoder", id_, type_name(message.type()))));
    std::rethrow_exception(last_refusal_);
  }
  if (outbound_.add(std::move(message.as<ByteBuf>()))) set_writable(false);
}

void Channel::on_unhandled_read(MessageRef message) {
  log(LogLevel::debug, "channel {}: a message of type {} reached the tail of the pipeline and was dropped", id_,
      type_name(message.type()));
}

void Channel::on_unhandled_exception(std::exception_ptr error) {
  log(LogLevel::warn, "channel {}: an exception reached the tail of the pipeline: {}", id_, describe_exception(error));
}

void Channel::head_write(MessageRef message) {
  if (!is_open() || output_refused_) [[unlikely]] {
    refuse_write();  // the caller still owns the message and releases it
    return;
  }
  do_write_message(message);
}

void Channel::refuse_write() {
  ++write_refusals_;
  last_refusal_ = is_open() ? std::make_exception_ptr(ChannelOutputShutdownError())
                            : std::make_exception_ptr(ChannelClosedError("write: the channel is closed"));
  if (is_open() && shutdown_output_called_) {
    pipeline_.fire_exception(std::make_exception_ptr(ChannelOutputShutdownError()));
    return;
  }
  log(LogLevel::debug, "channel {}: write dropped, the channel is {}", id_,
      is_open() ? "shut down for output" : "closed");
}

void Channel::head_flush() {
  if (!is_open()) return;
  outbound_.add_flush();
  if (is_active()) do_flush();
}

void Channel::head_read() {
  if (!is_open() || !registered_) return;
  read_requested_ = true;
  do_begin_read();
}

void Channel::head_close(Promise<void> promise) {
  note_close_reason(CloseReason::local);
  close_now();
  promise.set_value();
}

void Channel::read_batch_done() {
  read_requested_ = false;
  if ((!config_.auto_read || read_suspensions_ > 0) && is_open()) do_stop_read();
}

void Channel::set_writable(bool writable) {
  if (writable_.load(std::memory_order_relaxed) == writable) return;
  writable_.store(writable, std::memory_order_release);
  pipeline_.fire_writability_changed();
}

void Channel::request_shutdown() {
  note_close_reason(CloseReason::drain);
  if (!is_active()) {
    close_now();
    return;
  }
  ended_by_handler_ = false;
  pipeline_.fire_user_event(ChannelShutdownRequestedEvent{});  // from the loop: delivered now
  if (!ended_by_handler_) close_now();
}

void Channel::hold_write_bytes(std::size_t n) {
  held_write_bytes_ += n;
  if (outbound_.add_held_bytes(n)) set_writable(false);
}

void Channel::release_held_write_bytes(std::size_t n) {
  held_write_bytes_ -= std::min(n, held_write_bytes_);
  const bool now_writable = outbound_.remove_held_bytes(n);
  if (held_write_bytes_ == 0 && tracks_write_completions_) {
    write_completions_->on_held_bytes_released(outbound_.pending_bytes());  // all of it is queued now
  }
  if (now_writable) set_writable(true);
}

void Channel::add_write_completion(Promise<void> done, std::uint32_t refusals_before) {
  if (write_refusals_ != refusals_before) {
    done.set_error(last_refusal_);
    return;
  }
  if (!is_open()) {
    done.fail(ChannelClosedError("write: the channel is closed"));
    return;
  }
  if (!tracks_write_completions_) {
    write_completions_ = std::make_unique<WriteCompletions>();
    tracks_write_completions_ = true;
  }
  const std::size_t queued = outbound_.pending_bytes() - std::min(held_write_bytes_, outbound_.pending_bytes());
  write_completions_->add(std::move(done), queued, held_write_bytes_ > 0);
  complete_written_writes(0);  // nothing left in the queue: written already
}

void Channel::complete_written_writes(std::size_t n) {
  write_completions_->on_written(n);
  std::vector<Promise<void>> written;
  write_completions_->take_written(written);
  if (!written.empty()) settle_write_completions(std::move(written), nullptr);
}

void Channel::settle_write_completions(std::vector<Promise<void>> done, std::exception_ptr error) {
  auto settle = [done = std::move(done), error]() mutable {
    for (Promise<void>& promise : done) error ? promise.set_error(error) : promise.set_value();
  };
  // Another channel's event is on the stack (its handler wrote here): completions wait for its end.
  if (detail::events_on_this_thread > pipeline_.events_) {
    UniqueFunction<void()> task(std::move(settle));
    if (loop_.try_execute(std::move(task))) return;
    task();  // the loop has terminated: settled on this thread, never dropped
    return;
  }
  settle();
}

void Channel::on_bytes_written(std::size_t n) {
  if (outbound_.remove_bytes(n)) set_writable(true);
  after_bytes_written(n);
}

void Channel::on_file_bytes_written(std::size_t n) {
  if (outbound_.remove_file_bytes(n)) set_writable(true);
  after_bytes_written(n);
}

inline void Channel::after_bytes_written(std::size_t n) {
  if (tracks_write_completions_) [[unlikely]] {
    complete_written_writes(n);
  }
  // The FIN first: a close waiting for the same bytes then closes a half-closed connection.
  if (fin_when_flushed_ && !outbound_.has_flushed() && is_open()) send_fin_requested();
  if (close_when_flushed_ && !outbound_.has_flushed() && is_open()) {
    close_when_flushed_ = false;
    pipeline_.close(Promise<void>(&loop_));
    // A handler that holds the close back for a graceful end of its own (ws::Codec) leaves the
    // channel open: that graceful end waited for the same bytes, and goes on.
    if (shutdown_when_flushed_ && is_open()) start_linger();
  } else if (shutdown_when_flushed_ && !outbound_.has_flushed() && is_open()) {
    start_linger();
  }
}

void Channel::fail_and_close(std::exception_ptr error) {
  if (!is_open()) return;
  note_close_reason(close_reason_of(error));
  pipeline_.fire_exception(std::move(error));
  close_now();
}

void Channel::close_now() {
  if (!open_.exchange(false, std::memory_order_acq_rel)) return;
  ChannelPtr keep_alive = std::move(self_);
  if (linger_timer_ != 0) {
    loop_.cancel(linger_timer_);
    linger_timer_ = 0;
  }
  bool was_active = active_.exchange(false, std::memory_order_acq_rel);
  try {
    do_close();
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: closing the transport failed: {}", id_, e.what());
  }
  outbound_.clear();
  if (tracks_write_completions_) {
    std::vector<Promise<void>> pending;
    write_completions_->take_all(pending);
    if (!pending.empty()) {
      settle_write_completions(
          std::move(pending),
          std::make_exception_ptr(ChannelClosedError("write: the channel closed before the bytes were written")));
    }
  }
  if (fin_promise_) {
    fin_when_flushed_ = false;
    Promise<void> fin = std::move(*fin_promise_);
    fin_promise_.reset();
    fin.fail(ChannelClosedError("shutdown_output: the channel closed before the FIN was sent"));
  }
  pipeline_.deliver_close(was_active, std::move(keep_alive));
}

void Channel::finish_close(bool was_active, const ChannelPtr& keep_alive) {
  if (was_active) pipeline_.head_.fire_channel_inactive();
  loop_.untrack(*this);
  close_promise_.set_value();
  if (!registered_) return;
  // Tear the pipeline down once the current call stack (which may be inside a handler) unwinds.
  auto teardown = [self = keep_alive, this] { pipeline_.clear(); };
  if (loop_.is_terminated()) {
    pipeline_.clear();
  } else {
    loop_.execute(std::move(teardown));
  }
}

}  // namespace weft
