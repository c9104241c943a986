// weft-tcp-proxy: a TCP relay (Netty's HexDumpProxy, without the dump). Every connection accepted on
// --port gets a connection of its own to --remote; bytes flow both ways unchanged.
//
//   weft-tcp-proxy --port 9500 --remote 127.0.0.1:9400 [--loops 2] [--transport epoll|io_uring|blocking]
//
// What it shows (docs/proxy.md walks through it):
// - Both channels on one loop: the outbound channel connects with Bootstrap::group(inbound.loop()),
//   so the two call each other on one thread, without posting. (A blocking loop serves one channel:
//   there the outbound channel takes another loop of the group, and the same calls are posted.)
// - Backpressure both ways: each side counts the bytes it relayed that the other channel has not
//   written yet (write completions) and stops reading (auto-read off) while they pass a mark, so
//   a peer that reads slower than the other sends cannot grow the proxy's memory.
// - A half-close that loses nothing: when one side's input ends (its FIN), the other side's output
//   is shut down from the completion of a flush, once every relayed byte has been written.
// - Errors close both sides.
// - Metrics: with --admin-port, /metrics (the connections, the loops, the bytes relayed each way and
//   the backend connections that failed), /healthz, and /readyz (503 from the drain's start).
// Runs until SIGINT or SIGTERM, then drains (weft::drain_server): the listener closes, the relays
// open have --drain-timeout to end (a TCP relay cannot tell where a request ends: it waits for its
// peers to close), what is left is closed, and the loops shut down.

#include <signal.h>

#include <any>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/context.h"
#include "weft/channel/drain.h"
#include "weft/channel/events.h"
#include "weft/channel/handler.h"
#include "weft/core/error.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/log.h"
#include "weft/metrics/admin/admin_server.h"
#include "weft/metrics/event_loop_metrics.h"
#include "weft/metrics/registry.h"
#include "weft/transport/transport_named.h"

namespace {

// The longest a side that closed after its partner lingers for its own peer's last bytes.
constexpr auto kLinger = std::chrono::seconds(2);
// The longest it waits for that peer to read what was relayed to it.
constexpr auto kFlushTimeout = std::chrono::seconds(30);

// The proxy's own series, in the global registry (looked up once; an update is the thread's own cell).
struct ProxyMetrics {
  weft::metrics::Family& bytes = weft::metrics::Registry::global().counter(
      "weft_proxy_relayed_bytes", "Bytes read from one side and relayed to the other.", {"direction"});
  weft::metrics::Counter to_backend = bytes.counter({"to_backend"});
  weft::metrics::Counter to_client = bytes.counter({"to_client"});
  weft::metrics::Counter connect_failures =
      weft::metrics::Registry::global()
          .counter("weft_proxy_backend_connect_failures", "Backend connections that could not be made.", {})
          .counter({});
};
const ProxyMetrics& proxy_metrics() {
  static const ProxyMetrics metrics;
  return metrics;
}

// One side of a relayed connection: what its channel reads is written to the partner channel. Each
// side has its own handler; both run on one loop, except on the blocking transport, where each
// uses only the partner channel's thread-safe calls.
class RelayHandler final : public weft::InboundHandler<weft::ByteBuf> {
  // Bytes relayed to the partner and not yet written to its socket: this side stops reading above
  // kPauseAbove and reads again at kResumeAtOrBelow. The partner's writability says the same for
  // its own write queue, but not for writes still on their way to its loop from another thread
  // (the blocking transport's two threads): each write's completion covers both.
  static constexpr std::size_t kPauseAbove = 128 * 1024;
  static constexpr std::size_t kResumeAtOrBelow = 32 * 1024;
  struct Backlog {  // used on this side's loop only
    std::size_t unwritten = 0;
    bool paused = false;
  };

