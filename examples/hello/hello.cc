// weft-hello: the TechEmpower-style hello server.
//   /plaintext        "Hello, World!" as text/plain
//   /json             {"message":"Hello, World!"}, a new object serialised per request (RapidJSON)
//   /plaintext-async  as /plaintext, the body produced on an executor thread while the loop waits
//   /json-async       as /json, likewise
//
//   weft-hello --port 8080 --loops 1 --transport epoll

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/weft.h"

namespace {

constexpr std::string_view kPlain = "Hello, World!";

struct Options {
  std::uint16_t port = 8080;
  std::string host = "0.0.0.0";
  std::size_t loops = 0;
  std::size_t async_threads = 2;
  std::string transport = "epoll";
  std::string mode = "loop";
};

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: weft-hello [--port P] [--host H] [--loops N] [--transport epoll] [--mode loop]\n"
               "                  [--async-threads T]\n"
               "  --loops N          event loops (default: one per core)\n"
               "  --transport NAME   epoll (io_uring and blocking are not built yet)\n"
               "  --mode MODE        loop (offload and coroutine modes are not built yet)\n"
               "  --async-threads T  executor threads for the -async routes (default 2)\n");
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
    else if (a == "--transport") o.transport = value();
    else if (a == "--mode") o.mode = value();
    else {
      std::fprintf(stderr, "weft-hello: unknown option '%s'\n", a.c_str());
      usage(2);
    }
  }
  if (o.transport != "epoll") {
    std::fprintf(stderr, "weft-hello: transport '%s' is not built yet; available: epoll\n", o.transport.c_str());
    std::exit(2);
  }
  if (o.mode != "loop") {
    std::fprintf(stderr, "weft-hello: mode '%s' is not built yet; available: loop\n", o.mode.c_str());
    std::exit(2);
  }
  return o;
}

// Serialises a new {"message": ...} object; the view is valid until the next call on this thread.
std::string_view json_body() {
  thread_local rapidjson::StringBuffer buffer;
  buffer.Clear();
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("message");
  writer.String(kPlain.data(), static_cast<rapidjson::SizeType>(kPlain.size()));
  writer.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

// Validated once; every response shares them.
const weft::http::HeaderBlock kTextHeaders = weft::http::HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");
const weft::http::HeaderBlock kJsonHeaders =
    weft::http::HeaderBlock().add("Server", "weft").add("Content-Type", "application/json");

void respond(weft::Context& ctx, const weft::http::HeaderBlock& headers, std::string_view body) {
  ctx.write(weft::http::HttpResponse(200).headers(headers).body_view(body));
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // every thread started below inherits the mask

  weft::EventLoopGroup loops(weft::epoll(), options.loops, "hello");
  weft::EventLoopGroup executors(weft::basic_driver_factory(), options.async_threads, "hello-exec");

  auto router = std::make_shared<weft::http::Router>();
  router->get("/plaintext", [](weft::Context& ctx, weft::http::HttpRequest&) { respond(ctx, kTextHeaders, kPlain); });
  router->get("/json", [](weft::Context& ctx, weft::http::HttpRequest&) { respond(ctx, kJsonHeaders, json_body()); });
  router->get("/plaintext-async", [&executors](weft::Context& ctx, weft::http::HttpRequest&) {
    weft::Promise<std::string_view> body;
    executors.next().execute([body]() mutable { body.set_value(kPlain); });
    respond(ctx, kTextHeaders, body.future().get());  // blocks the loop: the pattern being measured
  });
  router->get("/json-async", [&executors](weft::Context& ctx, weft::http::HttpRequest&) {
    weft::Promise<std::string> body;
    executors.next().execute([body]() mutable { body.set_value(std::string(json_body())); });
    std::string json = body.future().get();
    respond(ctx, kJsonHeaders, json);
  });

  weft::ChannelPtr server;
  try {
    server = weft::ServerBootstrap()
                 .group(loops)
                 .option(weft::option::backlog, 8192)
                 .child_option(weft::option::tcp_nodelay, true)
                 .child_handler([router](weft::Channel& ch) {
                   ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
                   ch.pipeline().add_last("router", router);
                 })
                 .bind(weft::SocketAddress::from(options.host, options.port))
                 .get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-hello: cannot listen on %s:%u: %s\n", options.host.c_str(), options.port, e.what());
    return 1;
  }
  std::printf("weft-hello listening on %s with %zu loop(s), transport %s, mode %s\n",
              server->local_address().to_string().c_str(), loops.size(), options.transport.c_str(),
              options.mode.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server->close().wait();
  loops.shutdown_gracefully(std::chrono::milliseconds(100), std::chrono::seconds(5)).wait();
  executors.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(1)).wait();
  return 0;
}
