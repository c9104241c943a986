#include "weft/metrics/admin/admin_server.h"

#include "weft/channel/bootstrap.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/transport/transport_named.h"

namespace weft::metrics {

void add_admin_routes(http::Router& router, Registry& registry, std::shared_ptr<const Readiness> readiness) {
  router.get("/metrics", [&registry](http::Request& request) {
    const Format format = format_for_accept(request.message().header("accept").value_or(""));
    http::HttpResponse response(200);
    response.content_type(content_type(format)).body(ByteBuf::copy_of(registry.scrape(format)));
    return response;
  });
  router.get("/healthz",
             [](http::Request&) { return std::move(http::HttpResponse(200).content_type("text/plain").body("ok\n")); });
  router.get("/readyz", [readiness = std::move(readiness)](http::Request&) {
    const bool ready = readiness->get();
    return std::move(
        http::HttpResponse(ready ? 200 : 503).content_type("text/plain").body(ready ? "ready\n" : "draining\n"));
  });
}

AdminServer::AdminServer(EventLoopGroup& loops, const SocketAddress& address, Registry& registry) {
  listen(loops, address, registry);
}

AdminServer::AdminServer(const SocketAddress& address, Registry& registry, const std::string& loop_name)
    : own_loops_(std::make_unique<EventLoopGroup>(transport_named("epoll"), 1, loop_name)) {
  try {
    listen(*own_loops_, address, registry);
  } catch (...) {
    own_loops_->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
    throw;
  }
}

void AdminServer::listen(EventLoopGroup& loops, const SocketAddress& address, Registry& registry) {
  auto router = std::make_shared<http::Router>();
  add_admin_routes(*router, registry, readiness_);
  listener_ = ServerBootstrap()
                  .group(loops)
                  .child_handler([router](Channel& ch) {
                    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(address)
                  .get();
}

AdminServer::~AdminServer() {
  if (listener_) listener_->close();
  if (own_loops_) own_loops_->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
}

}  // namespace weft::metrics
