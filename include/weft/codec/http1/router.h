#pragma once
/// @file
/// Router: dispatches whole requests to routes by path and method, through an ordered chain of
/// middleware (middleware.h). Exact paths and simple patterns.
///
///   router->get("/plaintext", [](Request&) { return HttpResponse(200).body_view("hi"); });   // a callback
///   router->get("/users/{id}", [](Request& r) -> Task<HttpResponse> {                    // a coroutine
///     co_await weft::sleep(10ms);
///     co_return HttpResponse(200).body(std::string(*r.param("id")));
///   });
///   router->post("/upload", [](Request&, BodyReader& body) -> Task<HttpResponse> {      // a streamed body
///     while (auto chunk = co_await body.next()) consume(*chunk);
///     co_return HttpResponse(204);
///   });
///   router->use(std::make_shared<RequestId>());                                        // middleware
///   router->fallback([](Request& r) { ... });                                          // instead of 404
///
/// Routes: a callback `HttpResponse(Request&)`, a coroutine `Task<HttpResponse>(Request&)`, a
/// coroutine that reads its request's body as a stream `Task<HttpResponse>(Request&, BodyReader&)`
/// (body_reader.h: weft's HTTP/1.1 and HTTP/2 codecs find the router in their pipeline and ask it
/// which requests to hand over at their head), or the
/// low-level form that writes its answer itself, `void(Context&, HttpRequest&[, const RouteParams&])`
/// (not wrapped by the middleware). A coroutine route's request runs as a task of its own on the
/// channel's loop: the requests of one HTTP/2 connection run concurrently (as many as the codec's
/// stream limit lets in), those pipelined on an HTTP/1.1 connection too (up to Limits::max_pipelined),
/// and their answers still leave HTTP/1.1 in request order (a slow first request holds back the
/// second's answer, not its work). A route or middleware that throws gets a 500 (error_page()); the
/// connection goes on serving.
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
/// A coroutine route's lambda keeps its captures in the router (which its tasks keep alive).
/// A coroutine server (serve<HttpRequest>) uses the same table through match() (see RouteMatch);
/// it serves one request of a connection at a time, HTTP/2 streams included.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/body_reader.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http1/middleware.h"
#include "weft/codec/http1/route_request.h"
#include "weft/codec/http1/router_params.h"
#include "weft/core/task.h"

namespace weft::http {

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
  /// Does what the router does with the request: runs the route (through the middleware), or
  /// answers 405, or calls the fallback / answers 404. A coroutine route's task is started and
  /// answers when it ends. Loop thread of ctx's channel. Does not flush. A coroutine passes the
  /// context of its Connection's handler: *c.channel().pipeline().context("connection").
  void run(Context& ctx, HttpRequest& request) const;

 private:
  friend class Router;
  const Router* router_ = nullptr;
  const void* target_ = nullptr;  // the route's Router::Target (private to the router)
  std::string_view pattern_;
  RouteParams params_;
  Outcome outcome_ = Outcome::not_found;
};

/// Dispatches whole requests to routes by path and method (see the file's description).
/// Sharable; set up before it serves channels.
class Router final : public InboundHandler<HttpRequest, HttpRequest>, public std::enable_shared_from_this<Router> {
 public:
  /// The low-level form: writes the response with ctx.write(HttpResponse(...)), on the channel's
  /// loop. Not wrapped by the middleware.
  using RouteFn = std::function<void(Context& ctx, HttpRequest& request)>;
  /// The same, with the parameters a pattern captured (empty for an exact path).
  using ParamRouteFn = std::function<void(Context& ctx, HttpRequest& request, const RouteParams& params)>;
  /// A callback route: returns the response (wrapped by the middleware).
  using ResponseFn = std::function<HttpResponse(Request& request)>;
  /// A coroutine route: a task of its own per request, on the channel's loop (wrapped by the middleware).
  using AsyncFn = std::function<Task<HttpResponse>(Request& request)>;
  /// A coroutine route that reads the request's body as it arrives (body_reader.h); its Request's
  /// body() is empty. A task of its own per request, like AsyncFn (wrapped by the middleware).
  using StreamFn = std::function<Task<HttpResponse>(Request& request, BodyReader& body)>;
  /// Builds the answer the router gives itself: 404 (no route, no fallback), 405 (the router adds
  /// Allow), 500 (a route or middleware threw). `request.pattern()` is empty for 404 and 405.
  using ErrorPageFn = std::function<HttpResponse(int status, Request& request)>;

