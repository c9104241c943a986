#pragma once
// A TCP connection on the io_uring transport: one receive (a provided buffer) armed while reading,
// at most one gathered send in flight, a connect for client channels, and a hang-up watch once the
// channel has stopped receiving (reading suspended, or the input ended).
//
// A FileRegion at the front of the write queue is sent through the channel's own pipe, made with
// the first file and closed with the channel: a splice from the file into the pipe linked to a
// splice from the pipe into the socket (io_uring_file_send.cc). Bytes left in the pipe (a short
// socket splice) belong to that file and go first. Without a pipe (EMFILE) the file is read into a
// buffer and sent, a chunk at a time.

#include <sys/socket.h>
#include <sys/uio.h>

#include <memory>
#include <vector>

#include "io_uring_driver.h"
#include "weft/channel/channel.h"

namespace weft {

class IoUringSocketChannel final : public Channel, private IoUringBatchEnd {
 public:
  // fd < 0: an unconnected client channel (connect() creates the socket).
  IoUringSocketChannel(EventLoop& loop, const ChannelConfig& config, int fd, SocketAddress remote);
  ~IoUringSocketChannel() override;

  int native_fd() const noexcept override { return fd_; }
  bool sends_files() const noexcept override { return true; }

 protected:
  void do_register() override;
  void do_begin_read() override;
  void do_stop_read() override;
  void do_flush() override;
  void do_close() override;
  void do_connect(const SocketAddress& remote, Promise<void> promise) override;
  void do_shutdown_output(Promise<void> promise) override;

 private:
  static constexpr int kMaxIovecs = 256;
  // A send of a few buffers (a response batch, a head and its body) uses the channel's own iovecs;
  // deeper queues a heap array made on first need, so an idle connection does not carry 4 KiB.
  static constexpr int kInlineIovecs = 8;

  void on_receive(int result, unsigned flags);
  void on_send(int result, unsigned flags);
  void on_connect(int result, unsigned flags);
  void on_hangup(int result, unsigned flags);
  void request_batch_end();
  void on_batch_end() override;

  bool reading() const noexcept { return want_read_ && is_open() && !input_shutdown_; }
  void arm_receive();
  void deliver(ByteBuf data);
  void deliver_parked();
  void start_send();
  void hold_send_buffers();
  void on_input_shutdown();
  void watch_hangup();

  // sending a file (io_uring_file_send.cc)
  void start_file_send();
  bool open_pipe() noexcept;
  void close_pipe() noexcept;
  void splice_file(const FileRegion& file);
  void send_file_chunk(const FileRegion& file);
  void on_splice_in(int result, unsigned flags);
  void on_splice_out(int result, unsigned flags);
  void on_writable(int result, unsigned flags);
  void file_step_done();

  int fd_;
  // Closed by do_close while operations were queued or in flight: closed when the last one ends,
  // so that the descriptor's number is not reused while a submission entry still names it.
  int closing_fd_ = -1;
  ChannelPtr op_finished() noexcept;
  IoUringDriver* driver_ = nullptr;
  SocketAddress remote_;
  InFlightGuard in_flight_;
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_receive> receive_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_send> send_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_connect> connect_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_hangup> hangup_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_splice_in> splice_in_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_splice_out> splice_out_op_{*this};
  MemberOp<IoUringSocketChannel, &IoUringSocketChannel::on_writable> writable_op_{*this};

  // reading
  bool want_read_ = false;
  bool receive_armed_ = false;
  bool receive_cancelled_ = false;  // by close
  bool input_shutdown_ = false;
  bool batch_pending_ = false;  // registered for on_batch_end
  bool eof_in_batch_ = false;
  int batch_reads_ = 0;  // messages fired since the last on_batch_end
  std::vector<ByteBuf> parked_;  // received while not reading (by the receive armed when it stopped)
  bool eof_parked_ = false;
  bool hangup_armed_ = false;  // the multishot poll for POLLERR | POLLHUP (see watch_hangup)

  // writing: the kernel reads the iovecs (inline_iov_ or many_iov_) and the buffers they point
  // into until the send's last completion
  iovec inline_iov_[kInlineIovecs];
  std::unique_ptr<iovec[]> many_iov_;
  msghdr msg_{};
  int send_entries_ = 0;
  bool send_in_flight_ = false;
  bool send_detached_ = false;      // the outbound buffer let go of the send's buffers (close, shutdown)
  std::vector<ByteBuf> send_hold_;  // references keeping those buffers alive until the last completion

  // sending a file: send_in_flight_ stays set until both splices (or the chunk's send) completed
  int pipe_read_ = -1;  // the pipe, made with the first file; -1/-1 when none
  int pipe_write_ = -1;
  std::size_t pipe_capacity_ = 0;
  std::size_t piped_ = 0;  // bytes of the front file in the pipe, not yet in the socket
  std::size_t splice_in_requested_ = 0;
  std::size_t splice_out_requested_ = 0;
  bool splice_in_flight_ = false;
  bool splice_out_in_flight_ = false;
  bool writable_wait_in_flight_ = false;
  bool pipe_full_ = false;   // the last splice into the pipe found it full: drain before filling
  bool file_ended_ = false;  // the last splice into the pipe found the file's end (before the region's)
  bool sending_chunk_ = false;
  bool reading_front_file_ = false;                // no pipe could be made for the front file: it is read whole
  std::shared_ptr<const FileHandle> splice_file_;  // the descriptor the splice into the pipe reads
  ByteBuf file_chunk_;                             // without a pipe: the front file's bytes read, not yet sent

  // connecting
  bool connecting_ = false;
  Promise<void> connect_promise_;
  TimerId connect_timer_ = 0;
};

}  // namespace weft
