#include "weft/transport/blocking.h"

#include <atomic>

#include <fmt/format.h>

#include "blocking_driver.h"
#include "blocking_server_channel.h"
#include "blocking_socket_channel.h"
#include "weft/core/error.h"

namespace weft {
namespace {

BlockingDriver& blocking_driver_of(EventLoop& loop) {
  auto* driver = dynamic_cast<BlockingDriver*>(&loop.driver());
  if (driver == nullptr) {
    throw Error(fmt::format("a blocking channel cannot run on loop '{}': its group was not made by weft::blocking()",
                            loop.name()));
  }
  return *driver;
}

// The loop's driver, taken for a new channel. Throws when another channel has the loop.
BlockingDriver& own_driver_of(EventLoop& loop) {
  BlockingDriver& driver = blocking_driver_of(loop);
  if (!driver.try_own()) {
    throw ChannelLimitError(
        fmt::format("loop '{}' already serves a channel; a blocking loop serves one at a time", loop.name()));
  }
  return driver;
}

template <class C, class... Args>
ChannelPtr make_owning(EventLoop& loop, Args&&... args) {
  BlockingDriver& driver = own_driver_of(loop);
  try {
    return std::make_shared<C>(loop, driver, std::forward<Args>(args)...);
  } catch (...) {
    driver.release();
    throw;
  }
}

class BlockingTransport final : public Transport {
 public:
  std::unique_ptr<IoDriver> create_driver() override { return std::make_unique<BlockingDriver>(); }
  std::string_view name() const noexcept override { return "blocking"; }

  bool loops_serve_many_channels() const noexcept override { return false; }

  EventLoop& choose_loop(EventLoopGroup& group) override {
    const std::size_t n = group.size();
    const std::size_t start = next_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      EventLoop& loop = group.at((start + i) % n);
      if (loop.is_shutting_down()) continue;
      if (blocking_driver_of(loop).try_reserve()) return loop;
    }
    throw ChannelLimitError(fmt::format(
        "blocking transport: all {} threads of the event loop group serve channels; it serves at most {} at once", n,
        n));
  }

  ChannelPtr new_socket_channel(EventLoop& loop, const ChannelConfig& config) override {
    return make_owning<BlockingSocketChannel>(loop, config, -1, SocketAddress());
  }

  ChannelPtr new_accepted_channel(EventLoop& loop, const ChannelConfig& config, AcceptedSocket socket) override {
    ChannelPtr channel = make_owning<BlockingSocketChannel>(loop, config, socket.fd(), socket.remote_address());
    socket.release();  // the channel owns the descriptor now
    return channel;
  }

  ChannelPtr new_server_channel(EventLoop& loop, const ChannelConfig& config) override {
    return make_owning<BlockingServerChannel>(loop, config);
  }

 private:
  std::atomic<std::size_t> next_{0};
};

}  // namespace

Transport& blocking() {
  static BlockingTransport transport;
  return transport;
}

}  // namespace weft
