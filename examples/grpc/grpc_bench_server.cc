// weft-grpc-bench-server: grpc.testing.BenchmarkService (shared/peers/grpc/bench.proto) on weft's
// gRPC server, for `weft-bench run grpc` and any client of the service (grpc++'s, grpc-java's,
// weft-load grpc):
//   UnaryCall            one response of request.response_size bytes per request
//   StreamingCall        ping-pong: one such response per request on one stream
//   StreamingFromServer  such responses as fast as flow control lets them leave, until the client cancels
//
//   weft-grpc-bench-server --port 50051 [--transport epoll|io_uring|blocking] [--direct true|false]
//                          [--loops N] [--executor-threads N] [--executor-thread-cache true|false]
//                          [--api coroutine|reactor|generated]
//
// --direct false (grpc-java's default executor): handlers and (de)serialization run on an
// ExecutorGroup; --direct true: on the event loop (see bench_service.h). --executor-thread-cache false
// leaves the executor threads without pooled-allocator thread caches (every buffer they allocate or
// release takes an arena's lock): the setting that cost grpc-java's streamingCallsMessageThroughput
// 14% (shared/seeds/004, Netty's useCacheForAllThreads); the event loops keep theirs. Its default comes
// from $WEFT_GRPC_EXECUTOR_THREAD_CACHE (true|false) when set. --api reactor serves the methods in
// callback form (ServerReactor, on the loop: implies --direct true) instead of coroutines; --api generated
// serves them on the code protoc-gen-weft generates from bench.proto, with protobuf's messages (on the
// loop: implies --direct true; bench_generated_service.h).
// Prints "weft-grpc-bench-server listening on HOST:PORT ..." once it listens; SIGINT or SIGTERM drains it
// (weft::drain_server: no new connection, GOAWAY, the calls in flight end) and then stops it.
// --admin-port P serves /metrics, /healthz and /readyz (503 from the drain's start) on HOST:P.
// grpc.health.v1.Health answers "" SERVING, NOT_SERVING from the drain's start (Watch calls then end).

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <optional>
#include <string>
#include <string_view>

#include "bench_service.h"
#ifdef WEFT_BENCH_GENERATED
#include "bench_generated_service.h"
#endif
#include "weft/buffer/pooled_byte_buf_allocator.h"
#include "weft/channel/drain.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/executor_group.h"
#include "weft/grpc/health.h"
#include "weft/metrics/admin/admin_server.h"
#include "weft/metrics/event_loop_metrics.h"
#include "weft/transport/transport_named.h"
#include "weft/weft.h"

