#pragma once
// A listening TCP socket on the io_uring transport: one multishot accept armed while reading. Emits
// AcceptedSocket messages into its pipeline.

#include <vector>

#include "../socket/descriptor_reserve.h"
#include "io_uring_driver.h"
#include "weft/channel/channel.h"
#include "weft/channel/transport.h"

namespace weft {

class IoUringServerChannel final : public Channel, private IoUringBatchEnd {
 public:
  IoUringServerChannel(EventLoop& loop, const ChannelConfig& config);
  ~IoUringServerChannel() override;

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
  void on_accept(int result, unsigned flags);
  void request_batch_end();
  void on_batch_end() override;
  bool accepting() const noexcept { return want_read_ && !paused_ && is_open() && fd_ >= 0; }
  void arm_accept();
  void deliver(AcceptedSocket socket);
  void deliver_parked();
  void pause_accepting();

  int fd_ = -1;
  // Closed once no operation is in flight (an accept prepared but not yet submitted names the
  // number, which must not go to another socket before then; see IoUringSocketChannel).
  int closing_fd_ = -1;
  ChannelPtr op_finished() noexcept;
  DescriptorReserve reserve_;
  IoUringDriver* driver_ = nullptr;
  InFlightGuard in_flight_;
  MemberOp<IoUringServerChannel, &IoUringServerChannel::on_accept> accept_op_{*this};
  bool want_read_ = false;
  bool accept_armed_ = false;
  bool accept_cancelled_ = false;
  bool paused_ = false;
  bool out_of_descriptors_ = false;  // an accept failed for want of a descriptor; shed when it ends
  bool batch_pending_ = false;
  std::vector<AcceptedSocket> parked_;  // accepted while not reading (after a stop, before its cancel landed)
};

}  // namespace weft
