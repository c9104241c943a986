#include "io_uring_server_channel.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "../socket/descriptor_reserve.h"
#include "../socket/socket_ops.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

using socket_ops::kAcceptPause;

}  // namespace

IoUringServerChannel::IoUringServerChannel(EventLoop& loop, const ChannelConfig& config)
    : Channel(loop, config, default_allocator()) {}

IoUringServerChannel::~IoUringServerChannel() {
  if (fd_ >= 0) ::close(fd_);
  if (closing_fd_ >= 0) ::close(closing_fd_);
}

ChannelPtr IoUringServerChannel::op_finished() noexcept {
  ChannelPtr last = in_flight_.finished();
  if (in_flight_.idle() && closing_fd_ >= 0) ::close(std::exchange(closing_fd_, -1));
  return last;
}

void IoUringServerChannel::do_register() {
  driver_ = &IoUringDriver::of(loop());
}

void IoUringServerChannel::do_bind(const SocketAddress& local, Promise<void> promise) {
  if (fd_ >= 0) {
    promise.fail(Error("bind: server channel is already bound"));
    return;
  }
  try {
    fd_ = socket_ops::open_stream_socket(local.family());
    socket_ops::bind_and_listen(fd_, local, config());
  } catch (...) {
    promise.set_error(std::current_exception());
    close_now();
    return;
  }
  reserve_.refill();
  activate(socket_ops::local_address(fd_), SocketAddress());  // addresses are set before the future completes
  promise.set_value();
}

void IoUringServerChannel::do_write_message(MessageRef) {
  throw Error("a server channel does not write; write to an accepted channel instead");
}

void IoUringServerChannel::do_begin_read() {
  want_read_ = true;
  if (!parked_.empty()) {
    loop().execute([self = shared_from_this(), this] { deliver_parked(); });
    return;
  }
  arm_accept();
}

void IoUringServerChannel::do_stop_read() {
  want_read_ = false;
  if (accept_armed_ && !accept_cancelled_) {
    driver_->cancel(accept_op_);
    accept_cancelled_ = true;
  }
}

void IoUringServerChannel::arm_accept() {
  if (accept_armed_ || !accepting()) return;
  io_uring_sqe* sqe = driver_->prepare(accept_op_);
  // Accepted sockets are left blocking: io_uring waits for readiness itself.
  io_uring_prep_multishot_accept(sqe, fd_, nullptr, nullptr, SOCK_CLOEXEC);
  in_flight_.started(*this);
  accept_armed_ = true;
  accept_cancelled_ = false;
}

void IoUringServerChannel::on_accept(int result, unsigned flags) {
  const bool last = (flags & IORING_CQE_F_MORE) == 0;
  ChannelPtr keep = last ? op_finished() : ChannelPtr();
  if (last) accept_armed_ = false;
  if (result >= 0) {
    deliver(AcceptedSocket(result, socket_ops::peer_address(result)));
  } else if (result == -EMFILE || result == -ENFILE) {
    // Shed once the accept has ended: while armed, the kernel could take the spare descriptor the
    // moment the reserve frees it and let a connection through.
    out_of_descriptors_ = true;
    if (!last && !accept_cancelled_) {
      driver_->cancel(accept_op_);
      accept_cancelled_ = true;
    }
  } else if (result != -ECANCELED && result != -EINTR && result != -ECONNABORTED && result != -EAGAIN) {
    // ENOBUFS, ENOMEM, EPERM...: report and back off.
    if (is_open()) {
      pipeline().fire_exception(std::make_exception_ptr(IoError(-result, "accept")));
      pause_accepting();
    }
  }
  if (last && std::exchange(out_of_descriptors_, false) && is_open()) {
    // The kernel fails an accept for want of a descriptor before it looks at the queue, so re-arming
    // at once would fail again at once: shed a waiting connection and try again, or pause.
    if (reserve_.shed_one(fd_, local_address(), loop().now()) != DescriptorReserve::Shed::one) pause_accepting();
  }
  if (last) arm_accept();
}

void IoUringServerChannel::deliver(AcceptedSocket socket) {
  if (!is_open()) return;  // the socket closes its descriptor
  if (!want_read_ || !auto_read_or_requested() || !parked_.empty()) {  // behind anything parked earlier
    parked_.push_back(std::move(socket));
    return;
  }
  request_batch_end();
  pipeline().fire_read(std::move(socket));
}

void IoUringServerChannel::deliver_parked() {
  if (!want_read_ || !is_open()) return;
  std::vector<AcceptedSocket> parked = std::move(parked_);
  parked_.clear();
  for (std::size_t i = 0; i < parked.size(); ++i) {
    if (!is_open()) return;
    if (!want_read_ || !auto_read_or_requested()) {  // stopped again: the rest waits
      parked_.assign(std::make_move_iterator(parked.begin() + static_cast<std::ptrdiff_t>(i)),
                     std::make_move_iterator(parked.end()));
      break;
    }
    pipeline().fire_read(std::move(parked[i]));
  }
  read_batch_done();
  if (is_open()) pipeline().fire_read_complete();
  arm_accept();
}

void IoUringServerChannel::request_batch_end() {
  if (batch_pending_) return;
  batch_pending_ = true;
  in_flight_.started(*this);  // no reference count touched while an operation already holds one
  driver_->at_batch_end(this);
}

void IoUringServerChannel::on_batch_end() {
  ChannelPtr keep = op_finished();
  batch_pending_ = false;
  if (!is_open()) return;
  read_batch_done();
  pipeline().fire_read_complete();
}

void IoUringServerChannel::pause_accepting() {
  if (paused_) return;
  paused_ = true;
  if (accept_armed_ && !accept_cancelled_) {
    driver_->cancel(accept_op_);
    accept_cancelled_ = true;
  }
  loop().schedule(kAcceptPause, [self = shared_from_this(), this] {
    paused_ = false;
    reserve_.refill();
    arm_accept();
  });
}

void IoUringServerChannel::do_close() {
  if (accept_armed_ && !accept_cancelled_) {
    driver_->cancel(accept_op_);
    accept_cancelled_ = true;
  }
  parked_.clear();
  if (fd_ >= 0) {
    // The armed accept holds the socket until its cancellation completes, a loop turn or more from
    // now: without shutdown() it would go on listening (and accepting) after the close future.
    ::shutdown(fd_, SHUT_RDWR);
    if (in_flight_.idle()) {
      ::close(fd_);
    } else {
      closing_fd_ = fd_;  // see op_finished
    }
    fd_ = -1;
  }
  reserve_.release();
}

}  // namespace weft
