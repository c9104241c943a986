#include "weft/codec/http1/router.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <stdexcept>
#include <vector>

#include "field_section.h"
#include "weft/core/log.h"

namespace weft::http {
namespace {

// Equal strings, compared a word at a time inline: the libc memcmp call std::string_view makes is
// a third of the routing cost of a short path.
[[gnu::always_inline]] inline bool same(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const char *p = a.data(), *q = b.data();
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
      if (detail::load8(p + i) != detail::load8(q + i)) return false;
    }
    return detail::load8(p + n - 8) == detail::load8(q + n - 8);
  }
  if (n >= 4) return detail::load4(p) == detail::load4(q) && detail::load4(p + n - 4) == detail::load4(q + n - 4);
  if (n >= 2) return p[0] == q[0] && p[1] == q[1] && p[n - 1] == q[n - 1];  // "GET", "PUT"
  return n == 0 || p[0] == q[0];
}

// A route for `route_method` answers `method`: the same, or HEAD sent to GET.
[[gnu::always_inline]] inline bool serves(std::string_view route_method, std::string_view method) noexcept {
  return same(route_method, method) || (method == "HEAD" && route_method == "GET");
}

bool is_param_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

[[noreturn]] void bad_pattern(const std::string& pattern, const char* why) {
  throw std::invalid_argument("route pattern '" + pattern + "': " + why);
}

const RouteParams kNoParams;

}  // namespace

std::optional<std::string_view> RouteParams::get(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < size_; ++i) {
    if (params_[i].name == name) return params_[i].value;
  }
  return std::nullopt;
}

// A Target with its `member` set to `fn`.
template <class Member, class Fn>
Router::Target Router::target_of(Member member, Fn fn) {
  Target target;
  target.*member = std::move(fn);
  return target;
}

Router& Router::add(std::string method, std::string path, Target target) {
  if (path.find_first_of("{}") == std::string::npos) {
    if (target.param_write) {
      target.write = [fn = std::move(target.param_write)](Context& ctx, HttpRequest& request) {
        fn(ctx, request, kNoParams);
      };
      target.param_write = nullptr;
    }
    routes_.push_back(Route{std::move(method), std::move(path), std::move(target)});
    return *this;
  }
  std::vector<Segment> segments = parse_pattern(path);
  if (target.write) {
    target.param_write = [fn = std::move(target.write)](Context& ctx, HttpRequest& request, const RouteParams&) {
      fn(ctx, request);
    };
    target.write = nullptr;
  }
  patterns_.push_back(PatternRoute{std::move(method), std::move(path), std::move(segments), std::move(target)});
  return *this;
}

Router& Router::route(std::string method, std::string path, RouteFn fn) {
  return add(std::move(method), std::move(path), target_of(&Target::write, std::move(fn)));
}

Router& Router::route(std::string method, std::string path, ParamRouteFn fn) {
  return add(std::move(method), std::move(path), target_of(&Target::param_write, std::move(fn)));
}

Router& Router::route(std::string method, std::string path, ResponseFn fn) {
  return add(std::move(method), std::move(path), target_of(&Target::respond, std::move(fn)));
}

Router& Router::route(std::string method, std::string path, AsyncFn fn) {
  return add(std::move(method), std::move(path), target_of(&Target::async, std::move(fn)));
}

Router& Router::route(std::string method, std::string path, StreamFn fn) {
  return add(std::move(method), std::move(path), target_of(&Target::streamed, std::move(fn)));
}

bool Router::has_streamed_routes() const noexcept {
  const auto streamed = [](const auto& r) { return static_cast<bool>(r.target.streamed); };
  return fallback_.streamed || std::any_of(routes_.begin(), routes_.end(), streamed) ||
         std::any_of(patterns_.begin(), patterns_.end(), streamed);
}

bool Router::streams_body(std::string_view method, std::string_view path) const noexcept {
  const RouteMatch found = match(method, path);
  if (found.outcome() == RouteMatch::Outcome::not_found) return static_cast<bool>(fallback_.streamed);
  return found && static_cast<const Target*>(found.target_)->streamed;
}

std::vector<Router::Segment> Router::parse_pattern(const std::string& pattern) {
  if (pattern.empty() || pattern[0] != '/') bad_pattern(pattern, "must start with '/'");
  if (pattern.size() > std::numeric_limits<std::uint32_t>::max()) bad_pattern(pattern.substr(0, 64), "too long");
  const std::string_view text = pattern;
  std::vector<Segment> segments;
  std::vector<std::string_view> names;
  for (std::size_t begin = 1;;) {
    const std::size_t slash = std::min(text.find('/', begin), text.size());
    const std::string_view segment = text.substr(begin, slash - begin);
    if (segment.find_first_of("{}") == std::string_view::npos) {
      segments.push_back(Segment{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(segment.size()), false});
    } else {
      if (segment.size() < 2 || segment.front() != '{' || segment.back() != '}') {
        bad_pattern(pattern, "a parameter must be a whole segment, \"{name}\"");
      }
      const std::string_view name = segment.substr(1, segment.size() - 2);
      if (name.empty() || !std::all_of(name.begin(), name.end(), is_param_name_char)) {
        bad_pattern(pattern, "a parameter name is letters, digits and '_', at least one");
      }
      if (std::find(names.begin(), names.end(), name) != names.end()) bad_pattern(pattern, "a parameter name repeats");
      if (names.size() == RouteParams::kMax) bad_pattern(pattern, "more than RouteParams::kMax parameters");
      names.push_back(name);
      segments.push_back(Segment{static_cast<std::uint32_t>(begin + 1), static_cast<std::uint32_t>(name.size()), true});
    }
    if (slash == text.size()) return segments;
    begin = slash + 1;
  }
}

