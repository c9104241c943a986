#include "weft/codec/http1/router.h"

namespace weft::http {

Router& Router::route(std::string method, std::string path, RouteFn fn) {
  routes_.push_back(Route{std::move(method), std::move(path), std::move(fn)});
  return *this;
}

void Router::channel_read(Context& ctx, HttpRequest&& request) {
  const std::string_view path = request.path(), method = request.method();
  bool path_known = false;
  for (Route& r : routes_) {
    if (std::string_view(r.path) != path) continue;  // string_view's == compares sizes first
    path_known = true;
    if (std::string_view(r.method) == method || (r.method == "GET" && method == "HEAD")) {
      r.fn(ctx, request);
      return;
    }
  }
  if (path_known) {
    std::string allow;
    for (const Route& r : routes_) {
      if (r.path != request.path()) continue;
      if (!allow.empty()) allow += ", ";
      allow += r.method;
    }
    ctx.write(HttpResponse(405).header("Allow", allow));
    return;
  }
  ctx.write(HttpResponse(404).content_type("text/plain").body_view("Not Found"));
}

void Router::channel_read_complete(Context& ctx) {
  ctx.flush();
  ctx.fire_read_complete();
}

}  // namespace weft::http
