#include "epoll_socket_channel.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "../socket/socket_ops.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/channel/events.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

using socket_ops::kMaxBytesPerWrite;
using socket_ops::kMaxIovecs;

}  // namespace

EpollSocketChannel::EpollSocketChannel(EventLoop& loop, const ChannelConfig& config, int fd, SocketAddress remote)
    : EpollSocketState(fd, config),
      Channel(loop, config, pooled_allocator()),
      remote_(remote),
      connect_promise_(&loop) {}

EpollSocketChannel::~EpollSocketChannel() {
  if (fd_ >= 0) ::close(fd_);
}

void EpollSocketChannel::do_register() {
  driver_ = &EpollDriver::of(loop());
  if (fd_ < 0) return;  // a client channel: connect() creates the socket
  socket_ops::apply_connection_options(fd_, config());
  attach_to_epoll(0);
  activate(socket_ops::local_address(fd_), remote_);
}

void EpollSocketChannel::attach_to_epoll(std::uint32_t events) {
  driver_->add(fd_, events, this);
  in_epoll_ = true;
  interest_ = events;
}

void EpollSocketChannel::update_interest() {
  if (!in_epoll_ || fd_ < 0) return;
  std::uint32_t wanted = 0;
  if (want_read_ && !input_shutdown_) wanted |= EPOLLIN | EPOLLRDHUP;
  if (waiting_writable_ || connecting_) wanted |= EPOLLOUT;
  if (wanted == interest_) return;
  try {
    driver_->modify(fd_, wanted, this);
    interest_ = wanted;
  } catch (...) {
    fail_and_close(std::current_exception());
  }
}

void EpollSocketChannel::do_begin_read() {
  want_read_ = true;
  if (hangup_parked_) {
    // The peer hung up while we were not reading: what it sent is still in the socket.
    loop().execute([self = shared_from_this(), this] {
      if (is_open() && want_read_) read_batch();
    });
    return;
  }
  update_interest();
}

void EpollSocketChannel::do_stop_read() {
  want_read_ = false;
  update_interest();
}

void EpollSocketChannel::on_epoll_events(std::uint32_t events) {
  if (fd_ < 0) return;
  if (connecting_) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) finish_connect();
    return;
  }
  if (events & EPOLLERR) {
    int err = socket_ops::pending_error(fd_);
    if (err != 0) {
      fail_and_close(std::make_exception_ptr(IoError(err, "socket error")));
      return;
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
    if (want_read_ && !input_shutdown_) {
      read_batch();
    } else if (events & EPOLLHUP) {
      if (input_shutdown_) {  // both directions are gone
        close_now();
        return;
      }
      // Level-triggered EPOLLHUP cannot be masked: leave the set until reading resumes.
      driver_->remove(fd_);
      in_epoll_ = false;
      hangup_parked_ = true;
      return;
    }
  }
  if (fd_ >= 0 && (events & EPOLLOUT) && waiting_writable_) {
    waiting_writable_ = false;
    update_interest();
    write_out();
  }
}

