// IoUringSocketChannel sending the FileRegion at the front of its write queue: through the
// channel's pipe with two linked splices (file -> pipe, pipe -> socket), or, when no pipe can be
// made, read into a buffer and sent.
//
// One round submits, while the pipe has room and the file has unread bytes, a splice of up to the
// pipe's free space from the file into the pipe, linked (IOSQE_IO_LINK) to a splice of everything
// then in the pipe into the socket. A short first splice fails the link: the second completes with
// -ECANCELED and the next round sends what did reach the pipe. The bytes in the pipe (piped_) are
// always the front file's next bytes, so the file leaves the queue only once the pipe is empty, and
// the next buffers go after it.

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "io_uring_socket_channel.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {
namespace {

// The pipe's size. The default pipe (64 KiB) takes 16 rounds for a 1 MiB file; each round is a
// hand-off to an io_uring worker thread (the kernel runs splices there). A pipe charges its size to
// the user's pipe-user-pages-soft (64 MiB by default), past which the kernel refuses to grow pipes
// (the default size stays: slower, still correct) and makes new ones small. 256 KiB keeps 256
// channels' pipes under that limit at this size.
constexpr int kPipeSize = 256 << 10;
// Without a pipe: what one read of the file takes.
constexpr std::size_t kChunkSize = 64 << 10;

}  // namespace

void IoUringSocketChannel::start_file_send() {
  const FileRegion& file = *outbound().flushed_file();
  send_entries_ = 0;  // no buffer of the write queue is in this send
  // Without a pipe for this region (none could be made when it came to the front), all of it is
  // read: a pipe made halfway would only have to wait for the chunk in flight.
  if (reading_front_file_ || (piped_ == 0 && pipe_read_ < 0 && !open_pipe())) {
    reading_front_file_ = true;
    send_file_chunk(file);
    return;
  }
  splice_file(file);
}

bool IoUringSocketChannel::open_pipe() noexcept {
  int fds[2];
  if (driver_->pipe_must_fail()) {
    errno = EMFILE;
  } else if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    pipe_read_ = fds[0];
    pipe_write_ = fds[1];
    (void)::fcntl(pipe_write_, F_SETPIPE_SZ, kPipeSize);  // refused past the user's limit: the size stays
    const int size = ::fcntl(pipe_write_, F_GETPIPE_SZ);
    pipe_capacity_ = size > 0 ? static_cast<std::size_t>(size) : std::size_t{4096};
    // The kernel runs splices in its io_uring worker threads: into a blocking socket, a splice
    // waits there while the socket is full (a slow reader would hold a worker thread per
    // connection). Non-blocking, it returns what fitted and the channel polls for room instead.
    // io_uring's own sends and receives wait for readiness either way.
    const int status = ::fcntl(fd_, F_GETFL);
    if (status < 0 || ::fcntl(fd_, F_SETFL, status | O_NONBLOCK) != 0) {
      log(LogLevel::debug, "channel {}: could not make the socket non-blocking (errno {})", id(), errno);
    }
    return true;
  }
  log(LogLevel::debug, "channel {}: no pipe for sending a file (errno {}); reading it into buffers", id(), errno);
  return false;
}

void IoUringSocketChannel::close_pipe() noexcept {
  if (pipe_read_ < 0) return;
  ::close(std::exchange(pipe_read_, -1));
  ::close(std::exchange(pipe_write_, -1));
  piped_ = 0;
}

void IoUringSocketChannel::splice_file(const FileRegion& file) {
  if (file_ended_ && piped_ == 0) {
    file_ended_ = false;
    fail_and_close(std::make_exception_ptr(IoError(ENODATA, "splice: the file ended before its region")));
    return;
  }
  if (piped_ == 0) pipe_full_ = false;
  if (piped_ == 0 && driver_->splice_must_eagain()) {  // a test's: see IoUringDriver
    io_uring_sqe* sqe = driver_->prepare(splice_out_op_);
    splice_out_requested_ = 1;
    io_uring_prep_splice(sqe, pipe_read_, -1, fd_, -1, 1, SPLICE_F_NONBLOCK);
    in_flight_.started(*this);
    splice_out_in_flight_ = true;
    send_in_flight_ = true;
    return;
  }
  std::size_t in = 0;
  if (!pipe_full_ && !file_ended_ && pipe_capacity_ > piped_) {
    in = static_cast<std::size_t>(std::min<std::uint64_t>(file.length() - piped_, pipe_capacity_ - piped_));
  }
  driver_->reserve(2);  // the two entries of a chain are submitted together
  if (in > 0) {
    io_uring_sqe* sqe = driver_->prepare(splice_in_op_);
    io_uring_prep_splice(sqe, file.fd(), static_cast<std::int64_t>(file.offset() + piped_), pipe_write_, -1,
                         static_cast<unsigned>(in), 0);
    sqe->flags |= IOSQE_IO_LINK;
    in_flight_.started(*this);
    splice_in_flight_ = true;
    splice_in_requested_ = in;
    splice_file_ = file.file();  // the kernel looks the descriptor up when the splice runs
  }
  // SPLICE_F_NONBLOCK: an empty pipe (the chain ran unlinked) answers -EAGAIN instead of waiting.
  io_uring_sqe* sqe = driver_->prepare(splice_out_op_);
  splice_out_requested_ = piped_ + in;
  io_uring_prep_splice(sqe, pipe_read_, -1, fd_, -1, static_cast<unsigned>(splice_out_requested_), SPLICE_F_NONBLOCK);
  in_flight_.started(*this);
  splice_out_in_flight_ = true;
  send_in_flight_ = true;
}

