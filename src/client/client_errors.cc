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

std::string_view body_kind_name(RequestBodyError::Kind kind) {
  switch (kind) {
    case RequestBodyError::Kind::too_long: return "more body bytes written than the declared Content-Length";
    case RequestBodyError::Kind::too_short: return "the body finished short of the declared Content-Length";
    case RequestBodyError::Kind::abandoned: return "the request body was abandoned before its end";
    case RequestBodyError::Kind::answered: return "the server answered before the request body's end";
  }
  return "request body error";
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

RequestBodyError::RequestBodyError(Kind kind, std::string_view url)
    : Error(fmt::format("{} ({})", body_kind_name(kind), url)), kind_(kind) {}

HostResolutionError::HostResolutionError(const DnsError& cause)
    : Error(cause.what()), host_(cause.host()), code_(cause.code()), cause_(std::make_exception_ptr(cause)) {}

}  // namespace weft::client