  /// Not thread-safe: set up routes before the router serves channels. A path with '{' or '}' is a
  /// pattern; a malformed one (not starting with '/', a brace that is not a whole "{name}" segment,
  /// an empty or repeated name, more than RouteParams::kMax parameters) throws std::invalid_argument.
  Router& route(std::string method, std::string path, RouteFn fn);
  /// As route(std::string, std::string, RouteFn), for a function that takes the captured parameters.
  Router& route(std::string method, std::string path, ParamRouteFn fn);
  /// As route(std::string, std::string, RouteFn), for a callback that returns its response.
  Router& route(std::string method, std::string path, ResponseFn fn);
  /// As route(std::string, std::string, RouteFn), for a coroutine.
  Router& route(std::string method, std::string path, AsyncFn fn);
  /// As route(std::string, std::string, RouteFn), for a coroutine that streams the request's body.
  Router& route(std::string method, std::string path, StreamFn fn);
  /// route("GET", path, fn) (also answers HEAD), for any of the five forms. Not thread-safe (setup).
  template <class Fn>
  Router& get(std::string path, Fn&& fn) {
    return route("GET", std::move(path), std::forward<Fn>(fn));
  }
  /// route("POST", path, fn). Not thread-safe (setup).
  template <class Fn>
  Router& post(std::string path, Fn&& fn) {
    return route("POST", std::move(path), std::forward<Fn>(fn));
  }
  /// route("PUT", path, fn). Not thread-safe (setup).
  template <class Fn>
  Router& put(std::string path, Fn&& fn) {
    return route("PUT", std::move(path), std::forward<Fn>(fn));
  }
  /// route("DELETE", path, fn). Not thread-safe (setup).
  template <class Fn>
  Router& del(std::string path, Fn&& fn) {
    return route("DELETE", std::move(path), std::forward<Fn>(fn));
  }
  /// Not thread-safe (setup). Answers the requests no route's path matches, instead of the 404.
  Router& fallback(RouteFn fn);
  /// As fallback(RouteFn), with a callback that returns its response (through the middleware).
  Router& fallback(ResponseFn fn);
  /// As fallback(RouteFn), with a coroutine (through the middleware).
  Router& fallback(AsyncFn fn);
  /// As fallback(RouteFn), with a coroutine that streams the request's body (through the
  /// middleware): every request no route's path matches has its body handed over as it arrives
  /// (a reverse proxy's one route).
  Router& fallback(StreamFn fn);
  /// Not thread-safe (setup). Appends `middleware` to the chain (see middleware.h): the first
  /// added runs first before the route and last after it.
  Router& use(std::shared_ptr<Middleware> middleware);
  /// Not thread-safe (setup). Replaces the router's own 404, 405 and 500 answers (see ErrorPageFn).
  Router& error_page(ErrorPageFn fn);

  /// Thread-safe once set up (reads only). Whether the route for `method` and `path` takes its
  /// request's body as a stream (a StreamFn route): the HTTP/1.1 ServerCodec asks it.
  bool streams_body(std::string_view method, std::string_view path) const noexcept;
  /// Thread-safe once set up (reads only). Whether any route, or the fallback, is a StreamFn route.
  bool has_streamed_routes() const noexcept;

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
  // What a route runs: exactly one of the five is set.
  struct Target {
    RouteFn write;
    ParamRouteFn param_write;
    ResponseFn respond;
    AsyncFn async;
    StreamFn streamed;
  };
  struct Route {
    std::string method;
    std::string path;
    Target target;
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
    Target target;
  };

  template <class Member, class Fn>
  static Target target_of(Member member, Fn fn);
  Router& add(std::string method, std::string path, Target target);
  // The segments of a pattern; throws std::invalid_argument when it is malformed.
  static std::vector<Segment> parse_pattern(const std::string& pattern);
  static bool matches(const PatternRoute& route, std::string_view path, RouteParams& params) noexcept;
  const PatternRoute* find_pattern(std::string_view method, std::string_view path, RouteParams& params) const noexcept;
  bool has_route_for_path(std::string_view path) const noexcept;
  // Runs `target` (nullptr: the request is unrouted) for `request`.
  void run(Context& ctx, HttpRequest& request, const Target* target, const RouteParams& params,
           std::string_view pattern) const;
  // Patterns, then 405 / fallback / 404: only after the exact paths missed.
  [[gnu::noinline]] void route_after_exact_miss(Context& ctx, HttpRequest& request) const;
  // Every route but a callback without middleware: the chain, coroutines, errors, the unrouted.
  [[gnu::noinline]] void run_wrapped(Context& ctx, HttpRequest& request, const Target* target,
                                     const RouteParams& params, std::string_view pattern) const;
  struct RouteTask;  // router_task.cc
  static RouteTask run_task(const Router& router, std::shared_ptr<const Router> keep, ChannelPtr channel,
                            HttpRequest message, RouteParams params, std::string_view pattern, const Target& target);
  void start_task(Context& ctx, HttpRequest&& request, const Target& target, const RouteParams& params,
                  std::string_view pattern) const;

  // The Allow list of a path with routes for other methods ("GET, HEAD"); empty when it has none.
  std::string allowed_methods(std::string_view path) const;
  // 404 or 405 (with Allow) for a request no route answers and no fallback takes.
  HttpResponse unrouted_response(Request& request) const;
  HttpResponse error_response(int status, Request& request) const noexcept;
  HttpResponse respond(const ResponseFn& fn, Request& request) const;
  HttpResponse failed(Request& request, std::exception_ptr error) const noexcept;
  // before() of each middleware until one answers; `passed` counts those that went on.
  std::optional<HttpResponse> run_before(Request& request, std::size_t& passed) const;
  void run_after(Request& request, HttpResponse& response, std::size_t passed) const noexcept;

  std::vector<Route> routes_;
  std::vector<PatternRoute> patterns_;
  Target fallback_;
  std::vector<std::shared_ptr<Middleware>> middleware_;
  ErrorPageFn error_page_;
};

}  // namespace weft::http
