#pragma once
// A listening TCP socket on the blocking transport: its own loop thread accepts, one connection at a
// time, and emits AcceptedSocket messages into its pipeline.

#include "blocking_driver.h"
#include "weft/channel/channel.h"
#include "weft/channel/transport.h"

namespace weft {

class BlockingServerChannel final : public Channel, private BlockingHandle {
 public:
  // `driver` is the loop's, already owned for this channel (released on close or destruction).
  BlockingServerChannel(EventLoop& loop, BlockingDriver& driver, const ChannelConfig& config);
  ~BlockingServerChannel() override;

 protected:
  void do_register() override {}
  void do_begin_read() override;
  void do_stop_read() override;
  void do_flush() override {}
  void do_close() override;
  void do_bind(const SocketAddress& local, Promise<void> promise) override;
  void do_write_message(MessageRef message) override;
  const std::type_info* inbound_message_type() const noexcept override { return &typeid(AcceptedSocket); }
  const std::type_info* outbound_message_type() const noexcept override { return nullptr; }

 private:
  void on_ready(short revents) override;
  void pause_accepting();
  void update_watch() noexcept;

  BlockingDriver& driver_;
  int fd_ = -1;
  bool owns_loop_ = true;
  bool want_read_ = false;
  bool paused_ = false;
};

}  // namespace weft
