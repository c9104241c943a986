#pragma once
// For the tests that meet grpc++ 1.51 (the reference client and server of bench.proto's
// BenchmarkService in tests/integration/grpc_peer, a copy of shared/peers/grpc): the peer built once
// per process, and the few protobuf fields of bench.proto that weft's test services read and write
// on bytes (the core gRPC library does not depend on protobuf).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "support/shell.h"
#include "weft/buffer/byte_buf.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/status.h"

namespace weft::test {

/// The built peer's binaries, or why there are none (`skip` when grpc++ is not installed).
struct GrpcPeer {
  std::string client;
  std::string server;
  std::string error;
  bool skip = false;
};

/// The peer, built once per process: the build has built it already (target weft_grpc_peer), and
/// build.sh returns at once while its binaries are newer than their sources (it locks its directory,
/// so test processes side by side build it once). Sources: WEFT_GRPC_PEER_DIR from the environment,
/// else the one CMake found.
inline const GrpcPeer& grpc_peer() {
  static const GrpcPeer built = [] {
    GrpcPeer p;
    int status = -1;
    const auto shell = [&status](const std::string& command) { return run_shell(command + " 2>&1", status); };
    shell("pkg-config --exists grpc++ protobuf && command -v grpc_cpp_plugin && command -v protoc");
    if (status != 0) {
      p.skip = true;
      p.error = "grpc++ is not installed (apt-get install libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev "
                "protobuf-compiler pkg-config)";
      return p;
    }
    const char* dir = std::getenv("WEFT_GRPC_PEER_DIR");
    const std::string sources = dir != nullptr ? dir : WEFT_GRPC_PEER_DIR;
#ifdef WEFT_GRPC_PEER_OUT
    const std::string out = WEFT_GRPC_PEER_OUT;
#else
    // Not shared/peers' $TMPDIR/weft-peer-grpc: build.sh keeps binaries newer than its sources, so
    // the older client built there from shared/peers/grpc (without the compression arguments this
    // copy's has) would be taken for this one.
    const char* tmp = std::getenv("TMPDIR");
    const std::string out = std::string(tmp != nullptr ? tmp : "/tmp") + "/weft-test-peer-grpc";
#endif
    const std::string log = shell("bash " + sources + "/build.sh " + out);
    if (status != 0) {
      p.error = "build.sh failed: " + log;
      return p;
    }
    p.client = out + "/weft-peer-grpc-client";
    p.server = out + "/weft-peer-grpc-server";
    return p;
  }();
  return built;
}

/// Reads a varint at `at` of `buf`; false past the end.
inline bool read_varint(const ByteBuf& buf, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= buf.readable_bytes()) return false;
    const std::uint8_t byte = buf.read_ptr()[at++];
    value |= std::uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

inline void write_varint(ByteBuf& buf, std::uint64_t value) {
  while (value >= 0x80) {
    buf.write_u8(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  buf.write_u8(static_cast<std::uint8_t>(value));
}

inline std::size_t varint_size(std::uint64_t value) {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

/// SimpleRequest.response_size (field 2, varint). A request that is not a SimpleRequest (a message
/// left compressed, say) or asks for more than 64 MiB is INVALID_ARGUMENT (thrown as StatusError),
/// which fails the client's call.
inline std::size_t response_size(const ByteBuf& request) {
  using grpc::Status;
  using grpc::StatusCode;
  using grpc::StatusError;
  std::size_t at = 0;
  std::uint64_t size = 0;
  while (at < request.readable_bytes()) {
    std::uint64_t key = 0, value = 0;
    if (!read_varint(request, at, key)) throw StatusError(Status{StatusCode::invalid_argument, "bad key"});
    switch (key & 7) {
      case 0:
        if (!read_varint(request, at, value)) throw StatusError(Status{StatusCode::invalid_argument, "bad varint"});
        if ((key >> 3) == 2) size = value;
        break;
      case 2:
        if (!read_varint(request, at, value) || value > request.readable_bytes() - at) {
          throw StatusError(Status{StatusCode::invalid_argument, "bad length"});
        }
        at += value;
        break;
      case 1: at += 8; break;
      case 5: at += 4; break;
      default: throw StatusError(Status{StatusCode::invalid_argument, "bad wire type"});
    }
  }
  if (size > 64u * 1024 * 1024) throw StatusError(Status{StatusCode::invalid_argument, "response_size too large"});
  return static_cast<std::size_t>(size);
}

/// SimpleResponse{payload: Payload{body: `size` bytes}}; empty when size is 0 (as grpc++'s server).
/// The body is zeros (they shrink a thousandfold), or with `textured` 16 letters in a pseudo-random
/// order (they shrink about twofold: a stream of them is bounded by flow control, where a stream of
/// zeros floods a client with a thousand times its window).
inline ByteBuf simple_response(std::size_t size, bool textured = false) {
  if (size == 0) return ByteBuf::copy_of("");
  const std::size_t payload = 1 + varint_size(size) + size;
  ByteBuf out = ByteBuf::copy_of("");
  out.ensure_writable(1 + varint_size(payload) + payload);
  out.write_u8(0x0A);  // field 1, length-delimited
  write_varint(out, payload);
  out.write_u8(0x12);  // field 2, length-delimited
  write_varint(out, size);
  std::uint8_t* body = out.write_ptr();
  std::fill_n(body, size, std::uint8_t{0});
  std::uint32_t lcg = 12345;
  for (std::size_t i = 0; textured && i < size; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    body[i] = static_cast<std::uint8_t>('a' + (lcg >> 28));
  }
  out.advance_writer(size);
  return out;
}

}  // namespace weft::test
