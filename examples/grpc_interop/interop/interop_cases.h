#pragma once
/// @file
/// The client's side of grpc's interop cases (grpc's doc/interop-test-descriptions.md), on
/// protoc-gen-weft's generated stubs for grpc.testing.TestService: each case makes the calls its
/// description says and checks what it asserts, against any interop server (weft's, grpc++'s,
/// grpc-java's...).

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "weft/core/task.h"
#include "weft/grpc/client.h"

namespace weft::grpc::interop {

/// Thread-safe (constant). The cases run_case() knows, in the order grpc's description lists them.
std::span<const std::string_view> case_names() noexcept;

/// Loop thread only (client's loop). Runs the case `name` over `client`: empty when it passed, else
/// what it found wrong. Throws std::invalid_argument for a name case_names() does not list.
Task<std::string> run_case(std::shared_ptr<Client> client, std::string_view name);

}  // namespace weft::grpc::interop
