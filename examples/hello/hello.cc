// weft-hello: the TechEmpower-style hello server, in every threading model weft offers.
//   /plaintext        "Hello, World!" as text/plain
//   /json             {"message":"Hello, World!"}, a new object serialised per request (RapidJSON)
//   /plaintext-async  as /plaintext, the body produced on an executor thread
//   /json-async       as /json, likewise
//   /downstream?ms=N  waits N ms (default 250) like a slow downstream call; see downstream.h for how
//                     each mode waits (loop-async hands the wait to --offload-threads executors)
//   /ws               WebSocket (HTTP/1.1 upgrade): echoes each text and binary message; callbacks in
//                     the loop modes, a coroutine per connection in the coroutine modes; accepts
//                     permessage-deflate when the client offers it (--no-ws-deflate: never)
//
//   weft-hello --port 8080 --loops 1 --transport epoll --mode coroutine
//   weft-hello --port 8443 --tls-cert cert.pem --tls-key key.pem     (HTTPS: ALPN h2 or http/1.1)
//
// Every route is served over HTTP/1.1 and over cleartext HTTP/2 (h2c) on the same port: a connection
// that starts with the HTTP/2 preface, or whose first request asks for Upgrade: h2c, gets the HTTP/2
// codec, any other the HTTP/1.1 one (http2::CleartextDetector); the handlers are the same.
// Over TLS, ALPN chooses: h2 or http/1.1 (and no Upgrade: h2c). --http1-only leaves HTTP/2 out.
//
// Modes (how handlers run, and how the -async routes wait for their executor):
//   loop             the router runs on the event loop; -async routes block the loop on the future
//   loop-async       the same server: the name of the column that measures the -async routes
//   offload          the router runs on an executor group (--offload-threads), in order per channel
//   coroutine        every route a coroutine, one task per request on the loop (HTTP/2 streams run
//                    concurrently); -async routes block on the future
//   coroutine-async  as coroutine, but -async routes co_await offload(...) and the loop runs on

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "downstream.h"
#include "streams.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/core/executor_group.h"
#include "weft/metrics/admin/admin_server.h"
#include "weft/metrics/allocator_metrics.h"
#include "weft/metrics/event_loop_metrics.h"
#include "weft/metrics/http_server_metrics.h"
#include "weft/weft.h"

