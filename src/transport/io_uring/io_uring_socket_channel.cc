#include "io_uring_socket_channel.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "../socket/socket_ops.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/channel/events.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

constexpr std::size_t kMaxBytesPerSend = std::size_t{4} << 20;

bool is_last(unsigned flags) noexcept { return (flags & IORING_CQE_F_MORE) == 0; }

}  // namespace

IoUringSocketChannel::IoUringSocketChannel(EventLoop& loop, const ChannelConfig& config, int fd, SocketAddress remote)
    : Channel(loop, config, pooled_allocator()), fd_(fd), remote_(remote), connect_promise_(&loop) {}

IoUringSocketChannel::~IoUringSocketChannel() {
  if (fd_ >= 0) ::close(fd_);
  if (closing_fd_ >= 0) ::close(closing_fd_);
  close_pipe();
}

ChannelPtr IoUringSocketChannel::op_finished() noexcept {
  ChannelPtr last = in_flight_.finished();
  if (in_flight_.idle() && closing_fd_ >= 0) {
    ::close(std::exchange(closing_fd_, -1));
    close_pipe();  // no splice names it any more
  }
  return last;
}

void IoUringSocketChannel::do_register() {
  driver_ = &IoUringDriver::of(loop());
  if (fd_ < 0) return;  // a client channel: connect() creates the socket
  socket_ops::apply_connection_options(fd_, config());
  activate(socket_ops::local_address(fd_), remote_);
}

// --- reading -------------------------------------------------------------------------------------

void IoUringSocketChannel::do_begin_read() {
  want_read_ = true;
  if (!parked_.empty() || eof_parked_) {
    // Delivered from a task: begin_read may be called from inside a handler of this pipeline.
    loop().execute([self = shared_from_this(), this] { deliver_parked(); });
    return;
  }
  arm_receive();
}

void IoUringSocketChannel::do_stop_read() {
  // The armed receive stays: it takes at most one buffer, parked until reading resumes. (Not a
  // multishot receive with a cancel: that one kept filling the loop's buffers until the cancel
  // landed, or on and on when the cancel missed it, megabytes per channel that nobody had asked for.)
  want_read_ = false;
  if (!receive_armed_) watch_hangup();  // else its completion does, unless it re-arms
}

