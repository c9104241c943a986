#include "weft/client/client_errors.h"

#include <fmt/format.h>

namespace weft::client {
namespace {

std::string_view kind_name(TimeoutError::Kind kind) {
  switch (kind) {
    case TimeoutError::Kind::connect: return "connect timeout";
    case TimeoutError::Kind::request: return "request timeout";
    case TimeoutError::Kind::idle: return "idle timeout (no response bytes)";
  }
  return "timeout";
}

}  // namespace

TimeoutError::TimeoutError(Kind kind, std::string_view url)
    : Error(fmt::format("{} fired for {}", kind_name(kind), url)), kind_(kind) {}

PoolQueueFullError::PoolQueueFullError(std::string_view origin, std::size_t limit)
    : Error(fmt::format("the connection pool for {} has {} requests waiting already (max_pending_requests)", origin,
                        limit)) {}

ResponseTooLargeError::ResponseTooLargeError(std::string_view url, std::size_t limit)
    : Error(fmt::format("the response body of {} is larger than max_response_body ({} bytes)", url, limit)) {}

TooManyRedirectsError::TooManyRedirectsError(std::string_view url, std::size_t limit)
    : Error(fmt::format("more than {} redirects, the last to {}", limit, url)) {}

HostResolutionError::HostResolutionError(const DnsError& cause)
    : Error(cause.what()), host_(cause.host()), code_(cause.code()), cause_(std::make_exception_ptr(cause)) {}

}  // namespace weft::client
