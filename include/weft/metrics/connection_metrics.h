#pragma once
/// @file
/// What servers report about their connections, into Registry::global(), by transport (`epoll`,
/// `io_uring`, `blocking`):
///   weft_server_connections_opened_total{transport}  counter: accepted and set up on their loop
///   weft_server_connections_closed_total{transport, reason}  counter: by the first cause noted
///                                                    (weft::CloseReason: local, peer_closed, reset, ...)
///   weft_server_connections_active{transport}        gauge: opened - closed, when scraped
/// Each count is one write to the loop thread's own cell, per connection (not per request).

#include <span>
#include <string_view>
#include <vector>

#include "weft/metrics/registry.h"

namespace weft::metrics {

/// The counters of one transport's server connections.
struct ConnectionCounters {
  Counter opened;               ///< a connection set up on its loop
  std::vector<Counter> closed;  ///< a connection closed, by reason (indexed as the names given)
};

/// The counters for `transport`, one closed counter per name in `close_reasons`, made on first use
/// (with the active gauge). Thread-safe; takes a lock: call it when a server is set up, not per connection.
ConnectionCounters connection_counters(std::string_view transport, std::span<const std::string_view> close_reasons);

}  // namespace weft::metrics
