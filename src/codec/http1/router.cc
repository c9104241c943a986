#include "weft/codec/http1/router.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "field_section.h"

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

Router& Router::route(std::string method, std::string path, RouteFn fn) {
  if (path.find_first_of("{}") == std::string::npos) {
    routes_.push_back(Route{std::move(method), std::move(path), std::move(fn)});
    return *this;
  }
  return route(std::move(method), std::move(path),
               ParamRouteFn([fn = std::move(fn)](Context& ctx, HttpRequest& request, const RouteParams&) { fn(ctx, request); }));
}

Router& Router::route(std::string method, std::string path, ParamRouteFn fn) {
  if (path.find_first_of("{}") == std::string::npos) {
    return route(std::move(method), std::move(path),
                 RouteFn([fn = std::move(fn)](Context& ctx, HttpRequest& request) { fn(ctx, request, kNoParams); }));
  }
  std::vector<Segment> segments = parse_pattern(path);
  patterns_.push_back(PatternRoute{std::move(method), std::move(path), std::move(segments), std::move(fn)});
  return *this;
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
  fallback_ = std::move(fn);
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
      m.exact_fn_ = &r.fn;
      m.pattern_ = r.path;
      return m;
    }
  }
  if (const PatternRoute* r = find_pattern(method, path, m.params_)) {
    m.outcome_ = RouteMatch::Outcome::route;
    m.pattern_fn_ = &r->fn;
    m.pattern_ = r->pattern;
    return m;
  }
  m.outcome_ = has_route_for_path(path) ? RouteMatch::Outcome::method_not_allowed : RouteMatch::Outcome::not_found;
  return m;
}

void RouteMatch::run(Context& ctx, HttpRequest& request) const {
  if (exact_fn_ != nullptr) {
    (*exact_fn_)(ctx, request);
  } else if (pattern_fn_ != nullptr) {
    (*pattern_fn_)(ctx, request, params_);
  } else if (router_ != nullptr) {
    router_->reply_unrouted(ctx, request);
  }
}

void Router::channel_read(Context& ctx, HttpRequest&& request) {
  const std::string_view path = request.path(), method = request.method();
  for (Route& r : routes_) {
    if (same(r.path, path) && serves(r.method, method)) {
      r.fn(ctx, request);
      return;
    }
  }
  route_after_exact_miss(ctx, request);
}

void Router::route_after_exact_miss(Context& ctx, HttpRequest& request) const {
  RouteParams params;
  if (const PatternRoute* r = find_pattern(request.method(), request.path(), params)) {
    r->fn(ctx, request, params);
    return;
  }
  reply_unrouted(ctx, request);
}

// 405 with Allow when the path has routes for other methods; otherwise the fallback, or 404. Out of
// line: its strings and response would otherwise cost every routed request a larger frame.
void Router::reply_unrouted(Context& ctx, HttpRequest& request) const {
  std::vector<std::string_view> methods;
  auto add = [&methods](std::string_view m) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  };
  auto add_route_method = [&add](std::string_view m) {
    add(m);
    if (m == "GET") add("HEAD");  // GET routes answer HEAD too
  };
  for (const Route& r : routes_) {
    if (r.path == request.path()) add_route_method(r.method);
  }
  RouteParams ignored;
  for (const PatternRoute& r : patterns_) {
    if (matches(r, request.path(), ignored)) add_route_method(r.method);
  }
  std::string allow;
  for (std::string_view m : methods) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  if (!allow.empty()) {
    ctx.write(HttpResponse(405).header("Allow", allow));
  } else if (fallback_) {
    fallback_(ctx, request);
  } else {
    ctx.write(HttpResponse(404).content_type("text/plain").body_view("Not Found"));
  }
}

void Router::channel_read_complete(Context& ctx) {
  ctx.flush();
  ctx.fire_read_complete();
}

}  // namespace weft::http
