#include "connect_origin.h"

#include <stdexcept>

#include "weft/channel/channel_config.h"
#include "weft/client/client_errors.h"

namespace weft::client::detail {

Future<ChannelPtr> connect_origin(EventLoopGroup& group, const Url& origin, Duration connect_timeout,
                                  ChannelInitializer init) {
  SocketAddress address;
  try {
    address = SocketAddress::from(origin.host() == "localhost" ? "127.0.0.1" : origin.host(), origin.port());
  } catch (const std::invalid_argument&) {
    return make_failed_future<ChannelPtr>(std::make_exception_ptr(
        HostResolutionError(origin.host(), "only numeric addresses and localhost are resolved (no DNS yet)")));
  }
  Bootstrap bootstrap;
  bootstrap.group(group).option(option::tcp_nodelay, true).handler(std::move(init));
  if (connect_timeout > Duration::zero()) bootstrap.option(option::connect_timeout, connect_timeout);
  return bootstrap.connect(address);
}

}  // namespace weft::client::detail