void EpollSocketChannel::read_batch() {
  ByteBufAllocator& alloc = allocator();
  int reads = 0;
  bool eof = false;
  while (reads < config().max_messages_per_read && is_open() && auto_read_or_requested() && !input_shutdown_) {
    ByteBuf buf = alloc.buffer(sizer_.next_size());
    const std::size_t wanted = buf.writable_bytes();
    ssize_t n = ::recv(fd_, buf.write_ptr(), wanted, 0);
    if (n > 0) {
      buf.advance_writer(static_cast<std::size_t>(n));
      sizer_.record(static_cast<std::size_t>(n));
      ++reads;
      pipeline().fire_read(std::move(buf));
      if (static_cast<std::size_t>(n) < wanted) break;  // drained: skip the read that would say EAGAIN
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
  if (hangup_parked_ && is_open() && !input_shutdown_ && !eof) {
    // parked after a hang-up and the batch ended early: keep reading until EOF
    if (want_read_) do_begin_read();
  }
}

void EpollSocketChannel::on_input_shutdown() {
  input_shutdown_ = true;
  if (hangup_parked_) {  // both directions are gone
    close_now();
    return;
  }
  update_interest();  // no more reads
  if (!config().allow_half_closure || is_output_shutdown()) {
    close_at_input_end();
    return;
  }
  note_close_reason(CloseReason::peer_closed);  // if the connection ends now, the peer ended it
  pipeline().fire_user_event(ChannelInputShutdownEvent{});
}

void EpollSocketChannel::do_flush() {
  if (waiting_writable_ || fd_ < 0) return;  // EPOLLOUT will resume the write
  write_out();
}

void EpollSocketChannel::write_out() {
  // Re-entered when a handler writes and flushes from the writability event that a send below fires:
  // the loop below sends what it queued. Recursing instead grows the stack by one frame per send.
  if (writing_) return;
  writing_ = true;
  struct ClearOnExit {
    bool& flag;
    ~ClearOnExit() { flag = false; }
  } clear{writing_};
  iovec iov[kMaxIovecs];
  for (int spins = config().write_spin_count; outbound().has_flushed(); --spins) {
    if (spins == 0) {
      // Let other channels of this loop run; continue later.
      loop().execute([self = shared_from_this(), this] {
        if (is_open() && !waiting_writable_) write_out();
      });
      return;
    }
    int count = outbound().collect_iovecs(iov, kMaxIovecs, kMaxBytesPerWrite);
    if (count == 0) [[unlikely]] {  // a file is next
      if (send_file_front()) continue;
      return;
    }
    std::size_t requested = 0;
    for (int i = 0; i < count; ++i) requested += iov[i].iov_len;
    ssize_t n;
    if (count == 1) {
      n = ::send(fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);  // the kernel's shorter path
    } else {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(count);
      n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    }
    if (n >= 0) {
      on_bytes_written(static_cast<std::size_t>(n));
      if (!is_open()) return;
      if (static_cast<std::size_t>(n) < requested) {
        // The socket buffer is full: wait for EPOLLOUT instead of trying again for EAGAIN.
        waiting_writable_ = true;
        update_interest();
        return;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      waiting_writable_ = true;
      update_interest();
      return;
    }
    fail_and_close(std::make_exception_ptr(IoError(errno, "write")));
    return;
  }
}

// Sends what the socket takes of the file at the front of the queue. Returns whether to go on
// writing (false: waiting for EPOLLOUT, or closed).
bool EpollSocketChannel::send_file_front() {
  FileRegion& file = *outbound().flushed_file();
  const std::size_t requested =
      file.length() < kMaxBytesPerWrite ? static_cast<std::size_t>(file.length()) : kMaxBytesPerWrite;
  const ssize_t n = socket_ops::send_file(fd_, file.fd(), file.offset(), requested);
  if (n > 0) {
    on_file_bytes_written(static_cast<std::size_t>(n));
    if (!is_open()) return false;
    if (static_cast<std::size_t>(n) == requested) return true;
    waiting_writable_ = true;  // the socket buffer is full (or the file ends early: the next call says so)
    update_interest();
    return false;
  }
  if (n < 0 && errno == EINTR) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    waiting_writable_ = true;
    update_interest();
    return false;
  }
  fail_and_close(std::make_exception_ptr(n == 0 ? IoError(ENODATA, "sendfile: the file ended before its region")
                                                : IoError(errno, "sendfile")));
  return false;
}

void EpollSocketChannel::do_connect(const SocketAddress& remote, Promise<void> promise) {
  if (fd_ >= 0 || connecting_) {
    promise.fail(Error("connect: channel is already connected or connecting"));
    return;
  }
  try {
    fd_ = socket_ops::open_stream_socket(remote.family());
    socket_ops::apply_connection_options(fd_, config());
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  remote_ = remote;
  int rc;
  do {
    rc = ::connect(fd_, remote.raw(), remote.length());
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    attach_to_epoll(0);
    activate(socket_ops::local_address(fd_), remote_);
    promise.set_value();
    return;
  }
  if (errno != EINPROGRESS) {
    promise.fail(IoError(errno, fmt::format("connect to {}", remote.to_string())));
    close_now();
    return;
  }
  connecting_ = true;
  connect_promise_ = promise;
  try {
    attach_to_epoll(EPOLLOUT);
  } catch (...) {
    connecting_ = false;
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  connect_timer_ = loop().schedule(config().connect_timeout, [self = shared_from_this(), this] {
    connect_timer_ = 0;
    if (!connecting_) return;
    connecting_ = false;
    connect_promise_.fail(socket_ops::connect_timed_out(remote_, config().connect_timeout));
    close_now();
  });
}

void EpollSocketChannel::finish_connect() {
  connecting_ = false;
  if (connect_timer_ != 0) {
    loop().cancel(connect_timer_);
    connect_timer_ = 0;
  }
  int err = socket_ops::pending_error(fd_);
  if (err != 0) {
    connect_promise_.fail(IoError(err, fmt::format("connect to {}", remote_.to_string())));
    close_now();
    return;
  }
  update_interest();
  activate(socket_ops::local_address(fd_), remote_);
  connect_promise_.set_value();
}

void EpollSocketChannel::do_shutdown_output(Promise<void> promise) {
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

void EpollSocketChannel::do_close() {
  if (connect_timer_ != 0) {
    loop().cancel(connect_timer_);
    connect_timer_ = 0;
  }
  if (connecting_) {
    connecting_ = false;
    connect_promise_.fail(ChannelClosedError("channel closed while connecting"));
  }
  if (fd_ >= 0) {
    if (in_epoll_) driver_->remove(fd_);
    in_epoll_ = false;
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace weft