void IoUringSocketChannel::arm_receive() {
  if (receive_armed_ || fd_ < 0 || !reading() || connecting_) return;
  // One buffer per receive, re-armed while reading: what a channel takes from the socket after its
  // reading stops is bounded by one buffer, as epoll's is by its read batch.
  io_uring_sqe* sqe = driver_->prepare(receive_op_);
  io_uring_prep_recv(sqe, fd_, nullptr, static_cast<unsigned>(driver_->options().buffer_size), 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = IoUringDriver::kBufferGroup;
  in_flight_.started(*this);
  receive_armed_ = true;
  receive_cancelled_ = false;
}

void IoUringSocketChannel::on_receive(int result, unsigned flags) {
  ChannelPtr keep = is_last(flags) ? op_finished() : ChannelPtr();
  if (is_last(flags)) receive_armed_ = false;
  if (flags & IORING_CQE_F_BUFFER) {
    ByteBuf data = driver_->take_buffer(flags >> IORING_CQE_BUFFER_SHIFT, result > 0 ? result : 0);
    if (result > 0) deliver(std::move(data));
  }
  if (result == 0) {
    if (reading() && parked_.empty()) {
      eof_in_batch_ = true;
      request_batch_end();
    } else if (is_open() && !input_shutdown_) {
      eof_parked_ = true;
      watch_hangup();  // read when reading resumes; a reset may come first
    }
    return;  // the stream ended: nothing to re-arm
  }
  if (result < 0 && result != -ENOBUFS && result != -ECANCELED && result != -EINTR && result != -EAGAIN) {
    if (is_open()) fail_and_close(std::make_exception_ptr(IoError(-result, "read")));
    return;
  }
  // The next receive, while reading (also after running out of provided buffers).
  if (!is_last(flags)) return;
  if (reading()) {
    arm_receive();
  } else {
    watch_hangup();
  }
}

// Nothing receives from the socket now, so nothing would report the peer's reset: a multishot poll
// does, from the first time the channel stops receiving until it closes (not re-armed per
// suspension). The kernel always adds POLLRDHUP, which stays set after the peer's FIN: that one is
// ignored (a receive reads the FIN), and a multishot poll completes once per wake-up, not per level.
void IoUringSocketChannel::watch_hangup() {
  if (hangup_armed_ || fd_ < 0 || driver_ == nullptr || connecting_ || !is_open()) return;
  io_uring_sqe* sqe = driver_->prepare(hangup_op_);
  io_uring_prep_poll_multishot(sqe, fd_, POLLERR | POLLHUP);
  in_flight_.started(*this);
  hangup_armed_ = true;
}

void IoUringSocketChannel::on_hangup(int result, unsigned flags) {
  ChannelPtr keep = is_last(flags) ? op_finished() : ChannelPtr();
  if (is_last(flags)) hangup_armed_ = false;
  if (!is_open() || fd_ < 0 || result == -ECANCELED) return;
  if (result < 0) {
    log(LogLevel::warn, "channel {}: io_uring poll for a hang-up failed (errno {}); a reset may go unnoticed", id(),
        -result);
    return;
  }
  if ((result & (POLLERR | POLLHUP)) == 0) {
    if (is_last(flags)) watch_hangup();  // the kernel ended the multishot poll: arm it again
    return;
  }
  if (const int err = socket_ops::pending_error(fd_); err != 0) {
    fail_and_close(std::make_exception_ptr(IoError(err, "socket error")));
  } else if (input_shutdown_) {
    close_now();  // both directions are gone
  }
  // Else POLLHUP without an error (the peer's FIN after our own): a receive reads the FIN when
  // reading resumes.
}

void IoUringSocketChannel::deliver(ByteBuf data) {
  if (!is_open() || input_shutdown_) return;
  // Parked while reading is off, and behind anything parked earlier (its delivery task may not have run).
  if (!want_read_ || !auto_read_or_requested() || !parked_.empty()) {
    parked_.push_back(std::move(data));
    return;
  }
  request_batch_end();
  ++batch_reads_;
  pipeline().fire_read(std::move(data));
}

void IoUringSocketChannel::deliver_parked() {
  if (!reading()) return;
  if (parked_.empty() && !eof_parked_) {  // a second begin_read's task: the first delivered them
    arm_receive();
    return;
  }
  std::vector<ByteBuf> parked = std::move(parked_);
  parked_.clear();
  bool any = false;
  for (std::size_t i = 0; i < parked.size(); ++i) {
    if (!is_open()) return;
    if (!want_read_ || !auto_read_or_requested()) {
      // A handler stopped reading again (backpressure): the rest waits for the next resume.
      parked_.assign(std::make_move_iterator(parked.begin() + static_cast<std::ptrdiff_t>(i)),
                     std::make_move_iterator(parked.end()));
      break;
    }
    pipeline().fire_read(std::move(parked[i]));
    any = true;
  }
  const bool eof = parked_.empty() && std::exchange(eof_parked_, false);
  read_batch_done();
  if (any && is_open()) pipeline().fire_read_complete();
  if (eof && is_open()) {
    on_input_shutdown();
    return;
  }
  if (reading()) arm_receive();
}

void IoUringSocketChannel::request_batch_end() {
  if (batch_pending_) return;
  batch_pending_ = true;
  in_flight_.started(*this);  // no reference count touched while an operation already holds one
  driver_->at_batch_end(this);
}

void IoUringSocketChannel::on_batch_end() {
  ChannelPtr keep = op_finished();
  batch_pending_ = false;
  const bool any = std::exchange(batch_reads_, 0) > 0;
  if (!is_open()) return;
  read_batch_done();
  if (any) pipeline().fire_read_complete();
  if (std::exchange(eof_in_batch_, false) && is_open()) on_input_shutdown();
}

void IoUringSocketChannel::on_input_shutdown() {
  input_shutdown_ = true;
  if (!config().allow_half_closure || is_output_shutdown()) {
    close_at_input_end();  // what was flushed before the FIN still goes out
    return;
  }
  note_close_reason(CloseReason::peer_closed);  // if the connection ends now, the peer ended it
  pipeline().fire_user_event(ChannelInputShutdownEvent{});
  watch_hangup();  // half-closed: open for writing until the peer resets or we close
}

// --- writing -------------------------------------------------------------------------------------

void IoUringSocketChannel::do_flush() {
  if (send_in_flight_ || fd_ < 0 || connecting_) return;  // the send's completion continues
  start_send();
}

void IoUringSocketChannel::start_send() {
  if (!outbound().has_flushed()) return;
  if (outbound().flushed_file() != nullptr) {
    start_file_send();
    return;
  }
  iovec* iov = inline_iov_;
  int max_iov = kInlineIovecs;
  if (outbound().flushed_entries() > static_cast<std::size_t>(kInlineIovecs)) {
    if (!many_iov_) many_iov_ = std::make_unique<iovec[]>(kMaxIovecs);
    iov = many_iov_.get();
    max_iov = kMaxIovecs;
  }
  send_entries_ = outbound().collect_iovecs(iov, max_iov, kMaxBytesPerSend);
  std::size_t bytes = 0;
  for (int i = 0; i < send_entries_; ++i) bytes += iov[i].iov_len;
  msg_ = {};
  msg_.msg_iov = iov;
  msg_.msg_iovlen = static_cast<std::size_t>(send_entries_);
  io_uring_sqe* sqe = driver_->prepare(send_op_);
  const std::size_t zero_copy_threshold = driver_->options().zero_copy_threshold;
  const bool zero_copy = zero_copy_threshold > 0 && bytes >= zero_copy_threshold;
  if (zero_copy) hold_send_buffers();  // until the notification, not only until the result
  if (send_entries_ == 1) {
    // One buffer (a typical response): a plain send spares the kernel importing a msghdr and iovec.
    if (zero_copy) {
      io_uring_prep_send_zc(sqe, fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL, 0);
    } else {
      io_uring_prep_send(sqe, fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
    }
  } else if (zero_copy) {
    io_uring_prep_sendmsg_zc(sqe, fd_, &msg_, MSG_NOSIGNAL);
  } else {
    io_uring_prep_sendmsg(sqe, fd_, &msg_, MSG_NOSIGNAL);
  }
  in_flight_.started(*this);
  send_in_flight_ = true;
}

void IoUringSocketChannel::hold_send_buffers() {
  if (!send_hold_.empty()) return;
  outbound().retain_flushed(static_cast<std::size_t>(send_entries_), send_hold_);
}

void IoUringSocketChannel::on_send(int result, unsigned flags) {
  ChannelPtr keep = is_last(flags) ? op_finished() : ChannelPtr();
  if ((flags & IORING_CQE_F_NOTIF) == 0 && !send_detached_ && is_open()) {
    if (result >= 0 && sending_chunk_) {
      const FileRegion* file = outbound().flushed_file();
      if (file != nullptr && file->length() == static_cast<std::uint64_t>(result)) reading_front_file_ = false;
      file_chunk_.skip_bytes(static_cast<std::size_t>(result));
      driver_->count_file_bytes(static_cast<std::size_t>(result), false);
      on_file_bytes_written(static_cast<std::size_t>(result));
    } else if (result >= 0) {
      on_bytes_written(static_cast<std::size_t>(result));
    } else if (result != -EAGAIN && result != -EINTR && result != -ENOBUFS && result != -ECANCELED) {
      fail_and_close(std::make_exception_ptr(IoError(-result, "write")));
    }
  }
  if (!is_last(flags)) return;  // a zero-copy send: its notification follows
  send_in_flight_ = false;
  if (std::exchange(sending_chunk_, false) && (send_detached_ || file_chunk_.readable_bytes() == 0)) {
    file_chunk_ = ByteBuf();  // sent, or the file left the queue (close, shutdown)
  }
  send_detached_ = false;
  send_hold_.clear();
  if (is_open() && !is_output_shutdown()) start_send();
}

// --- connecting, shutting down, closing ----------------------------------------------------------

void IoUringSocketChannel::do_connect(const SocketAddress& remote, Promise<void> promise) {
  if (fd_ >= 0 || connecting_) {
    promise.fail(Error("connect: channel is already connected or connecting"));
    return;
  }
  try {
    fd_ = socket_ops::open_stream_socket(remote.family());
    socket_ops::set_blocking(fd_);  // as accepted sockets: io_uring waits for readiness itself
    socket_ops::apply_connection_options(fd_, config());
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  remote_ = remote;
  connecting_ = true;
  connect_promise_ = promise;
  io_uring_sqe* sqe = driver_->prepare(connect_op_);
  io_uring_prep_connect(sqe, fd_, remote_.raw(), remote_.length());
  in_flight_.started(*this);
  connect_timer_ = loop().schedule(config().connect_timeout, [self = shared_from_this(), this] {
    connect_timer_ = 0;
    if (!connecting_) return;
    connecting_ = false;
    // Closing the socket does not end a connect the kernel holds: without the cancel the channel
    // stays allocated (its in-flight guard) until the kernel gives up on the SYNs, minutes later.
    driver_->cancel(connect_op_);
    connect_promise_.fail(socket_ops::connect_timed_out(remote_, config().connect_timeout));
    close_now();
  });
}

void IoUringSocketChannel::on_connect(int result, unsigned /*flags*/) {
  ChannelPtr keep = op_finished();
  if (!connecting_) return;  // timed out or closed meanwhile
  connecting_ = false;
  if (connect_timer_ != 0) {
    loop().cancel(connect_timer_);
    connect_timer_ = 0;
  }
  if (result < 0) {
    connect_promise_.fail(IoError(-result, fmt::format("connect to {}", remote_.to_string())));
    close_now();
    return;
  }
  activate(socket_ops::local_address(fd_), remote_);
  connect_promise_.set_value();
  if (is_open()) do_flush();  // writes queued while connecting
}

void IoUringSocketChannel::do_shutdown_output(Promise<void> promise) {
  if (::shutdown(fd_, SHUT_WR) != 0) {
    promise.fail(IoError(errno, "shutdown(SHUT_WR)"));
    return;
  }
  set_output_shutdown();
  if (send_in_flight_) {
    hold_send_buffers();
    send_detached_ = true;
  }
  outbound().clear();
  promise.set_value();
  pipeline().fire_user_event(ChannelOutputShutdownEvent{});
  if (input_shutdown_ && is_open()) close_now();
}

void IoUringSocketChannel::do_close() {
  if (connect_timer_ != 0) {
    loop().cancel(connect_timer_);
    connect_timer_ = 0;
  }
  if (connecting_) {
    connecting_ = false;
    driver_->cancel(connect_op_);
    connect_promise_.fail(ChannelClosedError("channel closed while connecting"));
  }
  if (receive_armed_ && !receive_cancelled_) {
    driver_->cancel(receive_op_);
    receive_cancelled_ = true;
  }
  if (hangup_armed_) driver_->cancel(hangup_op_);
  if (send_in_flight_) {
    // The outbound buffer is cleared after this returns; the kernel may still read the send's buffers.
    hold_send_buffers();
    send_detached_ = true;
    // A splice may be blocked in an io_uring worker on a full socket: the cancel interrupts it.
    if (splice_in_flight_) driver_->cancel(splice_in_op_);
    if (splice_out_in_flight_) driver_->cancel(splice_out_op_);
    if (writable_wait_in_flight_) driver_->cancel(writable_op_);
    if (!splice_in_flight_ && !splice_out_in_flight_ && !writable_wait_in_flight_) driver_->cancel(send_op_);
  }
  parked_.clear();
  if (fd_ >= 0) {
    if (in_flight_.idle()) {
      ::close(fd_);
      close_pipe();
    } else {
      closing_fd_ = fd_;  // see op_finished
    }
    fd_ = -1;
  }
}

}  // namespace weft
