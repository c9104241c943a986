#pragma once
/// @file
/// Router: dispatches whole requests to route functions by path and method. Not a web framework:
/// exact paths and simple patterns, no middleware.
///
///   router->get("/plaintext", [](Context& ctx, HttpRequest&) { ... });             // exact path
///   router->get("/users/{id}", [](Context& ctx, HttpRequest&, const RouteParams& p) {
///     std::string_view id = *p.get("id");                                           // pattern
///   });
///   router->fallback([](Context& ctx, HttpRequest&) { ... });                       // instead of 404
///
/// Order: exact paths first (the fast path: compared a word at a time, no allocation), then patterns
/// in the order they were added; the first that matches path and method runs. A path some route
/// matches for other methods only gets 405 with Allow; any other request goes to the fallback, or
/// gets 404. A GET route also answers HEAD.
///
/// Patterns: segments separated by '/', each either literal or a parameter "{name}" that matches
/// one non-empty segment. Matching is strict and on the path's bytes as sent: no decoding ("%2F"
/// does not split a segment), no slash merging, no trailing-slash redirect ("/users/1/" does not
/// match "/users/{id}"; add a route for each spelling you accept).
///
/// One router may serve many channels at once: routes run on each channel's loop, concurrently
/// across loops, so route functions must be thread-safe. The router flushes once per read batch.
/// A coroutine server uses the same table through match() (see RouteMatch).

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_message.h"

namespace weft::http {

/// The parameters a pattern captured: "/users/{id}" matching "/users/42" gives id -> "42". Names
/// view the router's pattern, values the request's path: valid while both live. Values are the bytes
/// as sent, still percent-encoded: decode them with percent_decode (weft/codec/http1/query.h).
/// Fixed-size, no allocation. Thread-safe to read.
class RouteParams {
 public:
  static constexpr std::size_t kMax = 8;  ///< parameters one pattern may have
  /// One captured parameter.
  struct Param {
    /// The parameter's name in the pattern.
    std::string_view name;
    /// The path segment it matched, still percent-encoded.
    std::string_view value;
  };

  /// The value of the parameter `name`, if the pattern has one.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// The number of parameters captured.
  std::size_t size() const noexcept { return size_; }
  /// size() == 0.
  bool empty() const noexcept { return size_ == 0; }
  /// The i-th parameter, in pattern order; requires i < size().
  const Param& operator[](std::size_t i) const noexcept { return params_[i]; }
  /// The first parameter, for range-for.
  const Param* begin() const noexcept { return params_.data(); }
  /// Past the last parameter.
  const Param* end() const noexcept { return params_.data() + size_; }

 private:
  friend class Router;
  std::array<Param, kMax> params_{};
  std::size_t size_ = 0;
};

class Router;

/// What match() found. Points into the router: valid while the router lives and gains no routes,
/// and (params) while the path it matched lives. Its accessors are thread-safe; run() is not.
class RouteMatch {
 public:
  /// What the router found for the request.
  enum class Outcome : std::uint8_t {
    route,               ///< a route matches path and method
    method_not_allowed,  ///< routes match the path, none for this method: run() answers 405
    not_found,           ///< no route matches the path: run() calls the fallback, or answers 404
  };
  /// What was found.
  Outcome outcome() const noexcept { return outcome_; }
  /// Whether a route matches path and method.
  explicit operator bool() const noexcept { return outcome_ == Outcome::route; }
  /// The matched route's path as it was added ("/users/{id}"); empty unless outcome() is route.
  /// A coroutine can dispatch on it itself.
  std::string_view pattern() const noexcept { return pattern_; }
  /// The parameters the matched pattern captured (empty for an exact path or no match).
  const RouteParams& params() const noexcept { return params_; }
  /// Does what the router does with the request: runs the route's function, or answers 405, or
  /// calls the fallback / answers 404. Loop thread of ctx's channel. Does not flush. A coroutine
  /// passes the context of its Connection's handler: *c.channel().pipeline().context("connection").
  void run(Context& ctx, HttpRequest& request) const;