namespace {

struct Options {
  std::uint16_t port = 50051;
  std::string host = "127.0.0.1";
  std::string transport = "epoll";
  bool direct = false;  // grpc-java's default: an executor
  std::size_t loops = 1;
  std::size_t executor_threads = 1;
  bool executor_thread_cache = true;
  std::size_t max_connections = 64;
  std::string api = "coroutine";         // --api coroutine|reactor|generated
  long drain_timeout_s = 10;             // SIGTERM/SIGINT: calls in flight have this long to end, then are closed
  long max_connection_age_ms = 0;        // http2::Settings::max_connection_age; 0: none
  long max_connection_age_grace_ms = 0;  // http2::Settings::max_connection_age_grace; 0: none
  long admin_port = -1;                  // -1: no admin listener
};

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: weft-grpc-bench-server [--port P] [--host H] [--transport epoll|io_uring|blocking]\n"
               "                              [--direct true|false] [--loops N] [--executor-threads N]\n"
               "                              [--executor-thread-cache true|false] [--max-connections N]\n"
               "                              [--api coroutine|reactor|generated] [--drain-timeout S]\n"
               "                              [--max-connection-age MS] [--max-connection-age-grace MS]\n"
               "                              [--admin-port P]\n"
               "  --port P                    default 50051 (0: any free port, printed)\n"
               "  --host H                    default 127.0.0.1\n"
               "  --transport NAME            epoll (default), io_uring or blocking\n"
               "  --direct BOOL               true: handlers and (de)serialization on the event loop;\n"
               "                              false (default): on an executor group, as grpc-java's default\n"
               "  --loops N                   event loops (default 1)\n"
               "  --executor-threads N        executor threads with --direct false (default 1)\n"
               "  --executor-thread-cache B   false: executor threads allocate without a thread cache\n"
               "                              (every pooled buffer takes an arena's lock); default true, or\n"
               "                              $WEFT_GRPC_EXECUTOR_THREAD_CACHE when set\n"
               "  --api coroutine|reactor|generated\n"
               "                              the methods as coroutines (default), as reactors (callback form),\n"
               "                              or on protoc-gen-weft's generated code and protobuf's messages\n"
               "                              (reactor and generated run on the loop: they imply --direct true)\n"
               "  --max-connections N         blocking: connections served at once, i.e. threads (default 64)\n"
               "  --drain-timeout S           on SIGTERM or SIGINT: stop accepting, GOAWAY, let the calls in\n"
               "                              flight end; close what is left after S seconds (default 10)\n"
               "  --max-connection-age MS     a connection older than this is told to go (GOAWAY), so that\n"
               "                              long-lived clients reconnect (default 0: never)\n"
               "  --max-connection-age-grace MS  then its calls have this long before it closes (default 0:\n"
               "                              as long as they need)\n"
               "  --admin-port P              serve /metrics (Prometheus or OpenMetrics text), /healthz and\n"
               "                              /readyz on HOST:P (0: any free port, printed)\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  // The environment's default, so that a whole `weft-bench run grpc` runs without caches on executors.
  if (const char* env = std::getenv("WEFT_GRPC_EXECUTOR_THREAD_CACHE")) {
    o.executor_thread_cache = !(std::string_view(env) == "false" || std::string_view(env) == "0");
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-grpc-bench-server: %s needs a value\n", a.c_str());
        usage(2);
      }
      return argv[++i];
    };
    auto number = [&](long lo, long hi) {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < lo || n > hi) {
        std::fprintf(stderr, "weft-grpc-bench-server: %s: '%s' is not a number in [%ld, %ld]\n", a.c_str(), v.c_str(),
                     lo, hi);
        std::exit(2);
      }
      return n;
    };
    auto boolean = [&]() {
      const std::string v = value();
      if (v == "true" || v == "1") return true;
      if (v == "false" || v == "0") return false;
      std::fprintf(stderr, "weft-grpc-bench-server: %s: '%s' is not true or false\n", a.c_str(), v.c_str());
      std::exit(2);
    };
    if (a == "--help" || a == "-h") usage(0);
    else if (a == "--port") o.port = static_cast<std::uint16_t>(number(0, 65535));
    else if (a == "--host") o.host = value();
    else if (a == "--transport") o.transport = value();
    else if (a == "--direct") o.direct = boolean();
    else if (a == "--loops") o.loops = static_cast<std::size_t>(number(1, 1024));
    else if (a == "--executor-threads") o.executor_threads = static_cast<std::size_t>(number(1, 1024));
    else if (a == "--executor-thread-cache") o.executor_thread_cache = boolean();
    else if (a == "--api") {
      o.api = value();
      if (o.api != "coroutine" && o.api != "reactor" && o.api != "generated") {
        std::fprintf(stderr, "weft-grpc-bench-server: --api: '%s' is not coroutine, reactor or generated\n",
                     o.api.c_str());
        std::exit(2);
      }
#ifndef WEFT_BENCH_GENERATED
      if (o.api == "generated") {
        std::fprintf(stderr, "weft-grpc-bench-server: --api generated: built without protoc-gen-weft and protobuf\n");
        std::exit(2);
      }
#endif
    } else if (a == "--max-connections") o.max_connections = static_cast<std::size_t>(number(1, 100000));
    else if (a == "--drain-timeout")
      o.drain_timeout_s = number(0, 86400);
    else if (a == "--max-connection-age")
      o.max_connection_age_ms = number(0, 86400L * 1000 * 365);
    else if (a == "--max-connection-age-grace")
      o.max_connection_age_grace_ms = number(0, 86400L * 1000 * 365);
    else if (a == "--admin-port")
      o.admin_port = number(0, 65535);
    else {
      std::fprintf(stderr, "weft-grpc-bench-server: unknown option '%s'\n", a.c_str());
      usage(2);
    }
  }
  if (o.api != "coroutine") o.direct = true;  // the reactors and the generated service run on the loop
  return o;
}

