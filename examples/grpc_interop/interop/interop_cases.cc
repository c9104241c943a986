#include "interop_cases.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "grpc/testing/test.weft.h"

namespace weft::grpc::interop {
namespace {

namespace testing = ::grpc::testing;
using TestService = testing::TestService;

constexpr std::array<std::string_view, 16> kCases{"empty_unary",
                                                  "large_unary",
                                                  "client_streaming",
                                                  "server_streaming",
                                                  "ping_pong",
                                                  "empty_stream",
                                                  "custom_metadata",
                                                  "status_code_and_message",
                                                  "special_status_message",
                                                  "unimplemented_method",
                                                  "unimplemented_service",
                                                  "cancel_after_begin",
                                                  "cancel_after_first_response",
                                                  "timeout_on_sleeping_server",
                                                  "client_compressed_unary",
                                                  "server_compressed_unary"};

// The sizes grpc's descriptions give.
constexpr int kLargeRequestBytes = 271828;
constexpr int kLargeResponseBytes = 314159;
constexpr std::array<int, 4> kRequestBytes{27182, 8, 1828, 45904};
constexpr std::array<int, 4> kResponseBytes{31415, 9, 2653, 58979};

constexpr std::string_view kEchoInitial = "x-grpc-test-echo-initial";
constexpr std::string_view kEchoTrailing = "x-grpc-test-echo-trailing-bin";
constexpr std::string_view kInitialValue = "test_initial_metadata_value";
constexpr std::string_view kTrailingValue = "\xab\xab\xab";

testing::Payload zeros(int size) {
  testing::Payload payload;
  payload.set_body(std::string(static_cast<std::size_t>(size), '\0'));
  return payload;
}

bool is_zeros(const testing::Payload& payload, int size) {
  return payload.body() == std::string(static_cast<std::size_t>(size), '\0');
}

std::string describe(const Status& status) {
  return std::string(status_code_name(status.code)) + " \"" + status.message + "\"";
}

testing::SimpleRequest large_request() {
  testing::SimpleRequest request;
  request.set_response_size(kLargeResponseBytes);
  *request.mutable_payload() = zeros(kLargeRequestBytes);
  return request;
}

testing::StreamingOutputCallRequest streaming_request(int response_bytes, int request_bytes) {
  testing::StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(response_bytes);
  *request.mutable_payload() = zeros(request_bytes);
  return request;
}

// A unary call as a stream, for what the stub's unary form does not show: metadata, compression.
struct UnaryOutcome {
  Status status;
  std::optional<testing::SimpleResponse> response;
  bool compressed = false;
  std::optional<std::string> initial;
  std::optional<std::string> trailing;
};

Task<UnaryOutcome> unary_call(Client& client, const testing::SimpleRequest& request, const CallOptions& options = {}) {
  TypedClientCall<testing::SimpleRequest, testing::SimpleResponse> call(
      client.call(TestService::Methods::UnaryCall.path, options));
  UnaryOutcome outcome;
  co_await call.write(request);
  co_await call.writes_done();
  outcome.response = co_await call.read();
  outcome.compressed = call.call().last_read_compressed();
  outcome.status = co_await call.finish();
  outcome.initial = call.call().initial_metadata_value(kEchoInitial);
  outcome.trailing = call.call().trailing_metadata_value(kEchoTrailing);
  co_return outcome;
}

std::string check_large_response(const UnaryOutcome& outcome) {
  if (!outcome.status.ok()) return "status " + describe(outcome.status);
  if (!outcome.response || !is_zeros(outcome.response->payload(), kLargeResponseBytes)) {
    return "not a payload of " + std::to_string(kLargeResponseBytes) + " zeros";
  }
  return {};
}

Task<std::string> empty_unary(TestService::Stub& stub) {
  TypedUnaryResult<testing::Empty> result = co_await stub.EmptyCall(testing::Empty());
  if (!result.status.ok() || !result.message) co_return "status " + describe(result.status);
  co_return "";
}

Task<std::string> large_unary(TestService::Stub& stub) {
  TypedUnaryResult<testing::SimpleResponse> result = co_await stub.UnaryCall(large_request());
  if (!result.status.ok() || !result.message) co_return "status " + describe(result.status);
  if (!is_zeros(result.message->payload(), kLargeResponseBytes)) co_return "the response's payload is wrong";
  co_return "";
}

Task<std::string> client_streaming(TestService::Stub& stub) {
  ClientWriter<testing::StreamingInputCallRequest, testing::StreamingInputCallResponse> writer =
      stub.StreamingInputCall();
  for (int size : kRequestBytes) {
    testing::StreamingInputCallRequest request;
    *request.mutable_payload() = zeros(size);
    if (!co_await writer.write(request)) break;
  }
  TypedUnaryResult<testing::StreamingInputCallResponse> result = co_await writer.finish();
  if (!result.status.ok() || !result.message) co_return "status " + describe(result.status);
  if (result.message->aggregated_payload_size() != 74922) {
    co_return "aggregated_payload_size " + std::to_string(result.message->aggregated_payload_size());
  }
  co_return "";
}

Task<std::string> server_streaming(TestService::Stub& stub) {
  testing::StreamingOutputCallRequest request;
  for (int size : kResponseBytes) request.add_response_parameters()->set_size(size);
  ClientReader<testing::StreamingOutputCallResponse> reader = stub.StreamingOutputCall(request);
  std::size_t count = 0;
  while (std::optional<testing::StreamingOutputCallResponse> response = co_await reader.read()) {
    if (count >= kResponseBytes.size() || !is_zeros(response->payload(), kResponseBytes[count])) {
      co_return "response " + std::to_string(count) + " is wrong";
    }
    ++count;
  }
  const Status status = co_await reader.finish();
  if (!status.ok()) co_return "status " + describe(status);
  if (count != kResponseBytes.size()) co_return std::to_string(count) + " responses";
  co_return "";
}

Task<std::string> ping_pong(TestService::Stub& stub) {
  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall();
  for (std::size_t i = 0; i < kRequestBytes.size(); ++i) {
    if (!co_await stream.write(streaming_request(kResponseBytes[i], kRequestBytes[i]))) break;
    std::optional<testing::StreamingOutputCallResponse> response = co_await stream.read();
    if (!response || !is_zeros(response->payload(), kResponseBytes[i])) {
      co_return "response " + std::to_string(i) + ": " + describe(co_await stream.finish());
    }
  }
  co_await stream.writes_done();
  if (co_await stream.read()) co_return "a response after the last";
  const Status status = co_await stream.finish();
  if (!status.ok()) co_return "status " + describe(status);
  co_return "";
}

Task<std::string> empty_stream(TestService::Stub& stub) {
  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall();
  co_await stream.writes_done();
  if (co_await stream.read()) co_return "a response";
  const Status status = co_await stream.finish();
  if (!status.ok()) co_return "status " + describe(status);
  co_return "";
}

std::string check_echoed(const std::optional<std::string>& initial, const std::optional<std::string>& trailing) {
  if (initial != kInitialValue) return "initial metadata " + std::string(kEchoInitial) + " not echoed";
  if (trailing != kTrailingValue) return "trailing metadata " + std::string(kEchoTrailing) + " not echoed";
  return {};
}

Task<std::string> custom_metadata(Client& client, TestService::Stub& stub) {
  CallOptions options;
  options.metadata = {{std::string(kEchoInitial), std::string(kInitialValue)},
                      {std::string(kEchoTrailing), std::string(kTrailingValue)}};
  UnaryOutcome unary = co_await unary_call(client, large_request(), options);
  if (std::string wrong = check_large_response(unary); !wrong.empty()) co_return "UnaryCall: " + wrong;
  if (std::string wrong = check_echoed(unary.initial, unary.trailing); !wrong.empty()) co_return "UnaryCall: " + wrong;

  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall(options);
  co_await stream.write(streaming_request(kLargeResponseBytes, kLargeRequestBytes));
  co_await stream.writes_done();
  std::optional<testing::StreamingOutputCallResponse> response = co_await stream.read();
  const Status status = co_await stream.finish();
  if (!status.ok()) co_return "FullDuplexCall: status " + describe(status);
  if (!response || !is_zeros(response->payload(), kLargeResponseBytes)) co_return "FullDuplexCall: the response";
  if (std::string wrong = check_echoed(stream.call().initial_metadata_value(kEchoInitial),
                                       stream.call().trailing_metadata_value(kEchoTrailing));
      !wrong.empty()) {
    co_return "FullDuplexCall: " + wrong;
  }
  co_return "";
}

Task<std::string> echoed_status(Client& client, TestService::Stub& stub, std::string message, bool streaming_too) {
  testing::SimpleRequest request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(message);
  UnaryOutcome unary = co_await unary_call(client, request);
  if (unary.status.code != StatusCode::unknown || unary.status.message != message) {
    co_return "UnaryCall: status " + describe(unary.status);
  }
  if (!streaming_too) co_return "";
  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall();
  testing::StreamingOutputCallRequest streaming;
  *streaming.mutable_response_status() = request.response_status();
  co_await stream.write(streaming);
  co_await stream.writes_done();
  const Status status = co_await stream.finish();
  if (status.code != StatusCode::unknown || status.message != message) {
    co_return "FullDuplexCall: status " + describe(status);
  }
  co_return "";
}

Task<std::string> expect_unimplemented(TypedUnaryResult<testing::Empty> result) {
  if (result.status.code != StatusCode::unimplemented) co_return "status " + describe(result.status);
  co_return "";
}

Task<std::string> cancel_after_begin(TestService::Stub& stub) {
  ClientWriter<testing::StreamingInputCallRequest, testing::StreamingInputCallResponse> writer =
      stub.StreamingInputCall();
  writer.call().cancel();
  TypedUnaryResult<testing::StreamingInputCallResponse> result = co_await writer.finish();
  if (result.status.code != StatusCode::cancelled) co_return "status " + describe(result.status);
  co_return "";
}

Task<std::string> cancel_after_first_response(TestService::Stub& stub) {
  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall();
  co_await stream.write(streaming_request(kResponseBytes[0], kRequestBytes[0]));
  std::optional<testing::StreamingOutputCallResponse> response = co_await stream.read();
  if (!response || !is_zeros(response->payload(), kResponseBytes[0])) co_return "the first response";
  stream.call().cancel();
  const Status status = co_await stream.finish();
  if (status.code != StatusCode::cancelled) co_return "status " + describe(status);
  co_return "";
}

Task<std::string> timeout_on_sleeping_server(TestService::Stub& stub) {
  CallOptions options;
  options.timeout = std::chrono::milliseconds(1);
  ClientReaderWriter<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse> stream =
      stub.FullDuplexCall(options);
  testing::StreamingOutputCallRequest request;
  *request.mutable_payload() = zeros(kRequestBytes[0]);
  co_await stream.write(request);  // may fail: the deadline may have passed
  const Status status = co_await stream.finish();
  if (status.code != StatusCode::deadline_exceeded) co_return "status " + describe(status);
  co_return "";
}

Task<std::string> client_compressed_unary(Client& client) {
  // The probe: a request that says it is compressed and is not must be refused.
  testing::SimpleRequest probe = large_request();
  probe.mutable_expect_compressed()->set_value(true);
  UnaryOutcome refused = co_await unary_call(client, probe);
  if (refused.status.code != StatusCode::invalid_argument) {
    co_return "the uncompressed probe: status " + describe(refused.status) + ", not INVALID_ARGUMENT";
  }
  for (bool compressed : {true, false}) {
    testing::SimpleRequest request = large_request();
    request.mutable_expect_compressed()->set_value(compressed);
    CallOptions options;
    options.compression = compressed ? CompressionOptions(Compression::gzip, -1, 0) : CompressionOptions();
    UnaryOutcome outcome = co_await unary_call(client, request, options);
    if (std::string wrong = check_large_response(outcome); !wrong.empty()) {
      co_return (compressed ? "compressed: " : "uncompressed: ") + wrong;
    }
  }
  co_return "";
}

Task<std::string> server_compressed_unary(Client& client) {
  for (bool compressed : {true, false}) {
    testing::SimpleRequest request = large_request();
    request.mutable_response_compressed()->set_value(compressed);
    UnaryOutcome outcome = co_await unary_call(client, request);
    if (std::string wrong = check_large_response(outcome); !wrong.empty()) {
      co_return (compressed ? "compressed: " : "uncompressed: ") + wrong;
    }
    if (outcome.compressed != compressed) {
      co_return compressed ? "the response came uncompressed" : "the response came compressed";
    }
  }
  co_return "";
}

}  // namespace

std::span<const std::string_view> case_names() noexcept { return kCases; }

Task<std::string> run_case(std::shared_ptr<Client> client, std::string_view name) {
  TestService::Stub stub(client);
  if (name == "empty_unary") co_return co_await empty_unary(stub);
  if (name == "large_unary") co_return co_await large_unary(stub);
  if (name == "client_streaming") co_return co_await client_streaming(stub);
  if (name == "server_streaming") co_return co_await server_streaming(stub);
  if (name == "ping_pong") co_return co_await ping_pong(stub);
  if (name == "empty_stream") co_return co_await empty_stream(stub);
  if (name == "custom_metadata") co_return co_await custom_metadata(*client, stub);
  if (name == "status_code_and_message") co_return co_await echoed_status(*client, stub, "test status message", true);
  if (name == "special_status_message") {
    co_return co_await echoed_status(
        *client, stub, "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n", false);
  }
  if (name == "unimplemented_method")
    co_return co_await expect_unimplemented(co_await stub.UnimplementedCall(testing::Empty()));
  if (name == "unimplemented_service") {
    testing::UnimplementedService::Stub unimplemented(client);
    co_return co_await expect_unimplemented(co_await unimplemented.UnimplementedCall(testing::Empty()));
  }
  if (name == "cancel_after_begin") co_return co_await cancel_after_begin(stub);
  if (name == "cancel_after_first_response") co_return co_await cancel_after_first_response(stub);
  if (name == "timeout_on_sleeping_server") co_return co_await timeout_on_sleeping_server(stub);
  if (name == "client_compressed_unary") co_return co_await client_compressed_unary(*client);
  if (name == "server_compressed_unary") co_return co_await server_compressed_unary(*client);
  throw std::invalid_argument("no interop case named " + std::string(name));
}

}  // namespace weft::grpc::interop