 public:
  // `partner`: the other side's channel, or null until it has connected (the inbound side).
  explicit RelayHandler(weft::ChannelPtr partner = nullptr)
      : relayed_(partner == nullptr ? proxy_metrics().to_backend : proxy_metrics().to_client),
        partner_(std::move(partner)) {}

  // Loop thread of this side. The outbound channel has connected: relay to it and start reading.
  void start_relaying(weft::Channel& self, weft::ChannelPtr partner) {
    if (!self.is_open()) {  // the client left while we connected
      partner->close();
      return;
    }
    partner_ = std::move(partner);
    self.set_auto_read(true);
  }

  void channel_read(weft::Context& ctx, weft::ByteBuf&& bytes) override {
    if (partner_ == nullptr) return;
    // Backpressure: count what the partner has not written yet, and stop reading above the mark.
    const std::size_t n = bytes.readable_bytes();
    relayed_.inc(n);
    backlog_->unwritten += n;
    weft::Promise<void> written(&ctx.channel().loop());  // its listener runs on this side's loop
    written.future().add_listener(
        [backlog = backlog_, self = ctx.channel().shared_from_this(), n](const weft::Future<void>&) {
          backlog->unwritten -= n;
          if (backlog->paused && backlog->unwritten <= kResumeAtOrBelow) {
            backlog->paused = false;
            self->set_auto_read(true);
          }
        });
    partner_->write(std::move(bytes), std::move(written));
    if (!backlog_->paused && backlog_->unwritten > kPauseAbove) {
      backlog_->paused = true;
      ctx.channel().set_auto_read(false);
    }
  }

  void channel_read_complete(weft::Context&) override {
    if (partner_ != nullptr) partner_->flush();
  }

  void user_event(weft::Context& ctx, const std::any& event) override {
    if (event.type() == typeid(weft::ChannelShutdownRequestedEvent)) {
      // A drain (SIGTERM): a TCP relay cannot tell where a request ends, so it ends when its peers
      // end it (or at the drain's deadline).
      ctx.channel().end_for_shutdown_itself();
      return;
    }
    if (event.type() != typeid(weft::ChannelInputShutdownEvent) || partner_ == nullptr) {
      ctx.fire_user_event(event);
      return;
    }
    // This side's peer sent FIN: the partner's peer gets one too, after the last relayed byte.
    weft::Promise<void> written;
    written.future().add_listener([partner = partner_](const weft::Future<void>& f) {
      if (f.error() == nullptr) partner->shutdown_output();
    });
    partner_->flush(std::move(written));
  }

  void channel_inactive(weft::Context& ctx) override {
    // The partner sends what it was given, then closes (bounded, should its peer stop reading).
    if (weft::ChannelPtr partner = std::move(partner_)) partner->close_gracefully(kLinger, kFlushTimeout);
    ctx.fire_channel_inactive();
  }

  void exception_caught(weft::Context& ctx, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const std::system_error& e) {  // resets and broken pipes are what peers do
      weft::log(weft::LogLevel::debug, "proxy: channel {}: {}", ctx.channel().id(), e.what());
    } catch (const std::exception& e) {
      weft::log(weft::LogLevel::warn, "proxy: channel {}: {}", ctx.channel().id(), e.what());
    }
    if (weft::ChannelPtr partner = std::move(partner_)) partner->close();
    ctx.close();
  }

 private:
  weft::metrics::Counter relayed_;  // the bytes this side relays, by direction
  weft::ChannelPtr partner_;
  std::shared_ptr<Backlog> backlog_ = std::make_shared<Backlog>();  // shared with pending completions
};

// The inbound channel's initializer: relays to a new connection to `remote`, made on its own loop.
class Frontend {
 public:
  Frontend(weft::EventLoopGroup& loops, weft::SocketAddress remote) : loops_(loops), remote_(remote) {}

