#include "weft/metrics/connection_metrics.h"

namespace weft::metrics {

ConnectionCounters connection_counters(std::string_view transport, std::span<const std::string_view> close_reasons) {
  Registry& registry = Registry::global();
  Family& opened = registry.counter("weft_server_connections_opened",
                                    "Connections servers accepted and set up, by transport.", {"transport"});
  Family& closed = registry.counter("weft_server_connections_closed",
                                    "Server connections closed, by transport and reason.", {"transport", "reason"});
  ConnectionCounters counters{opened.counter({transport}), {}};
  for (std::string_view reason : close_reasons) counters.closed.push_back(closed.counter({transport, reason}));
  registry.gauge("weft_server_connections_active", "Server connections open now, by transport.", {"transport"})
      .set_function({transport}, [counters] {
        // Closed first: a connection counted open and closed between the two reads never shows negative.
        std::uint64_t closed_now = 0;
        for (const Counter& c : counters.closed) closed_now += c.value();
        return static_cast<double>(counters.opened.value() - closed_now);
      });
  return counters;
}

}  // namespace weft::metrics
