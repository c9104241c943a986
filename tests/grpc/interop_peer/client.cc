// grpc++'s side of the interop suite: grpc's interop cases (doc/interop-test-descriptions.md) as a
// grpc++ 1.51 client makes them, for weft's interop server to meet. One line per case, exit status
// 0 when every case passed.
//
//   weft-interop-peer-client --server_port=N --test_case=NAME|all
//                            [--use_tls=true --ca_file=PEM --server_host_override=NAME]

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "grpc/testing/test.grpc.pb.h"

// grpc-core's test-only call inspectors (exported by libgrpc, declared in its internal
// src/core/lib/surface/call_test_only.h), as grpc's own interop server and client use them: the flags
// of the last message received and the call's compression. grpc++'s public API shows neither.
uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(grpc_call* call);
// grpc-core's flags of a message that came compressed (src/core/lib/surface/call.h): still
// compressed, or decompressed by the decompression filter (which trades the first for the second).
constexpr uint32_t kCameCompressed = 0x80000000u | 0x40000000u;

namespace {

using grpc::ClientContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;

const int kRequestBytes[] = {27182, 8, 1828, 45904};
const int kResponseBytes[] = {31415, 9, 2653, 58979};

Payload zeros(int size) {
  Payload p;
  p.set_body(std::string(static_cast<std::size_t>(size), '\0'));
  return p;
}
bool is_zeros(const Payload& p, int size) { return p.body() == std::string(static_cast<std::size_t>(size), '\0'); }
std::string describe(const Status& s) {
  return "status " + std::to_string(s.error_code()) + " \"" + s.error_message() + "\"";
}
SimpleRequest large_request() {
  SimpleRequest r;
  r.set_response_size(314159);
  *r.mutable_payload() = zeros(271828);
  return r;
}
StreamingOutputCallRequest streaming_request(int response_bytes, int request_bytes) {
  StreamingOutputCallRequest r;
  r.add_response_parameters()->set_size(response_bytes);
  *r.mutable_payload() = zeros(request_bytes);
  return r;
}
std::string metadata_value(const std::multimap<grpc::string_ref, grpc::string_ref>& md, const char* key) {
  auto it = md.find(key);
  return it == md.end() ? std::string("<none>") : std::string(it->second.data(), it->second.size());
}

class Cases {
 public:
  explicit Cases(std::shared_ptr<grpc::Channel> channel) : channel_(channel), stub_(TestService::NewStub(channel)) {}

