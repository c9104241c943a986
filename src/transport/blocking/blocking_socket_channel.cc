#include "blocking_socket_channel.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "../socket/socket_ops.h"
#include "blocking_socket_ops.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/events.h"
#include "weft/core/error.h"

namespace weft {
namespace {

using socket_ops::kMaxBytesPerWrite;
using socket_ops::kMaxIovecs;

}  // namespace

// The heap allocator, not the pooled one: every connection has a thread of its own here, and the
// pool's per-thread caches would multiply by the connection count.
BlockingSocketChannel::BlockingSocketChannel(EventLoop& loop, BlockingDriver& driver, const ChannelConfig& config,
                                             int fd, SocketAddress remote)
    : Channel(loop, config, default_allocator()),
      driver_(driver),
      fd_(fd),
      remote_(remote),
      sizer_(config.read_buffer_min, config.read_buffer_initial, config.read_buffer_max) {}

BlockingSocketChannel::~BlockingSocketChannel() {
  if (fd_ >= 0) ::close(fd_);
  if (owns_loop_) driver_.release();
}

void BlockingSocketChannel::do_register() {
  if (fd_ < 0) return;  // a client channel: connect() creates the socket
  socket_ops::apply_connection_options(fd_, config());
  blocking_ops::set_send_timeout(fd_, blocking_ops::kSendSlice);
  activate(socket_ops::local_address(fd_), remote_);
}

void BlockingSocketChannel::update_watch() noexcept {
  if (fd_ < 0) return;
  if (hangup_parked_ && !want_read_ && !write_waits_) {
    driver_.watch(-1, 0, this);  // a level-triggered POLLHUP would wake the loop over and over
    return;
  }
  const short events = static_cast<short>(((want_read_ && !input_shutdown_) ? POLLIN : 0) | (write_waits_ ? POLLOUT : 0));
  driver_.watch(fd_, events, this);
}

void BlockingSocketChannel::do_begin_read() {
  want_read_ = true;
  hangup_parked_ = false;  // the read finds what the peer sent, then its FIN
  update_watch();
}

void BlockingSocketChannel::do_stop_read() {
  want_read_ = false;
  update_watch();
}

void BlockingSocketChannel::on_ready(short revents) {
  if (fd_ < 0) return;
  if (revents & POLLNVAL) {
    fail_and_close(std::make_exception_ptr(IoError(EBADF, "poll")));
    return;
  }
  if ((revents & (POLLOUT | POLLERR | POLLHUP)) != 0 && write_waits_) {
    write_waits_ = false;
    update_watch();
    write_out();
    if (fd_ < 0) return;
  }
  if (want_read_ && !input_shutdown_) {
    read_batch();
  } else if ((revents & (POLLERR | POLLHUP)) != 0 && fd_ >= 0) {
    on_hangup();  // nothing reads the socket: the poll is the only one to see a reset
  }
}

void BlockingSocketChannel::on_hangup() {
  if (const int err = socket_ops::pending_error(fd_); err != 0) {
    fail_and_close(std::make_exception_ptr(IoError(err, "socket error")));
  } else if (input_shutdown_) {
    close_now();  // both directions are gone
  } else {
    hangup_parked_ = true;  // the peer's FIN after our own: read when reading resumes
    update_watch();
  }
}

void BlockingSocketChannel::read_batch() {
  ByteBufAllocator& alloc = allocator();
  int reads = 0;
  bool eof = false;
  // The first recv() returns at once (poll said readable); later ones only run while data waits,
  // since a recv() that blocks would keep this thread from its tasks.
  while (reads < config().max_messages_per_read && is_open() && auto_read_or_requested() && !input_shutdown_ &&
         (reads == 0 || blocking_ops::readable_now(fd_))) {
    ByteBuf buf = alloc.buffer(sizer_.next_size());
    const std::size_t wanted = buf.writable_bytes();
    ssize_t n = ::recv(fd_, buf.write_ptr(), wanted, 0);
    if (n > 0) {
      buf.advance_writer(static_cast<std::size_t>(n));
      sizer_.record(static_cast<std::size_t>(n));
      ++reads;
      pipeline().fire_read(std::move(buf));
      if (static_cast<std::size_t>(n) < wanted) break;  // drained
      continue;
    }
    if (n == 0) {
      eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    int err = errno;
    read_batch_done();
    if (reads > 0) pipeline().fire_read_complete();
    fail_and_close(std::make_exception_ptr(IoError(err, "read")));
    return;
  }
  read_batch_done();
  if (reads > 0 && is_open()) pipeline().fire_read_complete();
  if (eof && is_open()) on_input_shutdown();
}

void BlockingSocketChannel::on_input_shutdown() {
  input_shutdown_ = true;
  update_watch();
  if (!config().allow_half_closure || is_output_shutdown()) {
    close_at_input_end();  // what was flushed before the FIN still goes out
    return;
  }
  note_close_reason(CloseReason::peer_closed);  // if the connection ends now, the peer ended it
  pipeline().fire_user_event(ChannelInputShutdownEvent{});
}

void BlockingSocketChannel::do_flush() { write_out(); }

void BlockingSocketChannel::write_out() {
  // Re-entered when a handler writes and flushes from a writability event: the loop below goes on.
  if (writing_ || fd_ < 0) return;
  writing_ = true;
  iovec iov[kMaxIovecs];
  while (is_open() && outbound().has_flushed()) {
    int count = outbound().collect_iovecs(iov, kMaxIovecs, kMaxBytesPerWrite);
    FileRegion* file = count == 0 ? outbound().flushed_file() : nullptr;  // a file is next
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(count);
    driver_.begin_blocking_call(fd_, owner(), /*send=*/true);
    // Each blocks until the kernel took every byte, or a slice (kSendSlice) passed.
    ssize_t n = file == nullptr ? ::sendmsg(fd_, &msg, MSG_NOSIGNAL) : send_file(*file);
    const int err = errno;
    const bool interrupted = driver_.end_blocking_call();
    if (interrupted) {
      // close() or a shutdown of the loop came from another thread while the peer did not read.
      writing_ = false;
      close_now();
      return;
    }
    if (file != nullptr && n == 0) {
      writing_ = false;
      fail_and_close(std::make_exception_ptr(IoError(ENODATA, "sendfile: the file ended before its region")));
      return;
    }
    if (n >= 0) {
      stalled_since_ = TimePoint{};
      file == nullptr ? on_bytes_written(static_cast<std::size_t>(n))
                      : on_file_bytes_written(static_cast<std::size_t>(n));
      continue;
    }
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {  // a slice (kSendSlice) passed with nothing taken
      const TimePoint now = loop().now();
      if (stalled_since_ == TimePoint{}) stalled_since_ = now;
      if (loop().is_shutting_down()) {
        writing_ = false;
        if (now >= loop().shutdown_deadline()) {
          close_now();  // the loop's shutdown gave up waiting: not the peer's error
          return;
        }
        // Back to the loop, which runs its shutdown (a channel nobody ends politely closes now);
        // the rest leaves when the socket turns writable.
        write_waits_ = true;
        update_watch();
        return;
      }
      const Duration limit = config().send_timeout;
      if (limit <= Duration::zero() || now - stalled_since_ < limit) continue;
      writing_ = false;
      fail_and_close(std::make_exception_ptr(IoError(ETIMEDOUT, "write: no progress within the send timeout")));
      return;
    }
    writing_ = false;
    fail_and_close(std::make_exception_ptr(IoError(err, "write")));
    return;
  }
  writing_ = false;
}

ssize_t BlockingSocketChannel::send_file(const FileRegion& file) noexcept {
  return socket_ops::send_file(fd_, file.fd(), file.offset(),
                               static_cast<std::size_t>(std::min<std::uint64_t>(file.length(), kMaxBytesPerWrite)));
}

void BlockingSocketChannel::do_connect(const SocketAddress& remote, Promise<void> promise) {
  if (fd_ >= 0) {
    promise.fail(Error("connect: channel is already connected"));
    return;
  }
  try {
    fd_ = blocking_ops::open_blocking_stream_socket(remote.family());
    socket_ops::apply_connection_options(fd_, config());
    blocking_ops::set_send_timeout(fd_, config().connect_timeout);  // bounds the blocking connect()
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  remote_ = remote;
  driver_.begin_blocking_call(fd_, owner());
  int rc = ::connect(fd_, remote.raw(), remote.length());
  const int err = errno;
  const bool interrupted = driver_.end_blocking_call();
  if (rc == 0 && !interrupted) {
    try {
      blocking_ops::set_send_timeout(fd_, blocking_ops::kSendSlice);  // from the connect's bound to the sends'

    } catch (...) {
      promise.set_error(std::current_exception());
      close_now();
      return;
    }
    activate(socket_ops::local_address(fd_), remote_);
    promise.set_value();
    return;
  }
  if (interrupted) {
    promise.fail(ChannelClosedError("channel closed while connecting"));
  } else if (err == EINPROGRESS || err == EAGAIN) {
    promise.fail(socket_ops::connect_timed_out(remote, config().connect_timeout));
  } else {
    promise.fail(IoError(err, fmt::format("connect to {}", remote.to_string())));
  }
  close_now();
}

void BlockingSocketChannel::do_shutdown_output(Promise<void> promise) {
  if (::shutdown(fd_, SHUT_WR) != 0) {
    promise.fail(IoError(errno, "shutdown(SHUT_WR)"));
    return;
  }
  set_output_shutdown();
  outbound().clear();
  promise.set_value();
  pipeline().fire_user_event(ChannelOutputShutdownEvent{});
  if (input_shutdown_ && is_open()) close_now();
}

void BlockingSocketChannel::do_close() {
  driver_.unwatch();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (owns_loop_) {
    owns_loop_ = false;
    driver_.release();
  }
}

}  // namespace weft