void IoUringSocketChannel::on_splice_in(int result, unsigned /*flags*/) {
  ChannelPtr keep = op_finished();
  splice_in_flight_ = false;
  splice_file_.reset();
  if (result > 0) {
    piped_ += static_cast<std::size_t>(result);
    // Short: the pipe's slots are full (a slot holds at most a page); drain it before filling it.
    if (static_cast<std::size_t>(result) < splice_in_requested_) pipe_full_ = true;
  } else if (result == 0) {
    file_ended_ = true;  // at its end before the region's: fails once the pipe is drained
  } else if (result == -EAGAIN) {
    pipe_full_ = true;
  } else if (result != -ECANCELED && result != -EINTR && is_open() && !send_detached_) {
    fail_and_close(std::make_exception_ptr(IoError(-result, "splice from the file")));
  }
  file_step_done();
}

void IoUringSocketChannel::on_splice_out(int result, unsigned /*flags*/) {
  ChannelPtr keep = op_finished();
  splice_out_in_flight_ = false;
  bool socket_full = result == -EAGAIN;
  if (result > 0) {
    const auto n = static_cast<std::size_t>(result);
    piped_ -= std::min(n, piped_);
    pipe_full_ = false;
    socket_full = n < splice_out_requested_;
    if (!send_detached_ && is_open()) {
      driver_->count_file_bytes(n, true);
      on_file_bytes_written(n);
    }
  } else if (result < 0 && !socket_full && result != -ECANCELED && result != -EINTR && is_open() && !send_detached_) {
    fail_and_close(std::make_exception_ptr(IoError(-result, "splice to the socket")));
  }
  if (socket_full && piped_ > 0 && !send_detached_ && is_open() && fd_ >= 0) {
    // The socket took less than the pipe held: go on once it has room (as epoll waits for EPOLLOUT).
    io_uring_sqe* sqe = driver_->prepare(writable_op_);
    io_uring_prep_poll_add(sqe, fd_, POLLOUT);
    in_flight_.started(*this);
    writable_wait_in_flight_ = true;
  }
  file_step_done();
}

void IoUringSocketChannel::on_writable(int /*result*/, unsigned /*flags*/) {
  ChannelPtr keep = op_finished();
  writable_wait_in_flight_ = false;
  file_step_done();
}

// After each completion of a round: the next round (or the next buffers) once the round has ended.
void IoUringSocketChannel::file_step_done() {
  if (splice_in_flight_ || splice_out_in_flight_ || writable_wait_in_flight_) return;
  send_in_flight_ = false;
  send_detached_ = false;
  if (is_open() && !is_output_shutdown()) start_send();
}

void IoUringSocketChannel::send_file_chunk(const FileRegion& file) {
  if (file_chunk_.readable_bytes() == 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(file.length(), kChunkSize));
    ByteBuf chunk = allocator().buffer(want);
    ssize_t got;
    do {
      got = ::pread(file.fd(), chunk.write_ptr(), want, static_cast<off_t>(file.offset()));
    } while (got < 0 && errno == EINTR);
    if (got <= 0) {
      fail_and_close(std::make_exception_ptr(got == 0 ? IoError(ENODATA, "read: the file ended before its region")
                                                      : IoError(errno, "read from the file")));
      return;
    }
    chunk.advance_writer(static_cast<std::size_t>(got));
    file_chunk_ = std::move(chunk);
  }
  io_uring_sqe* sqe = driver_->prepare(send_op_);
  io_uring_prep_send(sqe, fd_, file_chunk_.read_ptr(), file_chunk_.readable_bytes(), MSG_NOSIGNAL);
  in_flight_.started(*this);
  send_in_flight_ = true;
  sending_chunk_ = true;
}

}  // namespace weft