namespace {

using weft::http::HttpRequest;
using weft::http::HttpResponse;
using weft::http::Request;

constexpr std::string_view kPlain = "Hello, World!";
constexpr std::array<std::string_view, 5> kModes = {"loop", "loop-async", "offload", "coroutine", "coroutine-async"};

struct Options {
  std::uint16_t port = 8080;
  std::string host = "0.0.0.0";
  std::size_t loops = 0;
  std::size_t async_threads = 2;
  std::size_t offload_threads = 4;
  std::size_t max_connections = 1024;
  std::string transport = "epoll";
  std::string mode = "loop";
  std::string accept = "acceptor";  // acceptor | reuseport | least-connections
  bool pin = false;                 // loop i on the i-th allowed CPU
  bool http2 = true;
  std::string tls_cert;  // with tls_key: every route over HTTPS
  std::string tls_key;
  long drain_timeout_s = 10;     // SIGTERM/SIGINT: connections have this long to end, then are closed
  long admin_port = -1;          // -1: no admin listener
  long stall_threshold_ms = -1;  // -1: the loops' default (100 ms)
  bool metrics = true;
  bool ws_deflate = true;  // /ws accepts permessage-deflate offers
};

[[noreturn]] void usage(int code) {
  std::fprintf(
      code == 0 ? stdout : stderr,
      "usage: weft-hello [--port P] [--host H] [--loops N] [--transport epoll|blocking] [--mode MODE]\n"
      "                  [--accept acceptor|reuseport|least-connections] [--pin] [--async-threads T] "
      "[--offload-threads T] "
      "[--max-connections N] [--http1-only]\n"
      "                  [--tls-cert FILE --tls-key FILE] [--drain-timeout S] [--admin-port P] [--no-metrics]\n"
      "                  [--no-ws-deflate]\n"
      "                  [--stall-threshold MS]\n"
      "  --loops N            event loops (default: one per core; epoll)\n"
      "  --transport NAME     epoll, or blocking (a thread per connection: with it, `loop` means\n"
      "                       the handler runs on the connection's own thread)\n"
      "  --max-connections N  blocking: connections served at once, i.e. threads (default 1024)\n"
      "  --mode MODE          loop | loop-async | offload | coroutine | coroutine-async\n"
      "  --accept MODE        acceptor: one listener hands connections to the loops round-robin\n"
      "                       (default); reuseport: a SO_REUSEPORT listener per loop, each keeping\n"
      "                       what it accepts (epoll, io_uring); least-connections: one listener\n"
      "                       hands each connection to the loop with the fewest open\n"
      "  --pin                pin loop i to the i-th CPU this process may run on (wrapping)\n"
      "  --async-threads T    executor threads that produce the -async routes' bodies (default 2)\n"
      "  --offload-threads T  executor threads that run the handlers in offload mode, and the\n"
      "                       /downstream waits in loop-async mode (default 4)\n"
      "  --http1-only         HTTP/1.1 only (default: HTTP/1.1 and h2c, chosen by the first bytes)\n"
      "  --tls-cert FILE      serve HTTPS, h2 and HTTP/1.1 chosen by ALPN (HTTP/1.1 only with\n"
      "                       --http1-only): the certificate chain (PEM, leaf first); needs --tls-key\n"
      "  --tls-key FILE       the chain's private key (PEM)\n"
      "  --drain-timeout S    on SIGTERM or SIGINT: stop accepting, let open connections end\n"
      "                       gracefully (HTTP/1.1 Connection: close, HTTP/2 GOAWAY) for at most S\n"
      "                       seconds, close what is left, exit 0 (default 10)\n"
      "  --admin-port P       serve /metrics (Prometheus or OpenMetrics text), /healthz and /readyz\n"
      "                       (503 once draining) on port P of --host, on a loop of their own\n"
      "  --no-metrics         weft's request metrics off\n"
      "  --no-ws-deflate      /ws declines permessage-deflate (default: accepted when offered)\n"
      "  --stall-threshold MS with --admin-port: a task or read running longer than MS is a stall,\n"
      "                       logged and counted (default 100; 0: stalls are not watched)\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-hello: %s needs a value\n", a.c_str());
        usage(2);
      }
      return argv[++i];
    };
    auto number = [&](long lo, long hi) {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < lo || n > hi) {
        std::fprintf(stderr, "weft-hello: %s: '%s' is not a number in [%ld, %ld]\n", a.c_str(), v.c_str(), lo, hi);
        std::exit(2);
      }
      return n;
    };
    if (a == "--help" || a == "-h") usage(0);
    else if (a == "--port") o.port = static_cast<std::uint16_t>(number(0, 65535));
    else if (a == "--host") o.host = value();
    else if (a == "--loops") o.loops = static_cast<std::size_t>(number(1, 1024));
    else if (a == "--async-threads") o.async_threads = static_cast<std::size_t>(number(1, 1024));
    else if (a == "--offload-threads") o.offload_threads = static_cast<std::size_t>(number(1, 1024));
    else if (a == "--transport") o.transport = value();
    else if (a == "--max-connections") o.max_connections = static_cast<std::size_t>(number(1, 100000));
    else if (a == "--mode") o.mode = value();
    else if (a == "--accept")
      o.accept = value();
    else if (a == "--pin")
      o.pin = true;
    else if (a == "--http1-only") o.http2 = false;
    else if (a == "--tls-cert") o.tls_cert = value();
    else if (a == "--tls-key") o.tls_key = value();
    else if (a == "--drain-timeout")
      o.drain_timeout_s = number(0, 86400);
    else if (a == "--admin-port")
      o.admin_port = number(0, 65535);
    else if (a == "--no-metrics")
      o.metrics = false;
    else if (a == "--no-ws-deflate")
      o.ws_deflate = false;
    else if (a == "--stall-threshold")
      o.stall_threshold_ms = number(0, 3600000);
    else {
      std::fprintf(stderr, "weft-hello: unknown option '%s'\n", a.c_str());
      usage(2);
    }
  }
  try {
    (void)weft::transport_named(o.transport);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-hello: %s\n", e.what());
    std::exit(2);
  }
  if (o.accept != "acceptor" && o.accept != "reuseport" && o.accept != "least-connections") {
    std::fprintf(stderr, "weft-hello: unknown accept mode '%s'; available: acceptor, reuseport, least-connections\n",
                 o.accept.c_str());
    std::exit(2);
  }
  if (o.accept == "reuseport" && o.transport == "blocking") {
    std::fprintf(stderr,
                 "weft-hello: --accept reuseport needs a loop that serves many connections (epoll, io_uring)\n");
    std::exit(2);
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    std::fprintf(stderr, "weft-hello: --tls-cert and --tls-key go together\n");
    std::exit(2);
  }
  if (std::find(kModes.begin(), kModes.end(), o.mode) == kModes.end()) {
    std::fprintf(stderr, "weft-hello: unknown mode '%s'; available: loop, loop-async, offload, coroutine, coroutine-async\n",
                 o.mode.c_str());
    std::exit(2);
  }
  return o;
}

