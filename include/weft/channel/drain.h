#pragma once
/// @file
/// Draining a server: stop accepting, let every connection end gracefully, close what is left at a
/// deadline (docs/operations.md).
///
///   weft::DrainReport report = weft::drain_server(server, std::chrono::seconds(10)).get();
///   std::fprintf(stderr, "%zu open, %zu drained, %zu forced\n", report.open, report.drained, report.forced);

#include <cstddef>

#include "weft/channel/channel.h"
#include "weft/core/clock.h"
#include "weft/core/future.h"

namespace weft {

/// What a drain found and did (drain_server). A plain value; not thread-safe to share while written.
struct DrainReport {
  /// Connections of the server open when the drain reached their loops.
  std::size_t open = 0;
  /// Of those, the ones that ended on their own (or as their protocol ends them) before the deadline.
  std::size_t drained = 0;
  /// Of those, the ones still open at the deadline: closed then, at once (queued writes dropped).
  std::size_t forced = 0;
};

/// Thread-safe. Drains `server`, a channel that ServerBootstrap::bind() returned (either accept
/// mode), without stopping its loops:
///
/// 1. closes its listeners (with AcceptMode::reuseport, every loop's): no connection is accepted
///    from here on, and a connect to the address is refused once no other socket listens there;
/// 2. on each loop of the child group, asks every connection the server accepted to end gracefully
///    (Channel::request_shutdown: ChannelShutdownRequestedEvent, which the HTTP/1.1 codec answers by
///    closing an idle keep-alive connection and answering the requests it has handed over, the last
///    with `Connection: close`; the HTTP/2 codec with its two GOAWAYs);
/// 3. completes once every one of them has closed; `deadline` after the call, it closes those still
///    open (counted in DrainReport::forced).
///
/// A connection accepted before the listeners closed that reaches its loop after the drain did is
/// closed unserved (not counted). The future completes with the report, on the thread of the loop
/// whose last connection closed: do not wait for it on a loop of the server's groups. It fails with
/// ChannelClosedError when `server` is closed already (call drain_server instead of close()), with
/// std::invalid_argument when it is not a channel ServerBootstrap::bind() returned. A second call
/// made while the first is still closing the listeners joins the first. The server's connections
/// are tracked by the loop that serves each of them, when it is set up and when it closes: nothing
/// is shared between loops and nothing is done per request. The loops keep running; shut them down
/// afterwards as usual.
Future<DrainReport> drain_server(const ChannelPtr& server, Duration deadline);

}  // namespace weft