  void init(weft::Channel& inbound) const {
    auto relay = std::make_shared<RelayHandler>();
    inbound.pipeline().add_last("relay", relay);
    weft::Bootstrap outbound;
    outbound.option(weft::option::allow_half_closure, true).option(weft::option::tcp_nodelay, true);
    if (weft::transport_of(loops_).name() == "blocking") {
      outbound.group(loops_);  // a blocking loop serves one channel
    } else {
      outbound.group(inbound.loop());
    }
    weft::ChannelPtr in = inbound.shared_from_this();
    outbound.handler([in](weft::Channel& ch) { ch.pipeline().add_last("relay", std::make_shared<RelayHandler>(in)); });
    outbound.connect(remote_).add_listener([in, relay](const weft::Future<weft::ChannelPtr>& connected) {
      if (auto error = connected.error()) {
        proxy_metrics().connect_failures.inc();
        weft::log(weft::LogLevel::warn, "proxy: cannot connect for channel {}: {}", in->id(),
                  weft::describe_exception(error));
        in->close();
        return;
      }
      weft::ChannelPtr out = connected.get();
      in->loop().execute([in, relay, out] { relay->start_relaying(*in, out); });
    });
  }

 private:
  weft::EventLoopGroup& loops_;
  weft::SocketAddress remote_;
};

struct Options {
  std::string host = "127.0.0.1";
  int port = -1;
  std::string remote;
  int loops = 0;  // 0: one per core
  std::string transport = "epoll";
  int drain_timeout_s = 10;
  int admin_port = -1;  // -1: no admin listener
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: weft-tcp-proxy --port P --remote HOST:PORT [--host H] [--loops L] [--transport T]\n"
               "                  [--drain-timeout S] [--admin-port P]\n"
               "\n"
               "Relays every connection accepted on H:P to HOST:PORT, both ways, until SIGINT or SIGTERM.\n"
               "\n"
               "  --port P          port to listen on (required, 1-65535)\n"
               "  --remote HOST:PORT  numeric address to relay to (required)\n"
               "  --host H          numeric address to listen on (default 127.0.0.1)\n"
               "  --loops L         event loops (default: number of cores)\n"
               "  --transport T     epoll (default), io_uring or blocking\n"
               "  --drain-timeout S on SIGINT or SIGTERM: stop accepting, give the relays open S seconds to\n"
               "                    end, then close them (default 10)\n"
               "  --admin-port P    serve /metrics (Prometheus or OpenMetrics text), /healthz and /readyz on\n"
               "                    H:P (0: any free port, printed)\n"
               "  --help            show this text\n");
}

bool parse_int(std::string_view text, int min, int max, int& out) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) return false;
  out = value;
  return true;
}

