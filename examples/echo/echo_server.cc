// weft-echo-server: echoes every byte it receives, on N consecutive ports.
//
//   weft-echo-server --port 9400 [--ports 4] [--loops 2] [--host 127.0.0.1]
//   weft-echo-server --port 9443 --tls-cert cert.pem --tls-key key.pem      (TLS: try openssl s_client)
//
// One ServerBootstrap per port, all sharing one EventLoopGroup. The echo handler flushes once per
// read batch and uses auto-read as its backpressure switch: while the channel is unwritable (the
// peer does not read what we echo) it stops reading, so such a peer cannot grow the server's memory.
// Runs until SIGINT or SIGTERM, then shuts the loops down gracefully.

#include <signal.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "flags.h"

#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/log.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/transport/io_uring.h"
#include "weft/transport/transport_named.h"

namespace {

class EchoHandler final : public weft::InboundHandler<weft::ByteBuf> {
 public:
  void channel_read(weft::Context& ctx, weft::ByteBuf&& message) override { ctx.write(std::move(message)); }

  void channel_read_complete(weft::Context& ctx) override { ctx.flush(); }

  // Backpressure: stop reading while what we echo cannot leave; resume once it drained.
  void writability_changed(weft::Context& ctx) override {
    ctx.channel().set_auto_read(ctx.channel().is_writable());
    ctx.fire_writability_changed();
  }

  void exception_caught(weft::Context& ctx, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const std::system_error& e) {
      // Resets and broken pipes are what peers do; not worth more than a debug line.
      weft::log(weft::LogLevel::debug, "echo: channel {}: {}", ctx.channel().id(), e.what());
    } catch (const std::exception& e) {
      weft::log(weft::LogLevel::warn, "echo: channel {}: {}", ctx.channel().id(), e.what());
    } catch (...) {
      weft::log(weft::LogLevel::warn, "echo: channel {}: unknown error", ctx.channel().id());
    }
    ctx.close();
  }
};

struct Options {
  std::string host = "127.0.0.1";
  int port = -1;
  int ports = 1;
  int loops = 0;  // 0: one per core
  std::string transport = "epoll";
  int zero_copy_threshold = 0;  // io_uring only; 0: off
  std::string tls_cert;         // with tls_key: TLS on every port
  std::string tls_key;
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: weft-echo-server --port P [--ports N] [--loops L] [--host H] [--transport T]\n"
               "\n"
               "Echoes every byte it receives on ports P .. P+N-1 until SIGINT or SIGTERM.\n"
               "\n"
               "  --port P    first port to listen on (required, 1-65535)\n"
               "  --ports N   number of consecutive ports (default 1)\n"
               "  --loops L   event loops (default: number of cores)\n"
               "  --host H    numeric address to listen on (default 127.0.0.1)\n"
               "  --transport T  epoll (default), io_uring or blocking\n"
               "  --zero-copy-threshold B  io_uring: zero-copy sends of B bytes or more (default 0: off)\n"
               "  --tls-cert FILE  TLS on every port: the certificate chain (PEM, leaf first); needs --tls-key\n"
               "  --tls-key FILE   the chain's private key (PEM)\n"
               "  --help      show this text\n");
}

