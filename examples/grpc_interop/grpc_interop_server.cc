// weft-grpc-interop-server: grpc's interop server (doc/interop-test-descriptions.md, "Server") on
// weft's generated service: grpc.testing.TestService on --port until SIGTERM or SIGINT.
//
//   weft-grpc-interop-server --port=10000      # 0: any free port, printed

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "interop/interop_service.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/transport/transport_named.h"
#include "weft/weft.h"

namespace {

struct Options {
  long port = 10000;
  std::string host = "127.0.0.1";
  std::string transport = "epoll";
};

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: weft-grpc-interop-server [--port=N] [--host=H] [--transport=epoll|io_uring|blocking]\n"
               "  --port N          default 10000 (0: any free port, printed)\n"
               "  --host H          default 127.0.0.1\n"
               "  --transport NAME  epoll (default), io_uring or blocking\n");
  std::exit(code);
}

// grpc's flags: --name=value, or --name value.
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    if (flag == "--help" || flag == "-h") usage(0);
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "weft-grpc-interop-server: %s needs a value\n", flag.c_str());
      usage(2);
    }
    if (flag == "--port") {
      char* end = nullptr;
      o.port = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || o.port < 0 || o.port > 65535) {
        std::fprintf(stderr, "weft-grpc-interop-server: --port: '%s' is not a port\n", value.c_str());
        std::exit(2);
      }
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--transport") {
      o.transport = value;
    } else if (flag == "--use_tls" && value == "false") {
      // plaintext, the only mode here
    } else {
      std::fprintf(stderr, "weft-grpc-interop-server: unknown flag %s=%s\n", flag.c_str(), value.c_str());
      usage(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  weft::Transport* transport = nullptr;
  try {
    transport = &weft::transport_named(options.transport);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-grpc-interop-server: %s\n", e.what());
    return 2;
  }
  // The signals the server waits for, blocked before any thread starts so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  weft::grpc::ServiceRegistry services;
  weft::grpc::interop::add_test_service(services);
  const weft::http2::Settings settings = services.http2_settings();
  // On the blocking transport every connection takes a loop (a thread) to itself, the listener one too.
  weft::EventLoopGroup loops(*transport, options.transport == "blocking" ? 16 : 1, "interop");
  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(loops)
                 .child_handler([settings](weft::Channel& ch) {
                   ch.pipeline().add_last("http2", std::make_shared<weft::http2::ServerCodec>(settings));
                 })
                 .bind(weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.port)))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-grpc-interop-server: cannot listen on %s:%ld: %s\n", options.host.c_str(), options.port,
                 e.what());
    return 1;
  }
  std::printf("weft-grpc-interop-server listening on %s\n", server->local_address().to_string().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server->close().wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  return 0;
}
