#pragma once
// A listening TCP socket on the epoll transport. Emits AcceptedSocket messages into its pipeline.

#include <cstdint>

#include "../socket/descriptor_reserve.h"
#include "epoll_driver.h"
#include "weft/channel/channel.h"
#include "weft/channel/transport.h"

namespace weft {

class EpollServerChannel final : public Channel, private EpollHandle {
 public:
  EpollServerChannel(EventLoop& loop, const ChannelConfig& config);
  ~EpollServerChannel() override;

 protected:
  void do_register() override;
  void do_begin_read() override;
  void do_stop_read() override;
  void do_flush() override {}
  void do_close() override;
  void do_bind(const SocketAddress& local, Promise<void> promise) override;
  void do_write_message(MessageRef message) override;
  const std::type_info* inbound_message_type() const noexcept override { return &typeid(AcceptedSocket); }
  const std::type_info* outbound_message_type() const noexcept override { return nullptr; }

 private:
  void on_epoll_events(std::uint32_t events) override;
  void accept_all();
  void pause_accepting();
  void update_interest();

  int fd_ = -1;
  DescriptorReserve reserve_;
  EpollDriver* driver_ = nullptr;
  bool want_read_ = false;
  bool paused_ = false;
  std::uint32_t interest_ = 0;
};

}  // namespace weft
