// weft-static-server: serves a directory over HTTP/1.1 and h2 (h2c by prior knowledge or upgrade),
// and, with a certificate, HTTPS on the same port (TLS or cleartext chosen by the first bytes).
//
//   weft-static-server --root DIR [--port 8080] [--loops N] [--transport epoll|io_uring|blocking]
//                      [--tls-cert FILE --tls-key FILE]

#include <weft/transport/transport_named.h>
#include <weft/weft.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace {

struct Options {
  std::string root;
  std::uint16_t port = 8080;
  std::size_t loops = 1;
  std::string transport = "epoll";
  std::string tls_cert, tls_key;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--root")
      o.root = v;
    else if (a == "--port")
      o.port = static_cast<std::uint16_t>(std::atoi(v));
    else if (a == "--loops")
      o.loops = static_cast<std::size_t>(std::atoi(v));
    else if (a == "--transport")
      o.transport = v;
    else if (a == "--tls-cert")
      o.tls_cert = v;
    else if (a == "--tls-key")
      o.tls_key = v;
    else
      return false;
  }
  return !o.root.empty() && o.loops > 0 && o.tls_cert.empty() == o.tls_key.empty();
}

// The HTTP codecs for a connection whose bytes are cleartext (h2c detection) or decrypted (ALPN).
void add_http(weft::Context& ctx, bool encrypted) {
  if (!encrypted) {
    ctx.pipeline().add_after(ctx.name(), "detect", std::make_shared<weft::http2::CleartextDetector>());
    return;
  }
  ctx.pipeline().add_after(
      ctx.name(), "alpn",
      std::make_shared<weft::ApplicationProtocolNegotiationHandler>(
          "http/1.1", [](weft::Context& c, std::string_view protocol) {
            if (protocol == "h2") {
              c.pipeline().add_after(c.name(), "http2", std::make_shared<weft::http2::ServerCodec>());
            } else {
              c.pipeline().add_after(c.name(), "http1", std::make_shared<weft::http::ServerCodec>());
            }
          }));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(
        stderr,
        "usage: weft-static-server --root DIR [--port 8080] [--loops N] [--transport epoll|io_uring|blocking]\n"
        "                          [--tls-cert FILE --tls-key FILE]\n");
    return 2;
  }
  try {
    weft::EventLoopGroup loops(weft::transport_named(options.transport), options.loops);
    auto files = std::make_shared<weft::http::StaticFiles>(options.root);
    auto router = std::make_shared<weft::http::Router>();
    router->fallback(files->handler("/"));
    weft::TlsContextPtr tls;
    if (!options.tls_cert.empty()) {
      tls = weft::TlsContext::server()
                .certificate_chain_file(options.tls_cert)
                .private_key_file(options.tls_key)
                .application_protocols({"h2", "http/1.1"})
                .build();
    }
    weft::ChannelPtr server =
        weft::ServerBootstrap()
            .group(loops)
            .option(weft::option::backlog, 8192)
            .child_option(weft::option::tcp_nodelay, true)
            .child_handler([router, tls](weft::Channel& ch) {
              if (tls) {
                ch.pipeline().add_last("tls-or-not", std::make_shared<weft::OptionalTlsHandler>(tls, add_http));
              } else {
                ch.pipeline().add_last("detect", std::make_shared<weft::http2::CleartextDetector>());
              }
              ch.pipeline().add_last("router", router);
            })
            .bind(weft::SocketAddress::from("127.0.0.1", options.port))
            .get();
    std::printf("weft-static-server serving %s on %s (%s, %zu loop(s)%s)\n", options.root.c_str(),
                server->local_address().to_string().c_str(), options.transport.c_str(), options.loops,
                tls ? ", TLS and cleartext on one port" : "");
    std::fflush(stdout);
    server->close_future().wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-static-server: %s\n", e.what());
    return 1;
  }
}