 private:
  friend class Router;
  const Router* router_ = nullptr;
  const std::function<void(Context&, HttpRequest&)>* exact_fn_ = nullptr;
  const std::function<void(Context&, HttpRequest&, const RouteParams&)>* pattern_fn_ = nullptr;
  std::string_view pattern_;
  RouteParams params_;
  Outcome outcome_ = Outcome::not_found;
};

/// Dispatches whole requests to route functions by path and method (see the file's description).
/// Sharable; set up before it serves channels.
class Router final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  /// Writes the response with ctx.write(HttpResponse(...)); runs on the channel's loop.
  using RouteFn = std::function<void(Context& ctx, HttpRequest& request)>;
  /// The same, with the parameters a pattern captured (empty for an exact path).
  using ParamRouteFn = std::function<void(Context& ctx, HttpRequest& request, const RouteParams& params)>;

  /// Not thread-safe: set up routes before the router serves channels. A path with '{' or '}' is a pattern;
  /// a malformed one (not starting with '/', a brace that is not a whole "{name}" segment, an empty
  /// or repeated name, more than RouteParams::kMax parameters) throws std::invalid_argument.
  Router& route(std::string method, std::string path, RouteFn fn);
  /// As route(std::string, std::string, RouteFn), for a function that takes the captured parameters.
  Router& route(std::string method, std::string path, ParamRouteFn fn);
  /// route("GET", path, fn) (also answers HEAD). Not thread-safe (setup).
  Router& get(std::string path, RouteFn fn) { return route("GET", std::move(path), std::move(fn)); }
  /// route("GET", path, fn) (also answers HEAD). Not thread-safe (setup).
  Router& get(std::string path, ParamRouteFn fn) { return route("GET", std::move(path), std::move(fn)); }
  /// route("POST", path, fn). Not thread-safe (setup).
  Router& post(std::string path, RouteFn fn) { return route("POST", std::move(path), std::move(fn)); }
  /// route("POST", path, fn). Not thread-safe (setup).
  Router& post(std::string path, ParamRouteFn fn) { return route("POST", std::move(path), std::move(fn)); }
  /// Not thread-safe (setup). Answers the requests no route's path matches, instead of the 404.
  Router& fallback(RouteFn fn);

  /// Thread-safe once set up (reads only). The route for `method` and `path`, as channel_read would
  /// choose it. Allocates nothing.
  RouteMatch match(std::string_view method, std::string_view path) const noexcept;

  /// Runs the route for `request` (see match() and RouteMatch::run()).
  void channel_read(Context& ctx, HttpRequest&& request) override;
  void channel_read_complete(Context& ctx) override;
  /// Shared by every channel of a server: it keeps no per-channel state.
  bool is_sharable() const noexcept override { return true; }

 private:
  friend class RouteMatch;
  struct Route {
    std::string method;
    std::string path;
    RouteFn fn;
  };
  // A segment of a pattern: offsets into its text (a short string moves its bytes with it).
  struct Segment {
    std::uint32_t begin;
    std::uint32_t size;
    bool is_param;  ///< "{name}": begin/size cover the name
  };
  struct PatternRoute {
    std::string method;
    std::string pattern;
    std::vector<Segment> segments;
    ParamRouteFn fn;
  };

  // The segments of a pattern; throws std::invalid_argument when it is malformed.
  static std::vector<Segment> parse_pattern(const std::string& pattern);
  static bool matches(const PatternRoute& route, std::string_view path, RouteParams& params) noexcept;
  const PatternRoute* find_pattern(std::string_view method, std::string_view path, RouteParams& params) const noexcept;
  bool has_route_for_path(std::string_view path) const noexcept;
  // Patterns, then 405 / fallback / 404: only after the exact paths missed.
  [[gnu::noinline]] void route_after_exact_miss(Context& ctx, HttpRequest& request) const;
  [[gnu::noinline, gnu::cold]] void reply_unrouted(Context& ctx, HttpRequest& request) const;

  std::vector<Route> routes_;
  std::vector<PatternRoute> patterns_;
  RouteFn fallback_;
};

}  // namespace weft::http
