#pragma once
// Real servers for the weft-load tests, in process, on 127.0.0.1: an HTTP server (the weft-hello
// plaintext route, in clear or over TLS) on an ephemeral port, a byte echo server on N consecutive ports below the
// ephemeral range. Stopped by their destructors.

#include <atomic>
#include <memory>
#include <random>
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

  // Serves GET /plaintext ("Hello, World!") and 404 elsewhere; returns the port. served() counts
  // the /plaintext responses written.
  std::uint16_t start_http() { return start_http_over(nullptr); }
  // The same over TLS with `tls` (a server context); accepted() counts its connections.
  std::uint16_t start_https(TlsContextPtr tls) { return start_http_over(std::move(tls)); }

  // Echoes bytes on `count` consecutive ports; returns the first, or 0 with last_error() saying why.
  // The block is drawn below the kernel's ephemeral range (32768+ on Debian): a block drawn from it
  // (bind to port 0, then the next ports) collides with the local ports of other tests' client
  // connections, which Linux hands out right beside the ports it gives bind(0).
  std::uint16_t start_echo(int count) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> base(20000, 32000 - count);
    for (int attempt = 0; attempt < 200; ++attempt) {
      const auto first = static_cast<std::uint16_t>(base(random));
      const std::size_t before = servers_.size();
      bool all = true;
      for (int i = 0; i < count && all; ++i) all = start_one_echo(static_cast<std::uint16_t>(first + i)) != 0;
      if (all) return first;
      for (std::size_t i = before; i < servers_.size(); ++i) servers_[i]->close().wait();
      servers_.resize(before);
    }
    return 0;
  }

  const std::string& last_error() const { return last_error_; }
  std::uint64_t served() const { return served_.load(std::memory_order_relaxed); }
  std::uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }

 private:
  std::uint16_t start_http_over(TlsContextPtr tls) {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [this](Context& ctx, http::HttpRequest&) {
      served_.fetch_add(1, std::memory_order_relaxed);
      ctx.write(http::HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
    });
    return bind(ServerBootstrap().group(loops_).child_option(option::tcp_nodelay, true).child_handler([this, router, tls](Channel& ch) {
      accepted_.fetch_add(1, std::memory_order_relaxed);
      if (tls) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(tls));
      ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
      ch.pipeline().add_last("router", router);
    }));
  }

  std::uint16_t start_one_echo(std::uint16_t port) {
    ServerBootstrap b;
    b.group(loops_).child_option(option::tcp_nodelay, true).child_handler([](Channel& ch) {
      ch.pipeline().add_last("echo", std::make_shared<EchoBytes>());
    });
    try {
      auto server = b.bind(SocketAddress::loopback(port)).get();
      servers_.push_back(server);
      return server->local_address().port();
    } catch (const std::exception& e) {
      last_error_ = e.what();
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
  std::string last_error_;
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::uint64_t> accepted_{0};
};

}  // namespace weft::load::test
