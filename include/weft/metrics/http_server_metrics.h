#pragma once
/// @file
/// What the HTTP/1.1 and HTTP/2 server codecs report, per answered request, into Registry::global():
///   weft_http_server_requests_total{protocol, method, status}            counter
///   weft_http_server_request_duration_seconds{protocol, method, status}  histogram
/// `protocol` is `http1` or `http2`; `method` a class (GET, HEAD, POST, PUT, DELETE, OTHER: a
/// bounded set whatever clients send); `status` the status class, `1xx` .. `5xx`. The duration runs
/// from the read that completed the request to the flush of its answer (HTTP/2: to the answer
/// given to the codec).
///
/// The cost per request, HTTP/1.1: a flag and a count; the answers of one read batch (same read
/// time, method and status class) are observed together at the flush, with one clock read. HTTP/2:
/// a clock read and one histogram observation per answer. Observations go to the thread's own
/// cells; the counter is read from the histogram's count when scraped.

#include <array>
#include <cstdint>
#include <string_view>

#include "weft/core/clock.h"
#include "weft/metrics/instrumentation.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// The protocols an HTTP server answers in.
enum class HttpProtocol : std::uint8_t {
  http1,  ///< HTTP/1.1 (and 1.0)
  http2,  ///< HTTP/2, cleartext or TLS
};

/// Request methods, in the classes metrics count them by.
enum class MethodClass : std::uint8_t {
  get,      ///< GET
  head,     ///< HEAD
  post,     ///< POST
  put,      ///< PUT
  delete_,  ///< DELETE
  other,    ///< any other method
};

/// The class of `method` (case-sensitive, as methods are). Thread-safe.
constexpr MethodClass method_class(std::string_view method) noexcept {
  switch (method.size()) {  // by length first: one comparison for the common methods
    case 3: return method == "GET" ? MethodClass::get : method == "PUT" ? MethodClass::put : MethodClass::other;
    case 4: return method == "POST" ? MethodClass::post : method == "HEAD" ? MethodClass::head : MethodClass::other;
    case 6: return method == "DELETE" ? MethodClass::delete_ : MethodClass::other;
    default: return MethodClass::other;
  }
}

namespace detail {

inline constexpr std::size_t kMethodClasses = 6, kStatusClasses = 5;
// A thread's handles, made on the thread's first request of each kind (constant-initialised:
// nothing to construct per thread).
struct HttpServerHandles {
  std::array<std::array<std::array<Histogram, kStatusClasses>, kMethodClasses>, 2> duration{};
};
inline thread_local constinit HttpServerHandles t_http_server_handles{};
Histogram make_http_server_handle(HttpProtocol protocol, MethodClass method, std::size_t status_class);
}  // namespace detail

/// Records `n` requests answered with `status` after `duration` each. Thread-safe: writes the
/// calling thread's cells only.
inline void record_http_server_request(HttpProtocol protocol, MethodClass method, int status, Duration duration,
                                       std::uint64_t n = 1) noexcept {
  const int klass = status / 100 - 1;
  const std::size_t status_class = klass < 0 ? 0 : klass > 4 ? 4 : static_cast<std::size_t>(klass);
  Histogram& h = detail::t_http_server_handles
                     .duration[static_cast<std::size_t>(protocol)][static_cast<std::size_t>(method)][status_class];
  if (!h.valid()) [[unlikely]] {
    try {
      h = detail::make_http_server_handle(protocol, method, status_class);
    } catch (...) {
      return;  // no memory for the series: the request goes uncounted rather than failing
    }
  }
  h.observe(static_cast<double>(duration.count()) * 1e-9, n);
}

}  // namespace weft::metrics
