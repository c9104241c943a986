#pragma once
// grpc.testing.BenchmarkService on the code protoc-gen-weft generates from bench.proto, for
// weft-grpc-bench-server's `--api generated`: the service as a user writes it from the .proto, with
// protobuf's messages parsed and serialized on every call. What it costs beside the hand-encoded
// service (bench_service.h) is what scripts/measure-grpc.sh measures with `--api generated`.
//
// The handlers run on the call's loop (direct = true). Loop thread only.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "bench.weft.h"
#include "bench_messages.h"

namespace weft::grpc::bench {

/// SimpleResponse with `request.response_size()` zero bytes of payload (none for 0: the empty message,
/// as grpc++'s server sends it). Throws StatusError INVALID_ARGUMENT past kMaxResponseBytes.
inline ::grpc::testing::SimpleResponse generated_response(const ::grpc::testing::SimpleRequest& request) {
  if (request.response_size() < 0 || static_cast<std::size_t>(request.response_size()) > kMaxResponseBytes) {
    throw StatusError(Status(StatusCode::invalid_argument, "response_size " + std::to_string(request.response_size()) +
                                                               " is not within 0.." +
                                                               std::to_string(kMaxResponseBytes)));
  }
  ::grpc::testing::SimpleResponse response;
  if (request.response_size() > 0) {
    response.mutable_payload()->mutable_body()->assign(static_cast<std::size_t>(request.response_size()), '\0');
  }
  return response;
}

/// The three methods on the generated base class.
class GeneratedBenchmarkService final : public ::grpc::testing::BenchmarkService::Service {
 public:
  Task<::grpc::testing::SimpleResponse> UnaryCall(ServerCall&, ::grpc::testing::SimpleRequest request) override {
    co_return generated_response(request);
  }

  Task<> StreamingCall(
      ServerCall&,
      ServerReaderWriter<::grpc::testing::SimpleRequest, ::grpc::testing::SimpleResponse>& stream) override {
    while (std::optional<::grpc::testing::SimpleRequest> request = co_await stream.read()) {
      // Named: g++ 12 mishandles a temporary with a destructor inside a co_await expression (docs/grpc.md).
      const ::grpc::testing::SimpleResponse response = generated_response(*request);
      co_await stream.write(response);
    }
  }

  Task<> StreamingFromServer(ServerCall&, ::grpc::testing::SimpleRequest request,
                             ServerWriter<::grpc::testing::SimpleResponse>& writer) override {
    const ::grpc::testing::SimpleResponse response = generated_response(request);
    for (;;) co_await writer.write(response);  // until the client cancels
  }
};

/// The service's registry, for `--api generated`.
inline ServiceRegistry generated_benchmark_service() {
  ServiceRegistry services;
  ::grpc::testing::BenchmarkService::Service::add_to(services, std::make_shared<GeneratedBenchmarkService>());
  return services;
}

}  // namespace weft::grpc::bench
