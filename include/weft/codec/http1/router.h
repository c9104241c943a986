#pragma once
// Router: dispatches whole requests to handlers by exact path (and method). Not a web framework:
// no patterns, no middleware. Unknown paths get 404, known paths with another method 405.
//
// One router may serve many channels at once: routes run on each channel's loop, concurrently
// across loops, so route functions must be thread-safe. The router flushes once per read batch.

#include <functional>
#include <string>
#include <vector>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_message.h"

namespace weft::http {

class Router final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  // Writes the response with ctx.write(HttpResponse(...)); runs on the channel's loop.
  using RouteFn = std::function<void(Context& ctx, HttpRequest& request)>;

  // Not thread-safe: set up routes before the router serves channels.
  Router& route(std::string method, std::string path, RouteFn fn);
  Router& get(std::string path, RouteFn fn) { return route("GET", std::move(path), std::move(fn)); }
  Router& post(std::string path, RouteFn fn) { return route("POST", std::move(path), std::move(fn)); }

  void channel_read(Context& ctx, HttpRequest&& request) override;
  void channel_read_complete(Context& ctx) override;
  // Shared by every channel of a server: it keeps no per-channel state.
  bool is_sharable() const noexcept override { return true; }

 private:
  [[gnu::noinline, gnu::cold]] void reply_unrouted(Context& ctx, const HttpRequest& request) const;

  struct Route {
    std::string method;
    std::string path;
    RouteFn fn;
  };
  std::vector<Route> routes_;
};

}  // namespace weft::http
