#pragma once
/// @file
/// What servers report about their connections, into Registry::global(), by transport (`epoll`,
/// `io_uring`, `blocking`):
///   weft_server_connections_opened_total{transport}  counter: accepted and set up on their loop
///   weft_server_connections_closed_total{transport}  counter
///   weft_server_connections_active{transport}        gauge: opened - closed, when scraped
/// Each count is one write to the loop thread's own cell, per connection (not per request).

#include <string_view>

#include "weft/metrics/registry.h"

namespace weft::metrics {

/// The counters of one transport's server connections.
struct ConnectionCounters {
  Counter opened;  ///< a connection set up on its loop
  Counter closed;  ///< a connection closed
};

/// The counters for `transport`, made on first use (with the active gauge). Thread-safe; takes a
/// lock: call it when a server is set up, not per connection.
ConnectionCounters connection_counters(std::string_view transport);

}  // namespace weft::metrics
