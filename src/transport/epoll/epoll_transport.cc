#include "weft/transport/epoll.h"

#include <unistd.h>

#include "epoll_driver.h"
#include "epoll_server_channel.h"
#include "epoll_socket_channel.h"

namespace weft {
namespace {

class EpollTransport final : public Transport {
 public:
  std::unique_ptr<IoDriver> create_driver() override { return std::make_unique<EpollDriver>(); }
  std::string_view name() const noexcept override { return "epoll"; }
  ChannelPtr new_socket_channel(EventLoop& loop, const ChannelConfig& config) override {
    return std::make_shared<EpollSocketChannel>(loop, config, -1, SocketAddress());
  }
  ChannelPtr new_accepted_channel(EventLoop& loop, const ChannelConfig& config, AcceptedSocket socket) override {
    SocketAddress remote = socket.remote_address();
    auto channel = std::make_shared<EpollSocketChannel>(loop, config, socket.fd(), remote);
    socket.release();  // the channel owns the descriptor now
    return channel;
  }
  ChannelPtr new_server_channel(EventLoop& loop, const ChannelConfig& config) override {
    return std::make_shared<EpollServerChannel>(loop, config);
  }
};

}  // namespace

Transport& epoll() {
  static EpollTransport transport;
  return transport;
}

}  // namespace weft
