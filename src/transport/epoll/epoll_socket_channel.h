#pragma once
// A TCP connection on the epoll transport.

#include <cstdint>

#include "epoll_driver.h"
#include "weft/channel/channel.h"

namespace weft {

class EpollSocketChannel final : public Channel, private EpollHandle {
 public:
  // fd < 0: an unconnected client channel (connect() creates the socket).
  EpollSocketChannel(EventLoop& loop, const ChannelConfig& config, int fd, SocketAddress remote);
  ~EpollSocketChannel() override;

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
  void finish_connect();
  void on_input_shutdown();
  void update_interest();
  void attach_to_epoll(std::uint32_t events);

  int fd_;
  EpollDriver* driver_ = nullptr;
  AdaptiveReadSizer sizer_;
  std::uint32_t interest_ = 0;
  bool in_epoll_ = false;
  bool want_read_ = false;
  bool waiting_writable_ = false;
  bool writing_ = false;  // inside write_out()
  bool input_shutdown_ = false;
  bool hangup_parked_ = false;  // peer hung up while we were not reading
  bool connecting_ = false;
  // ---- cold
  SocketAddress remote_;
  Promise<void> connect_promise_;
  TimerId connect_timer_ = 0;
};

}  // namespace weft