Router& Router::fallback(RouteFn fn) {
  fallback_ = target_of(&Target::write, std::move(fn));
  return *this;
}

Router& Router::fallback(ResponseFn fn) {
  fallback_ = target_of(&Target::respond, std::move(fn));
  return *this;
}

Router& Router::fallback(AsyncFn fn) {
  fallback_ = target_of(&Target::async, std::move(fn));
  return *this;
}

Router& Router::fallback(StreamFn fn) {
  fallback_ = target_of(&Target::streamed, std::move(fn));
  return *this;
}

Router& Router::use(std::shared_ptr<Middleware> middleware) {
  if (middleware == nullptr) throw std::invalid_argument("Router::use: no middleware");
  middleware_.push_back(std::move(middleware));
  return *this;
}

Router& Router::error_page(ErrorPageFn fn) {
  error_page_ = std::move(fn);
  return *this;
}

// Walks the path segment by segment; a parameter takes one non-empty segment. Fills `params`.
bool Router::matches(const PatternRoute& route, std::string_view path, RouteParams& params) noexcept {
  params.size_ = 0;
  if (path.empty() || path[0] != '/') return false;
  const std::string_view text = route.pattern;
  std::size_t begin = 1;
  for (const Segment& s : route.segments) {
    if (begin > path.size()) return false;  // the path has fewer segments
    const std::size_t slash = std::min(path.find('/', begin), path.size());
    const std::string_view segment = path.substr(begin, slash - begin);
    if (s.is_param) {
      if (segment.empty()) return false;
      params.params_[params.size_++] = {text.substr(s.begin, s.size), segment};
    } else if (segment != text.substr(s.begin, s.size)) {
      return false;
    }
    begin = slash + 1;
  }
  return begin == path.size() + 1;  // and the path has no more segments
}

const Router::PatternRoute* Router::find_pattern(std::string_view method, std::string_view path,
                                                 RouteParams& params) const noexcept {
  for (const PatternRoute& r : patterns_) {
    if (serves(r.method, method) && matches(r, path, params)) return &r;
  }
  params.size_ = 0;
  return nullptr;
}

bool Router::has_route_for_path(std::string_view path) const noexcept {
  RouteParams ignored;
  return std::any_of(routes_.begin(), routes_.end(), [path](const Route& r) { return r.path == path; }) ||
         std::any_of(patterns_.begin(), patterns_.end(),
                     [&](const PatternRoute& r) { return matches(r, path, ignored); });
}

RouteMatch Router::match(std::string_view method, std::string_view path) const noexcept {
  RouteMatch m;
  m.router_ = this;
  for (const Route& r : routes_) {
    if (same(r.path, path) && serves(r.method, method)) {
      m.outcome_ = RouteMatch::Outcome::route;
      m.target_ = &r.target;
      m.pattern_ = r.path;
      return m;
    }
  }
  if (const PatternRoute* r = find_pattern(method, path, m.params_)) {
    m.outcome_ = RouteMatch::Outcome::route;
    m.target_ = &r->target;
    m.pattern_ = r->pattern;
    return m;
  }
  m.outcome_ = has_route_for_path(path) ? RouteMatch::Outcome::method_not_allowed : RouteMatch::Outcome::not_found;
  return m;
}

void RouteMatch::run(Context& ctx, HttpRequest& request) const {
  if (router_ != nullptr) {
    router_->run(ctx, request, static_cast<const Router::Target*>(target_), params_, pattern_);
  }
}

void Router::channel_read(Context& ctx, HttpRequest&& request) {
  const std::string_view path = request.path(), method = request.method();
  for (const Route& r : routes_) {
    if (same(r.path, path) && serves(r.method, method)) {
      run(ctx, request, &r.target, kNoParams, r.path);
      return;
    }
  }
  route_after_exact_miss(ctx, request);
}

// A callback's response, or the 500 when it throws.
[[gnu::always_inline]] inline HttpResponse Router::respond(const ResponseFn& fn, Request& request) const {
  try {
    return fn(request);
  } catch (...) {
    return failed(request, std::current_exception());
  }
}

