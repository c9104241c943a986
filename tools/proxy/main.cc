// weft-proxy: an HTTP reverse proxy. Every request (HTTP/1.1 or h2, cleartext or TLS) goes to the
// next backend in turn over pooled connections, bodies streamed both ways; 502 when the backend
// fails, 504 when it times out. SIGTERM or SIGINT drains it. See docs/http-proxy.md.
//
//   weft-proxy --listen 8080 --backend http://127.0.0.1:9000 --backend http://127.0.0.1:9001

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "reverse_proxy.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/weft.h"

namespace {

struct Options {
  std::uint16_t port = 0;
  std::string host = "0.0.0.0";
  std::size_t loops = 0;
  std::string transport = "epoll";
  bool http2 = true;
  std::string tls_cert, tls_key;
  double connect_timeout_s = 5, timeout_s = 60, idle_timeout_s = 60;
  long drain_timeout_s = 10;
  weft::proxy::ProxyOptions proxy;
};

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

// The server's pipeline: TLS with ALPN (h2 or HTTP/1.1), else h2c or HTTP/1.1 by the first bytes.
void serve_http(weft::Channel& ch, const weft::TlsContextPtr& tls, bool http2,
                const std::shared_ptr<weft::http::Router>& router) {
  if (tls) {
    ch.pipeline().add_last("tls", std::make_shared<weft::TlsHandler>(tls));
    ch.pipeline().add_last(
        "alpn", std::make_shared<weft::ApplicationProtocolNegotiationHandler>(
                    "http/1.1", [](weft::Context& ctx, std::string_view protocol) {
                      if (protocol == "h2") {
                        ctx.pipeline().add_after(ctx.name(), "http2", std::make_shared<weft::http2::ServerCodec>());
                      } else {
                        ctx.pipeline().add_after(ctx.name(), "http", std::make_shared<weft::http::ServerCodec>());
                      }
                    }));
  } else if (http2) {
    ch.pipeline().add_last("detect", std::make_shared<weft::http2::CleartextDetector>());
  } else {
    ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
  }
  ch.pipeline().add_last("proxy", router);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"weft-proxy: an HTTP reverse proxy (HTTP/1.1 and h2 in, HTTP/1.1 or h2 out)"};
  app.add_option("--listen,--port", o.port, "the port to serve")->required()->check(CLI::Range(0, 65535));
  app.add_option("--host", o.host, "the address to serve (default 0.0.0.0)");
  app.add_option("--backend", o.proxy.backends,
                 "a backend, http://HOST:PORT[/PREFIX] or https://... (repeatable: round robin)")
      ->required();
  app.add_option("--tls-cert", o.tls_cert, "serve HTTPS (h2 or HTTP/1.1 by ALPN): the certificate chain (PEM)");
  app.add_option("--tls-key", o.tls_key, "the chain's private key (PEM)");
  app.add_flag("!--http1-only", o.http2, "HTTP/1.1 only in (default: HTTP/1.1 and h2c, or h2 by ALPN)");
  app.add_flag("--backend-http2", o.proxy.backend_http2, "HTTP/2 to the backends (h2c by prior knowledge for http)");
  app.add_flag("--insecure,-k", o.proxy.insecure, "https backends: accept any certificate");
  app.add_option("--backend-connections", o.proxy.max_connections_per_backend, "connections to each backend, per loop")
      ->check(CLI::Range(1, 100000));
  app.add_option("--loops", o.loops, "event loops (default: one per core)")->check(CLI::Range(1, 1024));
  app.add_option("--transport", o.transport, "epoll, io_uring or blocking");
  app.add_option("--connect-timeout", o.connect_timeout_s, "seconds to connect to a backend (then 504)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", o.timeout_s, "seconds for a backend's response head (then 504; 0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--idle-timeout", o.idle_timeout_s, "seconds without a byte from a backend that owes one (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--drain-timeout", o.drain_timeout_s, "SIGTERM/SIGINT: seconds open connections have to end")
      ->check(CLI::Range(0L, 86400L));
  CLI11_PARSE(app, argc, argv);
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    std::fprintf(stderr, "weft-proxy: --tls-cert and --tls-key go together\n");
    return 2;
  }
  o.proxy.scheme_in = o.tls_cert.empty() ? "http" : "https";
  o.proxy.connect_timeout = seconds(o.connect_timeout_s);
  o.proxy.response_timeout = seconds(o.timeout_s);
  o.proxy.idle_timeout = seconds(o.idle_timeout_s);
  weft::Transport* transport = nullptr;
  try {
    transport = &weft::transport_named(o.transport);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-proxy: %s\n", e.what());
    return 2;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // every thread started below inherits the mask

  // A request and its backend exchange share the connection's loop; on the blocking transport
  // (a thread per connection) the backend connections run on an epoll group of their own.
  const bool blocking = o.transport == "blocking";
  weft::EventLoopGroup loops(*transport, weft::EventLoopGroup::Options{blocking ? 1024 : o.loops, "proxy", {}});
  std::optional<weft::EventLoopGroup> acceptor, backend_loops;
  if (blocking) {
    acceptor.emplace(*transport, 1, "proxy-accept");
    backend_loops.emplace(weft::transport_named("epoll"), weft::EventLoopGroup::Options{o.loops, "proxy-backend", {}});
  }
  std::optional<weft::proxy::ReverseProxy> proxy;
  try {
    proxy.emplace(backend_loops ? *backend_loops : loops, o.proxy);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-proxy: --backend: %s\n", e.what());
    return 2;
  }
  auto router = std::make_shared<weft::http::Router>();
  proxy->install(*router);
  weft::TlsContextPtr tls;
  if (!o.tls_cert.empty()) {
    try {
      tls = weft::TlsContext::server()
                .certificate_chain_file(o.tls_cert)
                .private_key_file(o.tls_key)
                .application_protocols(o.http2 ? std::vector<std::string>{"h2", "http/1.1"}
                                               : std::vector<std::string>{"http/1.1"})
                .build();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-proxy: TLS: %s\n", e.what());
      return 1;
    }
  }
  weft::ChannelPtr server;
  try {
    server =
        weft::ServerBootstrap()
            .group(acceptor ? *acceptor : loops, loops)
            .option(weft::option::backlog, 8192)
            .child_option(weft::option::tcp_nodelay, true)
            .child_handler([router, tls, http2 = o.http2](weft::Channel& ch) { serve_http(ch, tls, http2, router); })
            .bind(weft::SocketAddress::from(o.host, o.port))
            .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-proxy: cannot listen on %s:%u: %s\n", o.host.c_str(), o.port, e.what());
    return 1;
  }
  std::printf("weft-proxy: listening on %s (%s), %zu backend(s), %zu loop(s), transport %s\n",
              server->local_address().to_string().c_str(), tls ? "HTTPS" : (o.http2 ? "HTTP/1.1 and h2c" : "HTTP/1.1"),
              o.proxy.backends.size(), blocking ? backend_loops->size() : loops.size(), o.transport.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  // The drain: no new connection; those open finish their requests (HTTP/1.1 Connection: close,
  // HTTP/2 GOAWAY) within the deadline; then the backend connections close.
  const weft::DrainReport drained = weft::drain_server(server, std::chrono::seconds(o.drain_timeout_s)).get();
  proxy->close().wait();
  const weft::proxy::ProxyStats s = proxy->stats();
  std::fprintf(
      stderr,
      "weft-proxy: %s: drained: %zu connection(s) open, %zu ended gracefully, %zu closed at the deadline; "
      "%llu requests, %llu answered 502, %llu answered 504, %llu cut mid-body, %llu sent to the next backend\n",
      strsignal(sig), drained.open, drained.drained, drained.forced, static_cast<unsigned long long>(s.requests),
      static_cast<unsigned long long>(s.bad_gateway), static_cast<unsigned long long>(s.gateway_timeout),
      static_cast<unsigned long long>(s.failed_mid_body), static_cast<unsigned long long>(s.next_backend));
  proxy.reset();  // the client before its loops
  if (acceptor) acceptor->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(5)).wait();
  if (backend_loops) backend_loops->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  return 0;
}