// Returns 0 to go on, or the exit status (1: bad flags; -1: --help, exit 0).
int parse_flags(int argc, char** argv, Options& options) {
  int rc = echo_flags::for_each_flag(argc, argv, "weft-echo-server", print_usage, [&](std::string_view flag, std::string_view value) {
    using echo_flags::parse_int;
    using echo_flags::valid;
    if (flag == "--port") return valid(parse_int(value, 1, 65535, options.port));
    if (flag == "--ports") return valid(parse_int(value, 1, 65535, options.ports));
    if (flag == "--loops") return valid(parse_int(value, 1, 1024, options.loops));
    if (flag == "--transport") {
      options.transport = std::string(value);
      try {
        (void)weft::transport_named(options.transport);
      } catch (const std::invalid_argument&) {
        return echo_flags::Verdict::bad_value;
      }
      return echo_flags::Verdict::ok;
    }
    if (flag == "--zero-copy-threshold") return valid(parse_int(value, 0, 1 << 30, options.zero_copy_threshold));
    if (flag == "--host") {
      options.host = std::string(value);
      return echo_flags::Verdict::ok;
    }
    if (flag == "--tls-cert") {
      options.tls_cert = std::string(value);
      return echo_flags::Verdict::ok;
    }
    if (flag == "--tls-key") {
      options.tls_key = std::string(value);
      return echo_flags::Verdict::ok;
    }
    return echo_flags::Verdict::unknown;
  });
  if (rc != 0) return rc;
  if (options.port < 0) {
    std::fprintf(stderr, "weft-echo-server: --port is required (see --help)\n");
    return 1;
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    std::fprintf(stderr, "weft-echo-server: --tls-cert and --tls-key go together\n");
    return 1;
  }
  if (options.port + options.ports - 1 > 65535) {
    std::fprintf(stderr, "weft-echo-server: ports %d..%d go past 65535\n", options.port,
                 options.port + options.ports - 1);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (int rc = parse_flags(argc, argv, options); rc != 0) return rc < 0 ? 0 : rc;

  weft::SocketAddress first;
  try {
    first = weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.port));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-echo-server: bad --host '%s': %s\n", options.host.c_str(), e.what());
    return 1;
  }

  // Block the stop signals before any loop thread starts, so that every thread inherits the mask
  // and only sigwait() below receives them. A shell starts background jobs with SIGINT ignored,
  // and an ignored signal is discarded instead of left pending: take the default back first.
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (int err = pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); err != 0) {
    std::fprintf(stderr, "weft-echo-server: pthread_sigmask: %s\n", std::strerror(err));
    return 1;
  }

  weft::Transport* transport = &weft::transport_named(options.transport);
  std::unique_ptr<weft::IoUringTransport> tuned;
  if (options.transport == "io_uring" && options.zero_copy_threshold > 0) {
    tuned = std::make_unique<weft::IoUringTransport>(
        weft::IoUringOptions{.zero_copy_threshold = static_cast<std::size_t>(options.zero_copy_threshold)});
    transport = tuned.get();
  }
  weft::EventLoopGroup loops(*transport, static_cast<std::size_t>(options.loops), "echo");

  weft::TlsContextPtr tls;
  if (!options.tls_cert.empty()) {
    try {
      tls = weft::TlsContext::server().certificate_chain_file(options.tls_cert).private_key_file(options.tls_key).build();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-echo-server: TLS: %s\n", e.what());
      loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
      return 1;
    }
  }

  weft::ServerBootstrap bootstrap;
  bootstrap.group(loops)
      .option(weft::option::backlog, 1024)
      .child_option(weft::option::tcp_nodelay, true)
      .child_handler([tls](weft::Channel& channel) {
        if (tls) channel.pipeline().add_last("tls", std::make_shared<weft::TlsHandler>(tls));
        channel.pipeline().add_last("echo", std::make_shared<EchoHandler>());
      });

  std::vector<weft::ChannelPtr> servers;
  for (int i = 0; i < options.ports; ++i) {
    auto port = static_cast<std::uint16_t>(options.port + i);
    weft::SocketAddress address = weft::SocketAddress::from(options.host, port);
    try {
      servers.push_back(bootstrap.bind(address).get());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-echo-server: cannot listen on %s: %s\n", address.to_string().c_str(), e.what());
      loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
      return 1;
    }
  }

  if (options.ports == 1) {
    std::printf("weft-echo-server: listening on %s with %zu event loops%s\n", first.to_string().c_str(), loops.size(),
                tls ? ", TLS" : "");
  } else {
    std::printf("weft-echo-server: listening on %s ports %d-%d with %zu event loops%s\n", options.host.c_str(),
                options.port, options.port + options.ports - 1, loops.size(), tls ? ", TLS" : "");
  }
  std::fflush(stdout);

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) != 0) {
  }
  std::printf("weft-echo-server: %s, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);

  bool clean = loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(5))
                   .wait_for(std::chrono::seconds(10));
  if (!clean) {
    std::fprintf(stderr, "weft-echo-server: event loops did not terminate in time\n");
    return 1;
  }
  return 0;
}