// The fast cases inline: a callback without middleware, and the low-level forms; the rest out of line.
[[gnu::always_inline]] inline void Router::run(Context& ctx, HttpRequest& request, const Target* target,
                                               const RouteParams& params, std::string_view pattern) const {
  if (target != nullptr) {
    if (target->respond && middleware_.empty()) {
      Request r(ctx.channel(), request, params, pattern);
      // Named for its request: on an executor it reaches the codec after the handover, when a
      // coroutine route's request before it may still be owed.
      ctx.write(respond(target->respond, r).for_request(request.sequence()));
      return;
    }
    if (target->write) {
      target->write(ctx, request);
      return;
    } else if (target->param_write) {
      target->param_write(ctx, request, params);
      return;
    }
  } else if (fallback_.write && allowed_methods(request.path()).empty()) {
    fallback_.write(ctx, request);
    return;
  }
  run_wrapped(ctx, request, target, params, pattern);
}

void Router::route_after_exact_miss(Context& ctx, HttpRequest& request) const {
  RouteParams params;
  if (const PatternRoute* r = find_pattern(request.method(), request.path(), params)) {
    run(ctx, request, &r->target, params, r->pattern);
    return;
  }
  run(ctx, request, nullptr, kNoParams, {});
}

std::string Router::allowed_methods(std::string_view path) const {
  std::vector<std::string_view> methods;
  auto add_method = [&methods](std::string_view m) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  };
  auto add_route_method = [&add_method](std::string_view m) {
    add_method(m);
    if (m == "GET") add_method("HEAD");  // GET routes answer HEAD too
  };
  for (const Route& r : routes_) {
    if (r.path == path) add_route_method(r.method);
  }
  RouteParams ignored;
  for (const PatternRoute& r : patterns_) {
    if (matches(r, path, ignored)) add_route_method(r.method);
  }
  std::string allow;
  for (std::string_view m : methods) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  return allow;
}

HttpResponse Router::unrouted_response(Request& request) const {
  std::string allow = allowed_methods(request.path());
  if (allow.empty()) return error_response(404, request);
  HttpResponse response = error_response(405, request);
  response.header("Allow", allow);
  return response;
}

// The router's own answers; a custom page that throws falls back to the plain one.
HttpResponse Router::error_response(int status, Request& request) const noexcept {
  if (error_page_) {
    try {
      return error_page_(status, request);
    } catch (const std::exception& e) {
      log(LogLevel::error, "channel {}: the router's error page for {} threw: {}", request.channel().id(), status,
          e.what());
    } catch (...) {
      log(LogLevel::error, "channel {}: the router's error page for {} threw", request.channel().id(), status);
    }
  }
  switch (status) {
    case 404: return std::move(HttpResponse(404).content_type("text/plain").body_view("Not Found"));
    case 500: return std::move(HttpResponse(500).content_type("text/plain").body_view("Internal Server Error"));
    default: return HttpResponse(status);
  }
}

HttpResponse Router::failed(Request& request, std::exception_ptr error) const noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(LogLevel::error, "channel {}: {} {}: the route threw: {}", request.channel().id(), request.method(),
        request.path(), e.what());
  } catch (...) {
    log(LogLevel::error, "channel {}: {} {}: the route threw", request.channel().id(), request.method(),
        request.path());
  }
  return error_response(500, request);
}

std::optional<HttpResponse> Router::run_before(Request& request, std::size_t& passed) const {
  passed = 0;
  for (const auto& m : middleware_) {
    std::optional<HttpResponse> answer = m->before(request);
    if (answer) return answer;
    ++passed;
  }
  return std::nullopt;
}

void Router::run_after(Request& request, HttpResponse& response, std::size_t passed) const noexcept {
  for (std::size_t i = passed; i-- > 0;) {
    try {
      middleware_[i]->after(request, response);
    } catch (...) {
      response = failed(request, std::current_exception());
    }
  }
}

void Router::run_wrapped(Context& ctx, HttpRequest& request, const Target* target, const RouteParams& params,
                         std::string_view pattern) const {
  const Target* answering = target;
  if (answering == nullptr && (fallback_.respond || fallback_.async || fallback_.streamed) &&
      allowed_methods(request.path()).empty()) {
    answering = &fallback_;
  }
  if (answering != nullptr && (answering->async || answering->streamed)) {
    start_task(ctx, std::move(request), *answering, params, pattern);
    return;
  }
  Request r(ctx.channel(), request, params, pattern);
  if (!middleware_.empty()) r.set_received(std::chrono::system_clock::now());
  std::size_t passed = 0;
  std::optional<HttpResponse> response;
  try {
    response = run_before(r, passed);
    if (!response) {
      response.emplace(answering != nullptr ? answering->respond(r) : unrouted_response(r));
    }
  } catch (...) {
    response.emplace(failed(r, std::current_exception()));
  }
  run_after(r, *response, passed);
  response->for_request(request.sequence());
  ctx.write(std::move(*response));
}

void Router::channel_read_complete(Context& ctx) {
  ctx.flush();
  ctx.fire_read_complete();
}

}  // namespace weft::http
