#include "weft/codec/http1/router.h"

#include <algorithm>
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

}  // namespace

Router& Router::route(std::string method, std::string path, RouteFn fn) {
  routes_.push_back(Route{std::move(method), std::move(path), std::move(fn)});
  return *this;
}

void Router::channel_read(Context& ctx, HttpRequest&& request) {
  const std::string_view path = request.path(), method = request.method();
  for (Route& r : routes_) {
    if (same(r.path, path) && (same(r.method, method) || (method == "HEAD" && r.method == "GET"))) {
      r.fn(ctx, request);
      return;
    }
  }
  reply_unrouted(ctx, request);
}

// 405 with Allow when the path has routes for other methods, 404 otherwise. Out of line: its strings
// and response would otherwise cost every routed request a larger frame.
void Router::reply_unrouted(Context& ctx, const HttpRequest& request) const {
  std::vector<std::string_view> methods;
  auto add = [&methods](std::string_view m) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  };
  for (const Route& r : routes_) {
    if (r.path != request.path()) continue;
    add(r.method);
    if (r.method == "GET") add("HEAD");  // GET routes answer HEAD too
  }
  std::string allow;
  for (std::string_view m : methods) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  if (!allow.empty()) {
    ctx.write(HttpResponse(405).header("Allow", allow));
  } else {
    ctx.write(HttpResponse(404).content_type("text/plain").body_view("Not Found"));
  }
}

void Router::channel_read_complete(Context& ctx) {
  ctx.flush();
  ctx.fire_read_complete();
}

}  // namespace weft::http
