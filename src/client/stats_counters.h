#pragma once
// The live counters behind ClientStats: relaxed atomics, bumped on the pools' loops.

#include <atomic>
#include <cstdint>

#include "weft/client/client_stats.h"

namespace weft::client::detail {

struct StatsCounters {
  std::atomic<std::uint64_t> requests{0}, connections_opened{0}, connect_failures{0}, connections_reused{0}, retries{0},
      queue_full{0}, peak_connections{0}, open_connections{0};

  static void bump(std::atomic<std::uint64_t>& counter, std::int64_t by = 1) noexcept {
    counter.fetch_add(static_cast<std::uint64_t>(by), std::memory_order_relaxed);
  }
  void peak(std::uint64_t now) noexcept {
    std::uint64_t seen = peak_connections.load(std::memory_order_relaxed);
    while (now > seen && !peak_connections.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  ClientStats snapshot() const noexcept {
    auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    return {get(requests), get(connections_opened), get(connect_failures), get(connections_reused),
            get(retries),  get(queue_full),         get(peak_connections), get(open_connections)};
  }
};

}  // namespace weft::client::detail
