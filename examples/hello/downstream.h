#pragma once
// weft-hello's /downstream?ms=N (default 250, at most 10000; anything else is a 400): waits N ms as a
// stand-in for a slow downstream call, then answers "downstream <mode> <N> ms". How it waits is the
// point of the route (issue 9):
//   loop             sleeps on the event loop thread: every connection of that loop waits with it
//   offload          sleeps on the executor thread the router was offloaded to (ExecutorGroup)
//   loop-async       the router stays on the loop and hands the sleep to a pool of --offload-threads
//                    executors, one per channel (channel id mod T, so pipelined answers stay in order);
//                    the channel stops reading until its answer is written, so what a connection can
//                    queue is bounded by one read batch
//   coroutine(-async) suspends the request's task on a loop timer: no thread waits, and the
//                    connection's other requests (HTTP/2 streams) go on meanwhile
// A request whose client has gone by the time its turn comes is dropped without waiting, so a queue
// of abandoned requests does not consume the pool after clients time out.

#include <charconv>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "weft/codec/http1/router.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"
#include "weft/weft.h"

namespace hello {

constexpr long kDefaultDownstreamMs = 250;
constexpr long kMaxDownstreamMs = 10'000;

// The ms parameter of a query string; nullopt when it is malformed or out of [0, kMaxDownstreamMs].
inline std::optional<long> downstream_ms(std::string_view query) {
  while (!query.empty()) {
    std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (!pair.starts_with("ms=")) continue;
    std::string_view v = pair.substr(3);
    long ms = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (ec != std::errc() || end != v.data() + v.size() || ms < 0 || ms > kMaxDownstreamMs) return std::nullopt;
    return ms;
  }
  return kDefaultDownstreamMs;
}

inline weft::http::HttpResponse downstream_response(std::string_view mode, long ms) {
  return std::move(weft::http::HttpResponse(200).content_type("text/plain").body(
      weft::ByteBuf::copy_of("downstream " + std::string(mode) + " " + std::to_string(ms) + " ms\n")));
}

inline weft::http::HttpResponse downstream_bad_request() {
  return std::move(weft::http::HttpResponse(400).content_type("text/plain").body_view(
      "ms must be an integer in [0, 10000]\n"));
}

// Executor group bounds for weft-hello's offload mode, in bytes (each request counts what it holds:
// weft::message_size): a connection may queue 256 KiB of requests (about a hundred), the server
// 32 MiB; past that the channels stop reading and the clients wait in their socket buffers.
inline weft::ExecutorGroup::Options offload_options(std::size_t threads) {
  return {.threads = threads, .name = "hello-offload", .max_queued_bytes_per_channel = 256 * 1024,
          .max_queued_bytes = 32 * 1024 * 1024};
}

// Adds GET /downstream to a router for the loop, offload and loop-async modes. `pool` is used by
// loop-async only and must outlive every channel.
inline void add_downstream_route(weft::http::Router& router, std::string mode, weft::EventLoopGroup* pool) {
  router.get("/downstream", [mode = std::move(mode), pool](weft::Context& ctx, weft::http::HttpRequest& request) {
    std::optional<long> ms = downstream_ms(request.query());
    if (!ms) {
      ctx.write(downstream_bad_request());
      return;
    }
    if (pool == nullptr) {  // loop or offload: block the thread the router runs on
      if (!ctx.channel().is_active()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
      ctx.write(downstream_response(mode, *ms));
      return;
    }
    // Each waiting request holds one suspension of the channel's reading, given back on the loop
    // once its answer is written; the answer names its request, so it takes its own place in the
    // connection's order however the answers of later requests overtake it.
    weft::ChannelPtr channel = ctx.channel().shared_from_this();
    channel->suspend_reading();
    pool->at(channel->id() % pool->size()).execute([channel, ms = *ms, mode, sequence = request.sequence()] {
      if (channel->is_active()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        weft::http::HttpResponse answer = downstream_response(mode, ms);
        answer.for_request(sequence);
        channel->write_and_flush(std::move(answer));
      }
      channel->loop().execute([channel] { channel->resume_reading(); });
    });
  });
}

// The coroutine modes: suspends the request's task on a loop timer, then answers.
inline weft::Task<weft::http::HttpResponse> serve_downstream(weft::http::Request& request, std::string mode) {
  std::optional<long> ms = downstream_ms(request.query());
  if (!ms) co_return downstream_bad_request();
  co_await weft::sleep(std::chrono::milliseconds(*ms));
  co_return downstream_response(mode, *ms);
}

}  // namespace hello