// Runs `fn` once on every thread of `executors` and waits for all of them (next() is round-robin: one
// task per executor).
template <class F>
void on_every_executor(weft::ExecutorGroup& executors, F fn) {
  std::latch done(static_cast<std::ptrdiff_t>(executors.size()));
  for (std::size_t i = 0; i < executors.size(); ++i) {
    executors.next().execute([&done, fn] {
      fn();
      done.count_down();
    });
  }
  done.wait();
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  weft::Transport* transport = nullptr;
  try {
    transport = &weft::transport_named(options.transport);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "weft-grpc-bench-server: %s\n", e.what());
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // every thread started below inherits the mask

  // On the blocking transport every connection takes a loop (a thread) to itself.
  const bool blocking = options.transport == "blocking";
  weft::EventLoopGroup loops(*transport, blocking ? options.max_connections : options.loops, "grpc");
  std::optional<weft::EventLoopGroup> acceptor;
  if (blocking) acceptor.emplace(*transport, 1, "grpc-accept");
  std::optional<weft::ExecutorGroup> executors;
  if (!options.direct) {
    executors.emplace(weft::ExecutorGroup::Options{.threads = options.executor_threads, .name = "grpc-exec"});
    if (!options.executor_thread_cache) {
      on_every_executor(*executors, [] { weft::PooledByteBufAllocator::set_current_thread_caches(false); });
    }
  }

  weft::http2::Settings settings;
  settings.max_connection_age = std::chrono::milliseconds(options.max_connection_age_ms);
  settings.max_connection_age_grace = std::chrono::milliseconds(options.max_connection_age_grace_ms);
  weft::grpc::ServiceRegistry services;
  if (options.api == "reactor") {
    services = weft::grpc::bench::reactor_benchmark_service();
#ifdef WEFT_BENCH_GENERATED
  } else if (options.api == "generated") {
    services = weft::grpc::bench::generated_benchmark_service();
#endif
  } else {
    services = weft::grpc::bench::benchmark_service(executors ? &*executors : nullptr);
  }
  weft::grpc::HealthService health;  // grpc.health.v1.Health: "" SERVING until the drain
  health.add_to(services);
  settings.stream_initializer = services.stream_chooser();
  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(acceptor ? *acceptor : loops, loops)
                 .option(weft::option::backlog, 1024)
                 .child_option(weft::option::tcp_nodelay, true)
                 .child_handler([settings](weft::Channel& ch) {
                   ch.pipeline().add_last("http2", std::make_shared<weft::http2::ServerCodec>(settings));
                 })
                 .bind(weft::SocketAddress::from(options.host, options.port))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-grpc-bench-server: cannot listen on %s:%u: %s\n", options.host.c_str(), options.port,
                 e.what());
    return 1;
  }
  // The admin endpoints on a loop of their own: a scrape never waits behind the calls.
  std::optional<weft::metrics::EventLoopMetrics> loop_metrics;
  std::optional<weft::metrics::AdminServer> admin;
  if (options.admin_port >= 0) {
    if (!blocking) loop_metrics.emplace(loops);  // blocking: a loop per connection, too many series
    try {
      admin.emplace(weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.admin_port)),
                    weft::metrics::Registry::global(), "grpc-admin");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft-grpc-bench-server: cannot listen on admin port %ld: %s\n", options.admin_port,
                   e.what());
      return 1;
    }
    std::printf("weft-grpc-bench-server admin on %s\n", admin->local_address().to_string().c_str());
  }
  std::printf(
      "weft-grpc-bench-server listening on %s, transport %s, %zu loop(s), direct %s, %zu executor thread(s), "
      "executor thread cache %s, api %s\n",
      server->local_address().to_string().c_str(), options.transport.c_str(), loops.size(),
      options.direct ? "true" : "false", executors ? executors->size() : std::size_t{0},
      options.executor_thread_cache ? "true" : "false", options.api.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  if (admin) admin->set_not_ready();  // before the listener closes: a load balancer looks here first
  health.enter_shutdown();            // the same for gRPC health checks; Watch calls end, not held till the deadline
  // The drain: no new connection; each gets the two GOAWAYs, its calls in flight end; what is left
  // at the deadline is closed.
  const weft::DrainReport drained = weft::drain_server(server, std::chrono::seconds(options.drain_timeout_s)).get();
  std::fprintf(stderr,
               "weft-grpc-bench-server: %s: drained: %zu connection(s) open, %zu ended gracefully, %zu closed at the "
               "%ld s deadline\n",
               strsignal(sig), drained.open, drained.drained, drained.forced, options.drain_timeout_s);
  if (acceptor) acceptor->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  if (executors) executors->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  admin.reset();
  loop_metrics.reset();
  return 0;
}
