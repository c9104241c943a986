#pragma once
/// @file
/// Happy Eyeballs (RFC 8305): connecting to a host's addresses of both families, the preferred one
/// first and the next attempt a "connection attempt delay" later, the first to connect winning.
///
///   auto addresses = co_await resolver.resolve("example.com", 443);
///   weft::ChannelPtr channel = co_await weft::connect_happy_eyeballs(loop, bootstrap, addresses, init);

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "weft/channel/bootstrap.h"
#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/dns/resolver.h"

namespace weft {

/// connect_happy_eyeballs()'s settings.
struct HappyEyeballsOptions {
  /// How long an attempt runs alone before the next one starts (RFC 8305 recommends 250 ms).
  Duration attempt_delay = std::chrono::milliseconds(250);
  /// Called on the attempt's loop when an attempt's channel is made, before it connects (for logs,
  /// metrics and tests). Must be safe to call from several loops at once.
  std::function<void(const SocketAddress&, const ChannelPtr&)> on_attempt;
};

/// Thread-safe. Connects to one of `addresses` (as Resolver::resolve gives them: the preferred family
/// first) with `bootstrap`'s group and options, setting each attempt's pipeline up with `init`
/// (`bootstrap`'s own handler is not used). The addresses are tried interleaving the families,
/// starting with the family of the first one; an attempt starts when the previous one failed or
/// `attempt_delay` after it started, whichever comes first. The first attempt to connect wins; every
/// other attempt, connected or still connecting, is closed. The future holds the winner, or fails
/// with the last attempt's error once all failed (std::invalid_argument for an empty list).
/// `loop` runs the delay timers and the future's listeners; it must outlive the attempts. On the
/// blocking transport, where a connect blocks its loop's thread, give a loop that runs no attempt
/// (the caller's own, or one of another group).
Future<ChannelPtr> connect_happy_eyeballs(EventLoop& loop, const Bootstrap& bootstrap,
                                          std::vector<SocketAddress> addresses, ChannelInitializer init,
                                          HappyEyeballsOptions options = {});

/// Thread-safe. Resolves `host` with `resolver`, then connect_happy_eyeballs() to its addresses with
/// `port`, the delay timers on the resolver's loop (on the blocking transport, a loop that makes
/// no attempt: see above). Fails with DnsError when the name does not resolve, else as
/// connect_happy_eyeballs(). The future belongs to the resolver's loop.
Future<ChannelPtr> connect_to_host(Resolver& resolver, const Bootstrap& bootstrap, std::string_view host,
                                   std::uint16_t port, ChannelInitializer init, HappyEyeballsOptions options = {});

/// `addresses` in RFC 8305's order (section 4): the family of the first one, then the other,
/// alternating, each family keeping its own order. Thread-safe.
std::vector<SocketAddress> interleave_families(std::vector<SocketAddress> addresses);

}  // namespace weft
