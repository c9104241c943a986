#pragma once
/// @file
/// What the HTTP/1.1 and HTTP/2 server codecs report, per answered request, into Registry::global():
///   weft_http_server_requests_total{protocol, method, status}            counter
///   weft_http_server_request_duration_seconds{protocol, method, status}  histogram
/// `protocol` is `http1` or `http2`; `method` a class (GET, HEAD, POST, PUT, DELETE, OTHER: a
/// bounded set whatever clients send); `status` the status class, `1xx` .. `5xx`. The duration runs
/// from the read that completed the request to the answer given to the codec.
///
/// The cost per request: a flag, a thread_local table of handles, a clock read and one histogram
/// observation into the thread's own cells. The counter is read from the histogram's count when
/// scraped: nothing more per request.

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
  if (method == "GET") return MethodClass::get;
  if (method == "HEAD") return MethodClass::head;
  if (method == "POST") return MethodClass::post;
  if (method == "PUT") return MethodClass::put;
  if (method == "DELETE") return MethodClass::delete_;
  return MethodClass::other;
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

/// Records one request answered with `status` after `duration`. Thread-safe: writes the calling
/// thread's cells only.
inline void record_http_server_request(HttpProtocol protocol, MethodClass method, int status,
                                       Duration duration) noexcept {
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
  h.observe(static_cast<double>(duration.count()) * 1e-9);
}

}  // namespace weft::metrics