  // Empty when the case passed, else what went wrong.
  std::string run(const std::string& name) {
    if (name == "empty_unary") {
      ClientContext c;
      Empty response;
      Status s = stub_->EmptyCall(&c, Empty(), &response);
      return s.ok() ? "" : describe(s);
    }
    if (name == "large_unary") return large_unary(nullptr);
    if (name == "client_streaming") {
      ClientContext c;
      StreamingInputCallResponse response;
      auto writer = stub_->StreamingInputCall(&c, &response);
      for (int size : kRequestBytes) {
        StreamingInputCallRequest r;
        *r.mutable_payload() = zeros(size);
        writer->Write(r);
      }
      writer->WritesDone();
      Status s = writer->Finish();
      if (!s.ok()) return describe(s);
      return response.aggregated_payload_size() == 74922 ? "" : "aggregated_payload_size wrong";
    }
    if (name == "server_streaming") {
      ClientContext c;
      StreamingOutputCallRequest request;
      for (int size : kResponseBytes) request.add_response_parameters()->set_size(size);
      auto reader = stub_->StreamingOutputCall(&c, request);
      StreamingOutputCallResponse response;
      std::size_t n = 0;
      while (reader->Read(&response)) {
        if (n >= 4 || !is_zeros(response.payload(), kResponseBytes[n])) return "response " + std::to_string(n);
        ++n;
      }
      Status s = reader->Finish();
      if (!s.ok()) return describe(s);
      return n == 4 ? "" : std::to_string(n) + " responses";
    }
    if (name == "ping_pong") {
      ClientContext c;
      auto stream = stub_->FullDuplexCall(&c);
      StreamingOutputCallResponse response;
      for (int i = 0; i < 4; ++i) {
        stream->Write(streaming_request(kResponseBytes[i], kRequestBytes[i]));
        if (!stream->Read(&response) || !is_zeros(response.payload(), kResponseBytes[i])) {
          return "response " + std::to_string(i);
        }
      }
      stream->WritesDone();
      if (stream->Read(&response)) return "a response after the last";
      Status s = stream->Finish();
      return s.ok() ? "" : describe(s);
    }
    if (name == "empty_stream") {
      ClientContext c;
      auto stream = stub_->FullDuplexCall(&c);
      stream->WritesDone();
      StreamingOutputCallResponse response;
      if (stream->Read(&response)) return "a response";
      Status s = stream->Finish();
      return s.ok() ? "" : describe(s);
    }
    if (name == "custom_metadata") {
      const std::string trailing("\xab\xab\xab", 3);
      {
        ClientContext c;
        c.AddMetadata("x-grpc-test-echo-initial", "test_initial_metadata_value");
        c.AddMetadata("x-grpc-test-echo-trailing-bin", trailing);
        SimpleResponse response;
        Status s = stub_->UnaryCall(&c, large_request(), &response);
        if (!s.ok()) return "UnaryCall: " + describe(s);
        if (metadata_value(c.GetServerInitialMetadata(), "x-grpc-test-echo-initial") != "test_initial_metadata_value")
          return "UnaryCall: initial metadata";
        if (metadata_value(c.GetServerTrailingMetadata(), "x-grpc-test-echo-trailing-bin") != trailing)
          return "UnaryCall: trailing metadata";
      }
      ClientContext c;
      c.AddMetadata("x-grpc-test-echo-initial", "test_initial_metadata_value");
      c.AddMetadata("x-grpc-test-echo-trailing-bin", trailing);
      auto stream = stub_->FullDuplexCall(&c);
      stream->Write(streaming_request(314159, 271828));
      stream->WritesDone();
      StreamingOutputCallResponse response;
      if (!stream->Read(&response) || !is_zeros(response.payload(), 314159)) return "FullDuplexCall: the response";
      Status s = stream->Finish();
      if (!s.ok()) return "FullDuplexCall: " + describe(s);
      if (metadata_value(c.GetServerInitialMetadata(), "x-grpc-test-echo-initial") != "test_initial_metadata_value")
        return "FullDuplexCall: initial metadata";
      if (metadata_value(c.GetServerTrailingMetadata(), "x-grpc-test-echo-trailing-bin") != trailing)
        return "FullDuplexCall: trailing metadata";
      return "";
    }
    if (name == "status_code_and_message") return echoed_status("test status message", true);
    if (name == "special_status_message") {
      return echoed_status("\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n", false);
    }
    if (name == "unimplemented_method") {
      ClientContext c;
      Empty response;
      Status s = stub_->UnimplementedCall(&c, Empty(), &response);
      return s.error_code() == StatusCode::UNIMPLEMENTED ? "" : describe(s);
    }
    if (name == "unimplemented_service") {
      auto stub = UnimplementedService::NewStub(channel_);
      ClientContext c;
      Empty response;
      Status s = stub->UnimplementedCall(&c, Empty(), &response);
      return s.error_code() == StatusCode::UNIMPLEMENTED ? "" : describe(s);
    }
    if (name == "cancel_after_begin") {
      ClientContext c;
      StreamingInputCallResponse response;
      auto writer = stub_->StreamingInputCall(&c, &response);
      c.TryCancel();
      Status s = writer->Finish();
      return s.error_code() == StatusCode::CANCELLED ? "" : describe(s);
    }
    if (name == "cancel_after_first_response") {
      ClientContext c;
      auto stream = stub_->FullDuplexCall(&c);
      stream->Write(streaming_request(31415, 27182));
      StreamingOutputCallResponse response;
      if (!stream->Read(&response) || !is_zeros(response.payload(), 31415)) return "the first response";
      c.TryCancel();
      Status s = stream->Finish();
      return s.error_code() == StatusCode::CANCELLED ? "" : describe(s);
    }
    if (name == "timeout_on_sleeping_server") {
      ClientContext c;
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
      auto stream = stub_->FullDuplexCall(&c);
      StreamingOutputCallRequest request;
      *request.mutable_payload() = zeros(27182);
      stream->Write(request);
      Status s = stream->Finish();
      return s.error_code() == StatusCode::DEADLINE_EXCEEDED ? "" : describe(s);
    }
    if (name == "client_compressed_unary") {
      {
        ClientContext c;  // the probe: says compressed, is not
        SimpleRequest request = large_request();
        request.mutable_expect_compressed()->set_value(true);
        SimpleResponse response;
        Status s = stub_->UnaryCall(&c, request, &response);
        if (s.error_code() != StatusCode::INVALID_ARGUMENT) return "the probe: " + describe(s);
      }
      for (bool compressed : {true, false}) {
        SimpleRequest request = large_request();
        request.mutable_expect_compressed()->set_value(compressed);
        std::string wrong = large_unary(&request, compressed ? GRPC_COMPRESS_GZIP : GRPC_COMPRESS_NONE);
        if (!wrong.empty()) return wrong;
      }
      return "";
    }
    if (name == "server_compressed_unary") {
      for (bool compressed : {true, false}) {
        SimpleRequest request = large_request();
        request.mutable_response_compressed()->set_value(compressed);
        bool came_compressed = false;
        std::string wrong = large_unary(&request, GRPC_COMPRESS_NONE, &came_compressed);
        if (!wrong.empty()) return wrong;
        if (came_compressed != compressed) return compressed ? "the response came uncompressed" : "came compressed";
      }
      return "";
    }
    return "unknown case";
  }

