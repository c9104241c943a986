#include "epoll_server_channel.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "../socket/descriptor_reserve.h"
#include "../socket/socket_ops.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

using socket_ops::kAcceptPause;

}  // namespace

EpollServerChannel::EpollServerChannel(EventLoop& loop, const ChannelConfig& config)
    : Channel(loop, config, default_allocator()) {}

EpollServerChannel::~EpollServerChannel() {
  if (fd_ >= 0) ::close(fd_);
}

void EpollServerChannel::do_register() {
  driver_ = &EpollDriver::of(loop());
}

void EpollServerChannel::do_bind(const SocketAddress& local, Promise<void> promise) {
  if (fd_ >= 0) {
    promise.fail(Error("bind: server channel is already bound"));
    return;
  }
  try {
    fd_ = socket_ops::open_stream_socket(local.family());
    socket_ops::bind_and_listen(fd_, local, config());
    driver_->add(fd_, 0, this);
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  reserve_.refill();
  activate(socket_ops::local_address(fd_), SocketAddress());  // addresses are set before the future completes
  promise.set_value();
}

void EpollServerChannel::update_interest() {
  if (fd_ < 0) return;
  std::uint32_t wanted = (want_read_ && !paused_) ? std::uint32_t{EPOLLIN} : 0u;
  if (wanted == interest_) return;
  try {
    driver_->modify(fd_, wanted, this);
    interest_ = wanted;
  } catch (...) {
    fail_and_close(std::current_exception());
  }
}

void EpollServerChannel::do_begin_read() {
  want_read_ = true;
  update_interest();
}

void EpollServerChannel::do_stop_read() {
  want_read_ = false;
  update_interest();
}

void EpollServerChannel::do_write_message(MessageRef) {
  throw Error("a server channel does not write; write to an accepted channel instead");
}

void EpollServerChannel::on_epoll_events(std::uint32_t events) {
  if (fd_ < 0) return;
  if (events & EPOLLIN) accept_all();
}

void EpollServerChannel::accept_all() {
  int accepted = 0;
  while (is_open() && auto_read_or_requested() && !paused_) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      ++accepted;
      pipeline().fire_read(AcceptedSocket(fd, SocketAddress(reinterpret_cast<sockaddr*>(&ss), len)));
      continue;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) break;
    if (err == EMFILE || err == ENFILE) {
      // accept4 reports EMFILE before it looks at the queue, so it says nothing about whether a
      // connection is waiting: only a shed that found one may loop again, or the loop spins here.
      DescriptorReserve::Shed shed = reserve_.shed_one(fd_, local_address(), loop().now());
      if (shed == DescriptorReserve::Shed::one) continue;
      if (shed == DescriptorReserve::Shed::no_reserve) pause_accepting();  // back off instead of busy looping
      break;
    }
    // ENOBUFS, ENOMEM, EPERM...: report and back off instead of spinning on a level-triggered event.
    pipeline().fire_exception(std::make_exception_ptr(IoError(err, "accept")));
    pause_accepting();
    break;
  }
  read_batch_done();
  if (accepted > 0 && is_open()) pipeline().fire_read_complete();
}

void EpollServerChannel::pause_accepting() {
  if (paused_) return;
  paused_ = true;
  update_interest();
  loop().schedule(kAcceptPause, [self = shared_from_this(), this] {
    paused_ = false;
    reserve_.refill();
    if (is_open()) update_interest();
  });
}

void EpollServerChannel::do_close() {
  if (fd_ >= 0) {
    driver_->remove(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  reserve_.release();
}

}  // namespace weft
