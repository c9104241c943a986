#pragma once
// Real servers for the weft-load tests, in process, on 127.0.0.1 ephemeral ports: an HTTP server
// (the weft-hello plaintext route), a byte echo server on N ports. Stopped by their destructors.

#include <memory>
#include <string>
#include <vector>

#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/weft.h"

namespace weft::load::test {

class EchoBytes final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& message) override { ctx.write(std::move(message)); }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
  void writability_changed(Context& ctx) override {
    ctx.channel().set_auto_read(ctx.channel().is_writable());
    ctx.fire_writability_changed();
  }
  void exception_caught(Context& ctx, std::exception_ptr) override { ctx.close(); }
};

class TestServers {
 public:
  TestServers() : loops_(epoll(), 1, "test-server") {}
  ~TestServers() {
    for (auto& s : servers_) s->close().wait();
    loops_.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  }

  // Serves GET /plaintext ("Hello, World!") and 404 elsewhere; returns the port.
  std::uint16_t start_http() {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, http::HttpRequest&) {
      ctx.write(http::HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
    });
    return bind(ServerBootstrap().group(loops_).child_option(option::tcp_nodelay, true).child_handler([router](Channel& ch) {
      ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
      ch.pipeline().add_last("router", router);
    }));
  }

  // Echoes bytes on `count` consecutive ports; returns the first.
  std::uint16_t start_echo(int count) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      const std::uint16_t first = start_one_echo(0);
      bool all = true;
      for (int i = 1; i < count && all; ++i) all = start_one_echo(static_cast<std::uint16_t>(first + i)) != 0;
      if (all) return first;
    }
    return 0;
  }

 private:
  std::uint16_t start_one_echo(std::uint16_t port) {
    ServerBootstrap b;
    b.group(loops_).child_option(option::tcp_nodelay, true).child_handler([](Channel& ch) {
      ch.pipeline().add_last("echo", std::make_shared<EchoBytes>());
    });
    try {
      auto server = b.bind(SocketAddress::loopback(port)).get();
      servers_.push_back(server);
      return server->local_address().port();
    } catch (const std::exception&) {
      return 0;
    }
  }
  std::uint16_t bind(ServerBootstrap& b) {
    auto server = b.bind(SocketAddress::loopback(0)).get();
    servers_.push_back(server);
    return server->local_address().port();
  }
  std::uint16_t bind(ServerBootstrap&& b) { return bind(b); }

  EventLoopGroup loops_;
  std::vector<ChannelPtr> servers_;
};

}  // namespace weft::load::test
