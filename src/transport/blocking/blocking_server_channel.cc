#include "blocking_server_channel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "../socket/socket_ops.h"
#include "blocking_socket_ops.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/core/error.h"

namespace weft {
namespace {

using socket_ops::kAcceptPause;

}  // namespace

BlockingServerChannel::BlockingServerChannel(EventLoop& loop, BlockingDriver& driver, const ChannelConfig& config)
    : Channel(loop, config, default_allocator()), driver_(driver) {}

BlockingServerChannel::~BlockingServerChannel() {
  if (fd_ >= 0) ::close(fd_);
  if (owns_loop_) driver_.release();
}

void BlockingServerChannel::do_bind(const SocketAddress& local, Promise<void> promise) {
  if (fd_ >= 0) {
    promise.fail(Error("bind: server channel is already bound"));
    return;
  }
  try {
    fd_ = blocking_ops::open_blocking_stream_socket(local.family());
    socket_ops::bind_and_listen(fd_, local, config());
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  activate(socket_ops::local_address(fd_), SocketAddress());
  promise.set_value();
}

void BlockingServerChannel::update_watch() noexcept {
  if (fd_ < 0) return;
  driver_.watch(fd_, (want_read_ && !paused_) ? POLLIN : 0, this);
}

void BlockingServerChannel::do_begin_read() {
  want_read_ = true;
  update_watch();
}

void BlockingServerChannel::do_stop_read() {
  want_read_ = false;
  update_watch();
}

void BlockingServerChannel::do_write_message(MessageRef) {
  throw Error("a server channel does not write; write to an accepted channel instead");
}

void BlockingServerChannel::on_ready(short) {
  int accepted = 0;
  // The first accept() returns at once (poll said readable); later ones only while one waits. An
  // accept() that blocks anyway (a peer reset, another process on the port) is interrupted by close.
  for (bool first = true; fd_ >= 0 && is_open() && auto_read_or_requested() && !paused_ &&
                          accepted < config().max_messages_per_read && (first || blocking_ops::readable_now(fd_));
       first = false) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    driver_.begin_blocking_call(fd_, static_cast<const Channel*>(this));
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    const int err = errno;
    const bool interrupted = driver_.end_blocking_call();
    if (fd >= 0) {
      ++accepted;
      pipeline().fire_read(AcceptedSocket(fd, SocketAddress(reinterpret_cast<sockaddr*>(&ss), len)));
      continue;
    }
    if (interrupted) {
      close_now();
      break;
    }
    if (err == EINTR || err == ECONNABORTED || err == EAGAIN || err == EWOULDBLOCK) continue;
    // EMFILE, ENOBUFS...: the connection stays queued and the socket readable; back off, or spin.
    pipeline().fire_exception(std::make_exception_ptr(IoError(err, "accept")));
    pause_accepting();
    break;
  }
  read_batch_done();
  if (accepted > 0 && is_open()) pipeline().fire_read_complete();
}

void BlockingServerChannel::pause_accepting() {
  if (paused_) return;
  paused_ = true;
  update_watch();
  loop().schedule(kAcceptPause, [self = shared_from_this(), this] {
    paused_ = false;
    if (is_open()) update_watch();
  });
}

void BlockingServerChannel::do_close() {
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