 private:
  std::string large_unary(const SimpleRequest* given, grpc_compression_algorithm algorithm = GRPC_COMPRESS_NONE,
                          bool* came_compressed = nullptr) {
    ClientContext c;
    c.set_compression_algorithm(algorithm);
    SimpleResponse response;
    Status s = stub_->UnaryCall(&c, given ? *given : large_request(), &response);
    if (!s.ok()) return describe(s);
    if (came_compressed) *came_compressed = (grpc_call_test_only_get_message_flags(c.c_call()) & kCameCompressed) != 0;
    return is_zeros(response.payload(), 314159) ? "" : "the response's payload";
  }
  std::string echoed_status(const std::string& message, bool streaming_too) {
    {
      ClientContext c;
      SimpleRequest request;
      request.mutable_response_status()->set_code(2);
      request.mutable_response_status()->set_message(message);
      SimpleResponse response;
      Status s = stub_->UnaryCall(&c, request, &response);
      if (s.error_code() != StatusCode::UNKNOWN || s.error_message() != message) return "UnaryCall: " + describe(s);
    }
    if (!streaming_too) return "";
    ClientContext c;
    auto stream = stub_->FullDuplexCall(&c);
    StreamingOutputCallRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    stream->Write(request);
    stream->WritesDone();
    Status s = stream->Finish();
    if (s.error_code() != StatusCode::UNKNOWN || s.error_message() != message) return "FullDuplexCall: " + describe(s);
    return "";
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

const char* const kCases[] = {"empty_unary",
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

}  // namespace

int main(int argc, char** argv) {
  std::string port = "10000";
  std::string test_case = "all";
  bool tls = false;
  std::string ca_file;
  std::string host_override = "localhost";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--server_port=", 14) == 0) port = argv[i] + 14;
    if (std::strncmp(argv[i], "--test_case=", 12) == 0) test_case = argv[i] + 12;
    if (std::strcmp(argv[i], "--use_tls=true") == 0) tls = true;
    if (std::strncmp(argv[i], "--ca_file=", 10) == 0) ca_file = argv[i] + 10;
    if (std::strncmp(argv[i], "--server_host_override=", 23) == 0) host_override = argv[i] + 23;
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments arguments;
  if (tls) {
    std::stringstream ca;
    ca << std::ifstream(ca_file).rdbuf();
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ca.str();
    credentials = grpc::SslCredentials(options);
    arguments.SetSslTargetNameOverride(host_override);
  }
  Cases cases(grpc::CreateCustomChannel("127.0.0.1:" + port, credentials, arguments));
  int failed = 0;
  bool known = false;
  for (const char* name : kCases) {
    if (test_case != "all" && test_case != name) continue;
    known = true;
    const std::string wrong = cases.run(name);
    if (wrong.empty()) {
      std::printf("%s: passed\n", name);
    } else {
      std::printf("%s: FAILED: %s\n", name, wrong.c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  if (!known) {
    std::fprintf(stderr, "unknown test case %s\n", test_case.c_str());
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
