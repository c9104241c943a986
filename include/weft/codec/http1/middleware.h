#pragma once
/// @file
/// Middleware: code that runs around a Router's routes, in the order it was added.
///
///   router->use(std::make_shared<weft::http::RequestId>());   // outermost
///   router->use(std::make_shared<weft::http::Compression>());
///
/// For each request: before() of every middleware in order; the first that returns a response
/// answers the request instead of the rest (short-circuit: later middleware and the route do not
/// run); then after() in reverse order, from the one before the short-circuit (or the last, when
/// the route ran) to the first. So the first added sees the request first and the response last.
/// Requests no route answers (404, 405, the router's 500) pass through the chain too.
///
/// The chain runs on routes that return their response (HttpResponse(Request&), or a coroutine
/// Task<HttpResponse>(Request&)); a route that writes its response itself (Context&, HttpRequest&)
/// is not wrapped.

#include <optional>

#include "weft/codec/http1/http_message.h"
#include "weft/codec/http1/route_request.h"

namespace weft::http {

/// One link of a Router's chain (see the file's description). A middleware object is shared by
/// every channel the router serves: before() and after() run on those channels' loops, concurrently,
/// so they must be thread-safe (keep per-request state in the Request).
class Middleware {
 public:
  /// Destroyed with the last router that uses it.
  virtual ~Middleware() = default;
  /// Before the route: nullopt to go on, or the response that answers the request at once.
  /// Throwing answers 500 (the router's error page).
  virtual std::optional<HttpResponse> before(Request& request) {
    (void)request;
    return std::nullopt;
  }
  /// After the route (or the short-circuit), on its response; may change it.
  virtual void after(Request& request, HttpResponse& response) {
    (void)request;
    (void)response;
  }
};

}  // namespace weft::http