weft::AcceptMode accept_mode(const std::string& name) {
  if (name == "reuseport") return weft::AcceptMode::reuseport;
  if (name == "least-connections") return weft::AcceptMode::least_connections;
  return weft::AcceptMode::acceptor;
}

// A JSON writer and its output, reused: a fresh rapidjson::Writer allocates its allocator and level
// stack from the heap (two allocations per response, 6% of /json's instructions under callgrind).
struct JsonOut {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer;
};

// Serialises a new {"message": ...} object into `out`; the view is valid until its next use.
std::string_view json_body(JsonOut& out) {
  rapidjson::StringBuffer& buffer = out.buffer;
  rapidjson::Writer<rapidjson::StringBuffer>& writer = out.writer;
  buffer.Clear();
  writer.Reset(buffer);
  writer.StartObject();
  constexpr std::string_view kKey = "message";
  writer.Key(kKey.data(), static_cast<rapidjson::SizeType>(kKey.size()));
  writer.String(kPlain.data(), static_cast<rapidjson::SizeType>(kPlain.size()));
  writer.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}
std::string_view json_body() {
  thread_local JsonOut out;
  return json_body(out);
}

// Validated once; every response shares them.
const weft::http::HeaderBlock kTextHeaders = weft::http::HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");
const weft::http::HeaderBlock kJsonHeaders =
    weft::http::HeaderBlock().add("Server", "weft").add("Content-Type", "application/json");

HttpResponse response(const weft::http::HeaderBlock& headers, std::string_view body) {
  HttpResponse r(200);
  r.headers(headers).body_view(body);
  return r;  // constructed in place: no move of the response's inline header space
}

// The -async routes' bodies, made on an executor thread while the caller blocks on the future:
// the pattern whose cost the -async columns measure.
std::string blocking_async_body(weft::EventLoopGroup& executors, bool json) {
  weft::Promise<std::string> body;
  executors.next().execute([body, json]() mutable { body.set_value(std::string(json ? json_body() : kPlain)); });
  return body.future().get();
}

// The routes of the loop, loop-async and offload modes: callbacks that return their response.
std::shared_ptr<weft::http::Router> make_router(weft::EventLoopGroup& executors) {
  auto router = std::make_shared<weft::http::Router>();
  router->get("/plaintext", [](Request&) { return response(kTextHeaders, kPlain); });
  router->get("/json", [](Request&) { return response(kJsonHeaders, json_body()); });
  // The body is a string made per request: the response owns a copy (a view of it would dangle
  // where the response is encoded later, on another thread).
  router->get("/plaintext-async", [&executors](Request&) {
    return std::move(HttpResponse(200).headers(kTextHeaders).body(blocking_async_body(executors, false)));
  });
  router->get("/json-async", [&executors](Request&) {
    return std::move(HttpResponse(200).headers(kJsonHeaders).body(blocking_async_body(executors, true)));
  });
  return router;
}

// The coroutine modes: every route a coroutine, each request a task of its own on the loop, so the
// streams of one HTTP/2 connection are served concurrently. /plaintext and /json finish without
// suspending: their answer is encoded before the loop runs anything else, so /json may borrow the
// thread's JSON buffer. The -async routes await an executor (coroutine-async) or block on it.
std::shared_ptr<weft::http::Router> make_coroutine_router(weft::EventLoopGroup& executors, bool async_awaits) {
  auto router = std::make_shared<weft::http::Router>();
  router->get("/plaintext", [](Request&) -> weft::Task<HttpResponse> { co_return response(kTextHeaders, kPlain); });
  router->get("/json", [](Request&) -> weft::Task<HttpResponse> { co_return response(kJsonHeaders, json_body()); });
  for (const bool is_json : {false, true}) {
    router->get(is_json ? "/json-async" : "/plaintext-async",
                [&executors, async_awaits, is_json](Request&) -> weft::Task<HttpResponse> {
                  std::string body;
                  if (async_awaits) {
                    body = co_await weft::offload(executors,
                                                  [is_json] { return std::string(is_json ? json_body() : kPlain); });
                  } else {
                    body = blocking_async_body(executors, is_json);
                  }
                  co_return std::move(HttpResponse(200).headers(is_json ? kJsonHeaders : kTextHeaders).body(body));
                });
  }
  router->get("/downstream", [mode = std::string(async_awaits ? "coroutine-async" : "coroutine")](Request& request) {
    return hello::serve_downstream(request, mode);
  });
  return router;
}

