#pragma once
/// @file
/// grpc.testing.TestService as grpc's interop servers serve it (grpc's
/// doc/interop-test-descriptions.md, "Server"), on protoc-gen-weft's generated code: payloads of
/// zeros of the sizes asked, the status a request's response_status names, the request's
/// x-grpc-test-echo-initial and x-grpc-test-echo-trailing-bin metadata echoed, responses compressed
/// as a request's response_compressed says and requests checked against its expect_compressed.
/// UnimplementedCall and UnimplementedService are left unserved (UNIMPLEMENTED).

#include "weft/grpc/service_registry.h"

namespace weft::grpc::interop {

/// Not thread-safe (register before serving). Adds grpc.testing.TestService to `registry`.
void add_test_service(ServiceRegistry& registry);

}  // namespace weft::grpc::interop
