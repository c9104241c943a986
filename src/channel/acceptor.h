#pragma once
// The server side of the bootstraps: what every accepted connection of one server is set up with,
// and the listening channel's handler that turns accepted sockets into registered channels.

#include <cstdint>
#include <memory>

#include "server_connections.h"
#include "weft/channel/bootstrap.h"

namespace weft::detail {

// What every accepted connection of one server is set up with; shared by the acceptors' tasks.
struct ChildSetup {
  Transport& transport;
  EventLoopGroup& group;
  ChannelConfig config;
  ChannelInitializer init;
  // reuseport: a connection stays on the loop of the listener that accepted it; least_connections:
  // it goes to the loop of `group` with the fewest; acceptor: the transport chooses a loop of
  // `group` (round-robin, or a free one on blocking).
  AcceptMode mode = AcceptMode::acceptor;
  // The server's connections, per loop of `group` (for drain_server).
  std::shared_ptr<ServerConnections> connections = std::make_shared<ServerConnections>(group);
};

// The listening channel's handler: turns accepted sockets into registered channels on the child
// loops. Loop thread only (one per listener).
class Acceptor final : public InboundHandler<AcceptedSocket> {
 public:
  explicit Acceptor(std::shared_ptr<const ChildSetup> setup) : setup_(std::move(setup)) {}

  void channel_read(Context& ctx, AcceptedSocket&& socket) override;
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  // The connections this server has accepted (shared by all its listeners).
  const std::shared_ptr<ServerConnections>& connections() const noexcept { return setup_->connections; }

 private:
  // The loop the next connection runs on, and, under least_connections, the count it was added to.
  EventLoop& choose_loop(Context& ctx, std::shared_ptr<LoopConnections>& counted_in);
  void refuse(Context& ctx, AcceptedSocket socket, const ChannelLimitError& error);

  std::shared_ptr<const ChildSetup> setup_;
  TimePoint last_refusal_log_{};
  std::uint64_t refused_since_log_ = 0;
};

}  // namespace weft::detail