// /ws: an echo of every text and binary message, in the form the mode's routes take; with `deflate`,
// permessage-deflate accepted when offered (weft's defaults: context takeover, 15-bit windows,
// messages under 128 bytes sent uncompressed).
void add_websocket_echo(weft::http::Router& router, bool coroutine, bool deflate) {
  weft::ws::UpgradeOptions options;
  options.deflate.enabled = deflate;
  if (coroutine) {
    weft::ws::websocket(
        router, "/ws",
        [](weft::Connection<weft::ws::Message>& c) -> weft::Task<> {
          for (;;) {
            weft::ws::Message message = co_await c.read();
            if (message.is_close()) co_return;
            co_await c.write(std::move(message));
            c.flush();
          }
        },
        std::move(options));
    return;
  }
  // write_and_flush per message: the codec holds a flush asked while it decodes a read batch until
  // the batch's end, so a client with several messages in flight gets their echoes in one write.
  weft::ws::websocket(
      router, "/ws",
      weft::ws::Callbacks{.on_message = [](weft::Context& ctx,
                                           weft::ws::Message& message) { ctx.write_and_flush(std::move(message)); }},
      std::move(options));
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  weft::metrics::set_instrumentation_enabled(options.metrics);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // every thread started below inherits the mask

  // On the blocking transport every connection takes a loop (a thread) of the child group to itself,
  // and the listener one of its own group.
  const bool blocking = options.transport == "blocking";
  weft::Transport& transport = weft::transport_named(options.transport);
  weft::EventLoopGroup::Options loop_options{blocking ? options.max_connections : options.loops, "hello", {}};
  if (options.pin) loop_options.cpus = weft::allowed_cpus();  // loop i on CPU i, wrapping
  weft::EventLoopGroup loops(transport, loop_options);
  // Connections each loop has served, printed at exit (how the accept mode spread them).
  auto accepted = std::make_shared<std::vector<std::atomic<std::uint64_t>>>(loops.size());
  std::vector<const weft::EventLoop*> loop_list;
  for (std::size_t i = 0; i < loops.size(); ++i) loop_list.push_back(&loops.at(i));
  std::optional<weft::EventLoopGroup> acceptor;
  if (blocking) acceptor.emplace(transport, 1, "hello-accept");
  weft::EventLoopGroup executors(weft::executor_driver_factory(), options.async_threads, "hello-exec");
  std::optional<weft::ExecutorGroup> offload_group;
  if (options.mode == "offload") offload_group.emplace(hello::offload_options(options.offload_threads));
  std::optional<weft::EventLoopGroup> downstream_pool;
  if (options.mode == "loop-async") downstream_pool.emplace(weft::executor_driver_factory(), options.offload_threads, "hello-down");

  const bool coroutine = options.mode.starts_with("coroutine");
  const bool async_awaits = options.mode == "coroutine-async";
  std::shared_ptr<weft::http::Router> router;
  if (coroutine) {
    router = make_coroutine_router(executors, async_awaits);
  } else {
    router = make_router(executors);
    hello::add_downstream_route(*router, options.mode, downstream_pool ? &*downstream_pool : nullptr);
  }
  add_websocket_echo(*router, coroutine, options.ws_deflate);
  hello::add_stream_routes(*router);
  weft::ExecutorGroup* offload = offload_group ? &*offload_group : nullptr;
  weft::TlsContextPtr tls;
  if (!options.tls_cert.empty()) {
    try {
      tls = weft::TlsContext::server()
                .certificate_chain_file(options.tls_cert)
                .private_key_file(options.tls_key)
                .application_protocols(options.http2 ? std::vector<std::string>{"h2", "http/1.1"}
                                                     : std::vector<std::string>{"http/1.1"})
                .build();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-hello: TLS: %s\n", e.what());
      return 1;
    }
  }

  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(acceptor ? *acceptor : loops, loops)
                 .accept_mode(accept_mode(options.accept))
                 .option(weft::option::backlog, 8192)
                 .child_option(weft::option::tcp_nodelay, true)
                 .child_handler([router, offload, tls, http2 = options.http2, accepted, loop_list](weft::Channel& ch) {
                   const auto at = std::find(loop_list.begin(), loop_list.end(), &ch.loop());
                   (*accepted)[static_cast<std::size_t>(at - loop_list.begin())].fetch_add(1,
                                                                                           std::memory_order_relaxed);
                   if (tls) {
                     // ALPN chooses the codec: h2, or HTTP/1.1 (where `Upgrade: h2c` is not honoured).
                     ch.pipeline().add_last("tls", std::make_shared<weft::TlsHandler>(tls));
                     ch.pipeline().add_last("alpn", std::make_shared<weft::ApplicationProtocolNegotiationHandler>(
                                                        "http/1.1", [](weft::Context& ctx, std::string_view protocol) {
                                                          if (protocol == "h2") {
                                                            ctx.pipeline().add_after(ctx.name(), "http2",
                                                                                     std::make_shared<weft::http2::ServerCodec>());
                                                          } else {
                                                            ctx.pipeline().add_after(ctx.name(), "http",
                                                                                     std::make_shared<weft::http::ServerCodec>());
                                                          }
                                                        }));
                   } else if (http2) {
                     ch.pipeline().add_last("detect", std::make_shared<weft::http2::CleartextDetector>());
                   } else {
                     ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
                   }
                   if (offload != nullptr) {
                     ch.pipeline().add_last(*offload, "router", router);
                   } else {
                     ch.pipeline().add_last("router", router);
                   }
                 })
                 .bind(weft::SocketAddress::from(options.host, options.port))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-hello: cannot listen on %s:%u: %s\n", options.host.c_str(), options.port, e.what());
    return 1;
  }
  // The admin endpoints on a loop of their own: a scrape never waits behind the traffic.
  std::optional<weft::metrics::AdminServer> admin;
  std::optional<weft::metrics::EventLoopMetrics> loop_metrics;
  std::optional<weft::metrics::AllocatorMetrics> allocator_metrics;
  if (options.admin_port >= 0) {
    if (!blocking) loop_metrics.emplace(loops);  // (blocking: a loop per connection, too many series)
    if (options.stall_threshold_ms >= 0)
      for (std::size_t i = 0; i < loops.size(); ++i)
        loops.at(i).set_stall_threshold(std::chrono::milliseconds(options.stall_threshold_ms));
    allocator_metrics.emplace();
    try {
      admin.emplace(weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.admin_port)),
                    weft::metrics::Registry::global(), "hello-admin");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-hello: cannot listen on admin port %ld: %s\n", options.admin_port, e.what());
      return 1;
    }
    std::printf("weft-hello admin on %s\n", admin->local_address().to_string().c_str());
  }
  std::printf("weft-hello listening on %s with %zu loop(s), transport %s, mode %s, accept %s, %s\n",
              server->local_address().to_string().c_str(), loops.size(), options.transport.c_str(),
              options.mode.c_str(), options.accept.c_str(),
              tls             ? (options.http2 ? "HTTPS (h2 and HTTP/1.1 by ALPN)" : "HTTPS (HTTP/1.1)")
              : options.http2 ? "HTTP/1.1 and h2c"
                              : "HTTP/1.1");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  if (admin) admin->set_not_ready();  // before the listeners close: a load balancer looks here first
  // The drain: no new connection, those open end gracefully, what is left at the deadline is closed.
  const weft::DrainReport drained = weft::drain_server(server, std::chrono::seconds(options.drain_timeout_s)).get();
  std::fprintf(
      stderr,
      "weft-hello: %s: drained: %zu connection(s) open, %zu ended gracefully, %zu closed at the %ld s deadline\n",
      strsignal(sig), drained.open, drained.drained, drained.forced, options.drain_timeout_s);
  std::string per_loop;
  for (const auto& count : *accepted) per_loop += " " + std::to_string(count.load());
  std::fprintf(stderr, "weft-hello: connections per loop:%s\n", per_loop.c_str());
  if (downstream_pool) downstream_pool->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  if (acceptor) acceptor->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(5)).wait();
  if (offload_group) offload_group->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  executors.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  admin.reset();
  loop_metrics.reset();
  allocator_metrics.reset();
  return 0;
}
