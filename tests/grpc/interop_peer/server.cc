// grpc++'s side of the interop suite: grpc.testing.TestService served by grpc++ 1.51 as grpc's
// doc/interop-test-descriptions.md describes its server, for weft's interop client to meet.
// Prints its port, serves until killed.
//
//   weft-interop-peer-server --port=0    (or --host 127.0.0.1 --port N, as weft's tests start it)
//                            [--use_tls=true --cert_file=PEM --key_file=PEM]

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
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

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;

grpc::Status echo_status(const EchoStatus& s) { return grpc::Status(static_cast<StatusCode>(s.code()), s.message()); }

void echo_metadata(ServerContext* context) {
  const auto& md = context->client_metadata();
  auto initial = md.find("x-grpc-test-echo-initial");
  if (initial != md.end()) {
    context->AddInitialMetadata("x-grpc-test-echo-initial",
                                std::string(initial->second.data(), initial->second.size()));
  }
  auto trailing = md.find("x-grpc-test-echo-trailing-bin");
  if (trailing != md.end()) {
    context->AddTrailingMetadata("x-grpc-test-echo-trailing-bin",
                                 std::string(trailing->second.data(), trailing->second.size()));
  }
}

// As grpc's interop server checks it: compressed means the call has an encoding and the message's flag.
bool request_compressed(ServerContext* context) {
  return grpc_call_test_only_get_compression_algorithm(context->c_call()) != GRPC_COMPRESS_NONE &&
         (grpc_call_test_only_get_message_flags(context->c_call()) & kCameCompressed) != 0;
}

Payload zeros(int size) {
  Payload p;
  p.set_body(std::string(static_cast<std::size_t>(size), '\0'));
  return p;
}

template <class Writer>
bool write_responses(const StreamingOutputCallRequest& request, Writer* writer) {
  for (const ResponseParameters& parameters : request.response_parameters()) {
    if (parameters.interval_us() > 0) std::this_thread::sleep_for(std::chrono::microseconds(parameters.interval_us()));
    StreamingOutputCallResponse response;
    *response.mutable_payload() = zeros(parameters.size());
    if (!writer->Write(response)) return false;
  }
  return true;
}

class Service final : public TestService::Service {
  Status EmptyCall(ServerContext* context, const Empty*, Empty*) override {
    echo_metadata(context);
    return Status::OK;
  }
  Status UnaryCall(ServerContext* context, const SimpleRequest* request, SimpleResponse* response) override {
    echo_metadata(context);
    if (request->has_expect_compressed() && request->expect_compressed().value() != request_compressed(context)) {
      return Status(StatusCode::INVALID_ARGUMENT, "the request's compression is not the one expected");
    }
    if (request->has_response_compressed()) {
      context->set_compression_algorithm(request->response_compressed().value() ? GRPC_COMPRESS_GZIP
                                                                                : GRPC_COMPRESS_NONE);
    }
    if (request->has_response_status() && request->response_status().code() != 0) {
      return echo_status(request->response_status());
    }
    *response->mutable_payload() = zeros(request->response_size());
    return Status::OK;
  }
  Status StreamingOutputCall(ServerContext* context, const StreamingOutputCallRequest* request,
                             grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    echo_metadata(context);
    write_responses(*request, writer);
    if (request->has_response_status() && request->response_status().code() != 0) {
      return echo_status(request->response_status());
    }
    return Status::OK;
  }
  Status StreamingInputCall(ServerContext* context, grpc::ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override {
    echo_metadata(context);
    StreamingInputCallRequest request;
    int total = 0;
    while (reader->Read(&request)) total += static_cast<int>(request.payload().body().size());
    response->set_aggregated_payload_size(total);
    return Status::OK;
  }
  Status FullDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream) override {
    echo_metadata(context);
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) {
      if (request.has_response_status() && request.response_status().code() != 0) {
        return echo_status(request.response_status());
      }
      if (!write_responses(request, stream)) break;
    }
    return Status::OK;
  }
  Status HalfDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream) override {
    echo_metadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) requests.push_back(request);
    for (const StreamingOutputCallRequest& r : requests) {
      if (!write_responses(r, stream)) break;
    }
    return Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  bool tls = false;
  std::string cert_file;
  std::string key_file;
  for (int i = 1; i < argc; ++i) {  // --port=N or --port N; --host is 127.0.0.1 whatever it says
    if (std::strncmp(argv[i], "--port=", 7) == 0) port = std::atoi(argv[i] + 7);
    if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) port = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--use_tls=true") == 0) tls = true;
    if (std::strncmp(argv[i], "--cert_file=", 12) == 0) cert_file = argv[i] + 12;
    if (std::strncmp(argv[i], "--key_file=", 11) == 0) key_file = argv[i] + 11;
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls) {
    std::stringstream cert;
    std::stringstream key;
    cert << std::ifstream(cert_file).rdbuf();
    key << std::ifstream(key_file).rdbuf();
    grpc::SslServerCredentialsOptions options;
    options.pem_key_cert_pairs.push_back({key.str(), cert.str()});
    credentials = grpc::SslServerCredentials(options);
  }
  Service service;
  int bound = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), credentials, &bound);
  // Without SO_REUSEPORT (grpc++'s default is with): a port another process listens on fails the bind
  // (the test tries another), instead of sharing that process's connections with it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) {
    std::fprintf(stderr, "weft-interop-peer-server: cannot listen on port %d\n", port);
    return 1;
  }
  std::printf("listening on 127.0.0.1:%d\n", bound);
  std::fflush(stdout);
  server->Wait();
  return 0;
}
