#include "interop_service.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grpc/testing/test.weft.h"
#include "weft/core/awaitables.h"

namespace weft::grpc::interop {
namespace {

namespace testing = ::grpc::testing;

constexpr std::string_view kEchoInitial = "x-grpc-test-echo-initial";
constexpr std::string_view kEchoTrailing = "x-grpc-test-echo-trailing-bin";

// A payload of `size` zero bytes (grpc's COMPRESSABLE type).
testing::Payload zeros(int size) {
  if (size < 0) throw StatusError(Status(StatusCode::invalid_argument, "a negative payload size"));
  testing::Payload payload;
  payload.set_body(std::string(static_cast<std::size_t>(size), '\0'));
  return payload;
}

// The request's echo metadata, added to the response's head and trailers.
void echo_metadata(ServerCall& call) {
  if (std::optional<std::string> initial = call.metadata(kEchoInitial))
    call.add_response_header(kEchoInitial, *initial);
  if (std::optional<std::string> trailing = call.metadata(kEchoTrailing)) {
    call.add_trailing_metadata(kEchoTrailing, *trailing);
  }
}

// Ends the call with the status the request asks for, if any.
void end_with_echo_status(bool has, const testing::EchoStatus& status) {
  if (has && status.code() != 0) {
    throw StatusError(Status(static_cast<StatusCode>(status.code()), status.message()));
  }
}

// The request message the call read last came compressed as the client said it would.
void check_compression(ServerCall& call, bool has_expectation, const testing::BoolValue& expect_compressed) {
  if (!has_expectation || call.last_read_compressed() == expect_compressed.value()) return;
  throw StatusError(Status(StatusCode::invalid_argument, expect_compressed.value()
                                                             ? "the request was expected compressed and was not"
                                                             : "the request was expected uncompressed and was not"));
}

// Every message compressed (gzip, whatever its size) or none.
CompressionOptions compressed(bool yes) {
  return yes ? CompressionOptions(Compression::gzip, -1, 0) : CompressionOptions();
}

// The responses a streaming request asks for, each after its interval.
Task<> write_responses(const testing::StreamingOutputCallRequest& request,
                       ServerWriter<testing::StreamingOutputCallResponse>& writer) {
  for (const testing::ResponseParameters& parameters : request.response_parameters()) {
    if (parameters.interval_us() > 0) co_await sleep(std::chrono::microseconds(parameters.interval_us()));
    testing::StreamingOutputCallResponse response;
    *response.mutable_payload() = zeros(parameters.size());
    co_await writer.write(response);
  }
}

class TestService final : public testing::TestService::Service {
 public:
  Task<testing::Empty> EmptyCall(ServerCall& call, testing::Empty) override {
    echo_metadata(call);
    co_return testing::Empty();
  }

  Task<testing::SimpleResponse> UnaryCall(ServerCall& call, testing::SimpleRequest request) override {
    echo_metadata(call);
    check_compression(call, request.has_expect_compressed(), request.expect_compressed());
    if (request.has_response_compressed()) call.set_compression(compressed(request.response_compressed().value()));
    end_with_echo_status(request.has_response_status(), request.response_status());
    testing::SimpleResponse response;
    *response.mutable_payload() = zeros(request.response_size());
    co_return response;
  }

  Task<> StreamingOutputCall(ServerCall& call, testing::StreamingOutputCallRequest request,
                             ServerWriter<testing::StreamingOutputCallResponse>& writer) override {
    echo_metadata(call);
    co_await write_responses(request, writer);
    end_with_echo_status(request.has_response_status(), request.response_status());
  }

  Task<testing::StreamingInputCallResponse> StreamingInputCall(
      ServerCall& call, ServerReader<testing::StreamingInputCallRequest>& reader) override {
    echo_metadata(call);
    std::size_t total = 0;
    while (std::optional<testing::StreamingInputCallRequest> request = co_await reader.read()) {
      check_compression(call, request->has_expect_compressed(), request->expect_compressed());
      total += request->payload().body().size();
    }
    testing::StreamingInputCallResponse response;
    response.set_aggregated_payload_size(static_cast<std::int32_t>(total));
    co_return response;
  }

  Task<> FullDuplexCall(
      ServerCall& call,
      ServerReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse>& stream) override {
    echo_metadata(call);
    ServerWriter<testing::StreamingOutputCallResponse> writer(call);
    while (std::optional<testing::StreamingOutputCallRequest> request = co_await stream.read()) {
      end_with_echo_status(request->has_response_status(), request->response_status());
      co_await write_responses(*request, writer);
    }
  }

  Task<> HalfDuplexCall(
      ServerCall& call,
      ServerReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse>& stream) override {
    echo_metadata(call);
    std::vector<testing::StreamingOutputCallRequest> requests;
    while (std::optional<testing::StreamingOutputCallRequest> request = co_await stream.read()) {
      requests.push_back(std::move(*request));
    }
    ServerWriter<testing::StreamingOutputCallResponse> writer(call);
    for (const testing::StreamingOutputCallRequest& request : requests) {
      end_with_echo_status(request.has_response_status(), request.response_status());
      co_await write_responses(request, writer);
    }
  }
};

}  // namespace

void add_test_service(ServiceRegistry& registry) {
  testing::TestService::Service::add_to(registry, std::make_shared<TestService>());
}

}  // namespace weft::grpc::interop
