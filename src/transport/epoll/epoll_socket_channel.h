#pragma once
// A TCP connection on the epoll transport.

#include <cstdint>

#include "epoll_driver.h"
#include "weft/channel/channel.h"

namespace weft {

namespace detail {
// What an epoll connection reads on every event. A base declared before Channel, so that it shares
// the object's first cache line with the EpollHandle vtable pointer that dispatch loads anyway; as
// members it would come after the whole channel and pipeline, one more miss per request when the
// connection is cold (a server with many connections).
struct EpollSocketState {
  EpollSocketState(int fd, const ChannelConfig& config) noexcept
      : fd_(fd), sizer_(config.read_buffer_min, config.read_buffer_initial, config.read_buffer_max) {}

  int fd_;
  std::uint32_t interest_ = 0;
  bool in_epoll_ = false;
  bool want_read_ = false;
  bool waiting_writable_ = false;
  bool writing_ = false;  // inside write_out()
  bool input_shutdown_ = false;
  bool hangup_parked_ = false;  // peer hung up while we were not reading
  bool connecting_ = false;
  EpollDriver* driver_ = nullptr;
  AdaptiveReadSizer sizer_;
};
}  // namespace detail

class EpollSocketChannel final : private EpollHandle, private detail::EpollSocketState, public Channel {
 public:
  // fd < 0: an unconnected client channel (connect() creates the socket).
  EpollSocketChannel(EventLoop& loop, const ChannelConfig& config, int fd, SocketAddress remote);
  ~EpollSocketChannel() override;

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
  void on_epoll_events(std::uint32_t events) override;
  void read_batch();
  void write_out();
  bool send_file_front();
  void finish_connect();
  void on_input_shutdown();
  void update_interest();
  void attach_to_epoll(std::uint32_t events);

  SocketAddress remote_;
  Promise<void> connect_promise_;
  TimerId connect_timer_ = 0;
};

}  // namespace weft
