#pragma once
// Opening a TCP connection to a URL's host and port: the one place that turns a host into an
// address. Until the resolver (weft/dns/) is in, numeric hosts and "localhost" only.

#include "weft/channel/bootstrap.h"
#include "weft/client/url.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"

namespace weft::client::detail {

// Thread-safe. Connects to `origin`'s host and port on a loop of `group`, `init` setting up the
// channel's pipeline. Fails with HostResolutionError for a name it cannot resolve, and as
// Bootstrap::connect does (IoError, ConnectTimeoutError after `connect_timeout`).
Future<ChannelPtr> connect_origin(EventLoopGroup& group, const Url& origin, Duration connect_timeout,
                                  ChannelInitializer init);

}  // namespace weft::client::detail