// "HOST:PORT" (an IPv6 host in brackets) as an address; throws std::invalid_argument.
weft::SocketAddress parse_address(std::string_view text) {
  const auto colon = text.rfind(':');
  int port = 0;
  if (colon == std::string_view::npos || !parse_int(text.substr(colon + 1), 1, 65535, port)) {
    throw std::invalid_argument("expected HOST:PORT");
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return weft::SocketAddress::from(std::string(host), static_cast<std::uint16_t>(port));
}

// Returns 0 to go on, or the exit status (1: bad flags; -1: --help, exit 0).
int parse_flags(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      print_usage(stdout);
      return -1;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "weft-tcp-proxy: %s needs a value (see --help)\n", argv[i]);
      return 1;
    }
    std::string_view value = argv[++i];
    bool ok = true;
    if (flag == "--port") {
      ok = parse_int(value, 1, 65535, options.port);
    } else if (flag == "--loops") {
      ok = parse_int(value, 1, 1024, options.loops);
    } else if (flag == "--admin-port") {
      ok = parse_int(value, 0, 65535, options.admin_port);
    } else if (flag == "--drain-timeout") {
      ok = parse_int(value, 0, 86400, options.drain_timeout_s);
    } else if (flag == "--host") {
      options.host = std::string(value);
    } else if (flag == "--remote") {
      options.remote = std::string(value);
    } else if (flag == "--transport") {
      options.transport = std::string(value);
      ok = value == "epoll" || value == "io_uring" || value == "blocking";
    } else {
      std::fprintf(stderr, "weft-tcp-proxy: unknown flag %s (see --help)\n", argv[i - 1]);
      return 1;
    }
    if (!ok) {
      std::fprintf(stderr, "weft-tcp-proxy: bad value '%s' for %s (see --help)\n", argv[i], argv[i - 1]);
      return 1;
    }
  }
  if (options.port < 0 || options.remote.empty()) {
    std::fprintf(stderr, "weft-tcp-proxy: --port and --remote are required (see --help)\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (int rc = parse_flags(argc, argv, options); rc != 0) return rc < 0 ? 0 : rc;
  weft::SocketAddress local, remote;
  try {
    local = weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.port));
    remote = parse_address(options.remote);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-tcp-proxy: bad address: %s\n", e.what());
    return 1;
  }

  // The stop signals go to sigwait() below only: blocked before any loop thread starts (a shell
  // starts background jobs with SIGINT ignored, so the default comes back first).
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (int err = pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); err != 0) {
    std::fprintf(stderr, "weft-tcp-proxy: pthread_sigmask: %s\n", std::strerror(err));
    return 1;
  }

  weft::EventLoopGroup loops(weft::transport_named(options.transport), static_cast<std::size_t>(options.loops),
                             "proxy");
  Frontend frontend(loops, remote);
  weft::ServerBootstrap bootstrap;
  bootstrap.group(loops)
      .option(weft::option::backlog, 1024)
      .child_option(weft::option::tcp_nodelay, true)
      .child_option(weft::option::allow_half_closure, true)
      .child_option(weft::option::auto_read, false)  // until the outbound channel has connected
      .child_handler([&frontend](weft::Channel& inbound) { frontend.init(inbound); });
  weft::ChannelPtr server;
  try {
    server = bootstrap.bind(local).get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-tcp-proxy: cannot listen on %s: %s\n", local.to_string().c_str(), e.what());
    loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
    return 1;
  }
  // The admin endpoints on a loop of their own: a scrape never waits behind the relays.
  std::optional<weft::metrics::EventLoopMetrics> loop_metrics;
  std::optional<weft::metrics::AdminServer> admin;
  if (options.admin_port >= 0) {
    if (options.transport != "blocking") loop_metrics.emplace(loops);  // blocking: a loop per channel
    try {
      admin.emplace(weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.admin_port)),
                    weft::metrics::Registry::global(), "proxy-admin");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-tcp-proxy: cannot listen on admin port %d: %s\n", options.admin_port, e.what());
      server->close();
      loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
      return 1;
    }
    std::printf("weft-tcp-proxy: admin on %s\n", admin->local_address().to_string().c_str());
  }
  std::printf("weft-tcp-proxy: listening on %s, relaying to %s with %zu event loops (%s)\n", local.to_string().c_str(),
              remote.to_string().c_str(), loops.size(), options.transport.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) != 0) {
  }
  if (admin) admin->set_not_ready();  // before the listener closes: a load balancer looks here first
  std::printf("weft-tcp-proxy: %s, draining\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  const weft::DrainReport drained = weft::drain_server(server, std::chrono::seconds(options.drain_timeout_s)).get();
  std::printf("weft-tcp-proxy: drained: %zu relay(s) open, %zu ended by their peers, %zu closed at the %d s deadline\n",
              drained.open, drained.drained, drained.forced, options.drain_timeout_s);
  std::fflush(stdout);
  const bool clean = loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(5))
                         .wait_for(std::chrono::seconds(10));
  admin.reset();
  loop_metrics.reset();
  if (!clean) {
    std::fprintf(stderr, "weft-tcp-proxy: event loops did not terminate in time\n");
    return 1;
  }
  return 0;
}
