#pragma once
/// @file
/// Request: a request as a route and the middleware see it (Router's routes that return their
/// response, and coroutine routes).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http1/router_params.h"

namespace weft::http {

/// A request as a route and the middleware see it: the decoded HttpRequest, the parameters its
/// route's pattern captured, the channel it came on, and values the middleware attach (a request
/// id, say). Lives as long as the route runs: for a coroutine route, until its task ends (the
/// router keeps the HttpRequest and the channel alive that long). Not thread-safe: the route's loop.
class Request {
 public:
  /// What the router makes for each routed request; `pattern` is empty when no route matched.
  Request(Channel& channel, HttpRequest& message, const RouteParams& params, std::string_view pattern) noexcept
      : channel_(&channel), message_(&message), params_(&params), pattern_(pattern) {}
  /// Not copyable: it points into the request the router keeps.
  Request(const Request&) = delete;
  /// Not copyable.
  Request& operator=(const Request&) = delete;

  /// The decoded request (head and body).
  HttpRequest& message() noexcept { return *message_; }
  /// The decoded request (head and body).
  const HttpRequest& message() const noexcept { return *message_; }
  /// The method, as sent.
  std::string_view method() const noexcept { return message_->method(); }
  /// The target's path, as sent (still percent-encoded).
  std::string_view path() const noexcept { return message_->path(); }
  /// The target's query, after '?'.
  std::string_view query() const noexcept { return message_->query(); }
  /// The first header named `name` (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept { return message_->header(name); }
  /// The body's bytes.
  std::string_view body() const noexcept { return message_->body_view(); }
  /// The parameters the route's pattern captured (empty for an exact path).
  const RouteParams& params() const noexcept { return *params_; }
  /// The parameter `name`, as sent (percent-encoded), if the pattern has one.
  std::optional<std::string_view> param(std::string_view name) const noexcept { return params_->get(name); }
  /// The matched route's path as it was added ("/users/{id}"); empty for a request no route
  /// answers (404, 405), which still passes through the middleware.
  std::string_view pattern() const noexcept { return pattern_; }
  /// The channel the request came on (an HTTP/2 connection's channel for a stream's request).
  Channel& channel() const noexcept { return *channel_; }
  /// When the router took the request: set when the router has middleware (AccessLog logs it),
  /// else the epoch.
  std::chrono::system_clock::time_point received() const noexcept { return received_; }
  /// Sets when the request was taken (the router does).
  void set_received(std::chrono::system_clock::time_point at) noexcept { received_ = at; }

  /// Attaches `value` under `key`, replacing an earlier one (middleware pass values to the route
  /// and to each other this way: RequestId under "request-id").
  void set(std::string_view key, std::string value);
  /// The value attached under `key`, if any; valid until it is replaced or the request ends.
  std::optional<std::string_view> get(std::string_view key) const noexcept;

 private:
  Channel* channel_;
  HttpRequest* message_;
  const RouteParams* params_;
  std::string_view pattern_;
  std::chrono::system_clock::time_point received_{};
  std::vector<std::pair<std::string, std::string>> values_;  // few: searched in order
};

}  // namespace weft::http
