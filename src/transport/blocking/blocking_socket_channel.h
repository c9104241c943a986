#pragma once
// A TCP connection on the blocking transport: a blocking socket served by its own loop thread.

#include "blocking_driver.h"
#include "weft/channel/channel.h"

namespace weft {

class BlockingSocketChannel final : public Channel, private BlockingHandle {
 public:
  // `driver` is the loop's, already owned for this channel (released on close or destruction).
  // fd < 0: an unconnected client channel (connect() creates the socket).
  BlockingSocketChannel(EventLoop& loop, BlockingDriver& driver, const ChannelConfig& config, int fd,
                        SocketAddress remote);
  ~BlockingSocketChannel() override;

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
  void on_ready(short revents) override;
  void read_batch();
  void write_out();
  ssize_t send_file(const FileRegion& file) noexcept;  // sendfile(2) of what the call may take
  void on_input_shutdown();
  void on_hangup();
  void update_watch() noexcept;
  const void* owner() const noexcept { return static_cast<const Channel*>(this); }

  BlockingDriver& driver_;
  int fd_;
  SocketAddress remote_;
  AdaptiveReadSizer sizer_;
  bool owns_loop_ = true;
  bool want_read_ = false;
  bool input_shutdown_ = false;
  bool hangup_parked_ = false;  // POLLHUP while not reading: left out of the poll until reading resumes
  bool writing_ = false;
  bool write_waits_ = false;   // a send stopped at a slice during the loop's shutdown: POLLOUT resumes it
  TimePoint stalled_since_{};  // the first send slice that took nothing, since the last progress
};

}  // namespace weft
