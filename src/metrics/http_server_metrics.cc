#include "weft/metrics/http_server_metrics.h"

namespace weft::metrics::detail {

namespace {

constexpr std::array<std::string_view, 2> kProtocols = {"http1", "http2"};
constexpr std::array<std::string_view, kMethodClasses> kMethods = {"GET", "HEAD", "POST", "PUT", "DELETE", "OTHER"};
constexpr std::array<std::string_view, kStatusClasses> kStatuses = {"1xx", "2xx", "3xx", "4xx", "5xx"};

}  // namespace

Histogram make_http_server_handle(HttpProtocol protocol, MethodClass method, std::size_t status_class) {
  Registry& registry = Registry::global();
  const std::string_view p = kProtocols[static_cast<std::size_t>(protocol)];
  const std::string_view m = kMethods[static_cast<std::size_t>(method)];
  const std::string_view s = kStatuses[status_class];
  Histogram h = registry
                    .histogram("weft_http_server_request_duration_seconds",
                               "Time from the read that completed an HTTP request to its answer.",
                               {"protocol", "method", "status"},
                               {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
                    .histogram({p, m, s});
  // The same series made on another thread first: setting the function again changes nothing.
  registry
      .counter("weft_http_server_requests", "HTTP requests answered, by protocol, method and status class.",
               {"protocol", "method", "status"})
      .set_function({p, m, s}, [h] { return static_cast<double>(h.count()); });
  return h;
}

}  // namespace weft::metrics::detail
