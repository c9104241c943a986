#pragma once
// grpc.testing.BenchmarkService (shared/peers/grpc/bench.proto) on weft's gRPC server, in grpc-java's
// two threading models (TransportBenchmark's `direct` parameter):
//
//   direct = true   the handlers, decoding and encoding run on the call's event loop.
//   direct = false  they run on an executor of an ExecutorGroup (one per call, chosen when it starts,
//                   as grpc-java serializes a call's callbacks on its executor): the request is decoded
//                   and the response serialized and framed there, into a buffer of the call's pooled
//                   allocator; the loop only sends the framed bytes (ServerCall::write_framed).
//                   UnaryCall and StreamingCall hand each request over and wait for its response
//                   (weft::offload). StreamingFromServer has the executor serialize and frame a batch
//                   of responses (kStreamBatchBytes of them), then the loop sends them (suspending while the stream is
//                   unwritable), then the next batch: the stream's flow control holds the executor back
//                   (as grpc-java's onReady does).
//
// reactor_benchmark_service(): the same methods in callback form (server_reactor.h), on the loop, for
// `--api reactor`: what the callback form costs beside the coroutines.
//
// Loop thread only (the handlers; what they offload runs on their executor).

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_messages.h"
#include "weft/grpc/server_reactor.h"
#include "weft/grpc/service_registry.h"
#include "weft/core/awaitables.h"
#include "weft/core/executor_group.h"

namespace weft::grpc::bench {

inline constexpr std::string_view kUnaryCall = "/grpc.testing.BenchmarkService/UnaryCall";
inline constexpr std::string_view kStreamingCall = "/grpc.testing.BenchmarkService/StreamingCall";
inline constexpr std::string_view kStreamingFromServer = "/grpc.testing.BenchmarkService/StreamingFromServer";

/// StreamingFromServer with direct=false: the framed bytes the executor makes per hand-over to the loop
/// (grpc-java's onReady threshold: a call is ready while less than 32 KiB wait in its transport).
inline constexpr std::size_t kStreamBatchBytes = 32 * 1024;

/// The service. `executors`: null for direct = true; else where handlers and (de)serialization run.
inline ServiceRegistry benchmark_service(ExecutorGroup* executors) {
  ServiceRegistry services;
  if (executors == nullptr) {
    services.add(std::string(kUnaryCall), [](ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      if (!request) throw StatusError(Status(StatusCode::internal, "UnaryCall without a request"));
      ByteBuf response = framed_response(response_size(*request), call.allocator());
      request.reset();
      co_await call.write_framed(std::move(response));
    });
    services.add(std::string(kStreamingCall), [](ServerCall& call) -> Task<> {
      while (std::optional<ByteBuf> request = co_await call.read()) {
        ByteBuf response = framed_response(response_size(*request), call.allocator());
        request.reset();
        co_await call.write_framed(std::move(response));
      }
    });
    services.add(std::string(kStreamingFromServer), [](ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      if (!request) throw StatusError(Status(StatusCode::internal, "StreamingFromServer without a request"));
      const std::size_t size = response_size(*request);
      request.reset();
      for (;;) co_await call.write_framed(framed_response(size, call.allocator()));  // until the client cancels
    });
    return services;
  }
  // On the executor: decode the request (and release it there), serialize and frame the response.
  // (Every awaiter below is a named local whose callable holds references only: g++ 12 mishandles
  // temporaries with destructors inside a co_await expression, see docs/grpc.md.)
  services.add(std::string(kUnaryCall), [executors](ServerCall& call) -> Task<> {
    EventLoop& executor = executors->next();
    std::optional<ByteBuf> request = co_await call.read();
    if (!request) throw StatusError(Status(StatusCode::internal, "UnaryCall without a request"));
    ByteBuf response;
    auto answer = offload(executor, [&request, &response, &allocator = call.allocator()] {
      response = framed_response(response_size(*request), allocator);
      request.reset();
    });
    co_await answer;
    co_await call.write_framed(std::move(response));
  });
  services.add(std::string(kStreamingCall), [executors](ServerCall& call) -> Task<> {
    EventLoop& executor = executors->next();
    for (;;) {
      std::optional<ByteBuf> request = co_await call.read();
      if (!request) break;
      ByteBuf response;
      auto answer = offload(executor, [&request, &response, &allocator = call.allocator()] {
        response = framed_response(response_size(*request), allocator);
        request.reset();
      });
      co_await answer;
      co_await call.write_framed(std::move(response));
    }
  });
  services.add(std::string(kStreamingFromServer), [executors](ServerCall& call) -> Task<> {
    EventLoop& executor = executors->next();
    std::optional<ByteBuf> request = co_await call.read();
    if (!request) throw StatusError(Status(StatusCode::internal, "StreamingFromServer without a request"));
    std::size_t size = 0;
    auto decode = offload(executor, [&request, &size] {
      size = response_size(*request);
      request.reset();
    });
    co_await decode;
    // The executor serializes and frames a batch while the loop waits; then the loop sends it (waiting
    // while the stream is unwritable) while the executor is free. Until the client cancels (CallEnded).
    const std::size_t per_batch = std::max<std::size_t>(1, kStreamBatchBytes / (kMessagePrefixBytes + response_bytes(size)));
    std::vector<ByteBuf> batch;
    batch.reserve(per_batch);
    for (;;) {
      auto produce = offload(executor, [&batch, per_batch, size, &allocator = call.allocator()] {
        for (std::size_t i = 0; i < per_batch; ++i) batch.push_back(framed_response(size, allocator));
      });
      co_await produce;
      // One send for the batch (as grpc-java's WriteQueue flushes once per batch of queued writes).
      for (std::size_t i = 0; i < batch.size(); ++i) {
        WriteOptions options;
        options.buffer_hint = i + 1 < batch.size();
        co_await call.write_framed(std::move(batch[i]), options);
      }
      batch.clear();
    }
  });
  return services;
}

/// The three methods as one reactor: read, answer, read again (UnaryCall's second read gives nullopt:
/// OK), or, for StreamingFromServer, write until the client cancels.
class BenchmarkReactor final : public ServerReactor {
 public:
  BenchmarkReactor(ServerStream stream, bool stream_forever) : stream_(std::move(stream)), forever_(stream_forever) {
    stream_.start_read();
  }
  void on_read_done(std::optional<ByteBuf> request) override {
    if (!request) {
      if (!forever_) stream_.finish({});
      return;
    }
    size_ = response_size(*request);
    request.reset();
    stream_.start_write_framed(framed_response(size_, stream_.call().allocator()));
  }
  void on_write_done(bool ok) override {
    if (!ok) return;
    if (forever_) {
      stream_.start_write_framed(framed_response(size_, stream_.call().allocator()));  // until the client cancels
    } else {
      stream_.start_read();
    }
  }

 private:
  ServerStream stream_;
  bool forever_;
  std::size_t size_ = 0;
};

/// The service in callback form, handlers on the loop (direct = true).
inline ServiceRegistry reactor_benchmark_service() {
  ServiceRegistry services;
  for (std::string_view method : {kUnaryCall, kStreamingCall}) {
    services.add_reactor(std::string(method), [](ServerStream s) { return std::make_shared<BenchmarkReactor>(std::move(s), false); });
  }
  services.add_reactor(std::string(kStreamingFromServer),
                       [](ServerStream s) { return std::make_shared<BenchmarkReactor>(std::move(s), true); });
  return services;
}

}  // namespace weft::grpc::bench
