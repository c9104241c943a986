#pragma once
// bench.proto's messages (shared/peers/grpc/bench.proto, wire-compatible with grpc.testing's), encoded
// and decoded by hand: the benchmark server needs SimpleRequest.response_size and writes a
// SimpleResponse of that many payload bytes, nothing else. Protobuf's own encoder agrees byte for byte
// (checked by tests/integration/grpc_interop_test.cc against the generated code).
//
//   SimpleRequest  { int32 response_size = 2; Payload payload = 3; }
//   SimpleResponse { Payload payload = 1; }        Payload { bytes body = 2; }
//
// Thread-safe (pure functions; the allocator is thread-safe).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/server_call.h"

namespace weft::grpc::bench {

/// The largest response_size served (a request asking for more is INVALID_ARGUMENT).
inline constexpr std::size_t kMaxResponseBytes = 4u * 1024 * 1024 - 64;

inline std::size_t varint_size(std::uint64_t value) noexcept {
  std::size_t n = 1;
  for (; value >= 0x80; value >>= 7) ++n;
  return n;
}

inline void write_varint(ByteBuf& out, std::uint64_t value) {
  for (; value >= 0x80; value >>= 7) out.write_u8(static_cast<std::uint8_t>(value | 0x80));
  out.write_u8(static_cast<std::uint8_t>(value));
}

/// Reads a varint of `bytes` at `at`; false past the end or past 10 bytes.
inline bool read_varint(const std::uint8_t* bytes, std::size_t size, std::size_t& at, std::uint64_t& value) noexcept {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= size) return false;
    const std::uint8_t byte = bytes[at++];
    value |= std::uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

/// SimpleRequest.response_size of an encoded request (unknown fields skipped). Throws StatusError
/// INVALID_ARGUMENT on bytes that are not a SimpleRequest, or a size past kMaxResponseBytes.
inline std::size_t response_size(const ByteBuf& request) {
  const std::uint8_t* p = request.read_ptr();
  const std::size_t n = request.readable_bytes();
  std::size_t at = 0;
  std::uint64_t size = 0;
  auto bad = [](const char* what) { return StatusError(Status(StatusCode::invalid_argument, what)); };
  while (at < n) {
    std::uint64_t key = 0, value = 0;
    if (!read_varint(p, n, at, key)) throw bad("SimpleRequest: a truncated field key");
    switch (key & 7) {
      case 0:
        if (!read_varint(p, n, at, value)) throw bad("SimpleRequest: a truncated varint");
        if ((key >> 3) == 2) size = value;
        break;
      case 1:
        if (n - at < 8) throw bad("SimpleRequest: a truncated fixed64");
        at += 8;
        break;
      case 2:
        if (!read_varint(p, n, at, value) || value > n - at) throw bad("SimpleRequest: a truncated field");
        at += static_cast<std::size_t>(value);
        break;
      case 5:
        if (n - at < 4) throw bad("SimpleRequest: a truncated fixed32");
        at += 4;
        break;
      default: throw bad("SimpleRequest: an unknown wire type");
    }
  }
  // int32 on the wire: a negative size arrives as a 10-byte varint, past the bound.
  if (size > kMaxResponseBytes) throw bad("SimpleRequest: response_size out of range");
  return static_cast<std::size_t>(size);
}

/// The encoded size of SimpleResponse{payload: {body: `size` zero bytes}} (0 for size 0: the empty
/// message, as grpc++'s server sends it).
inline std::size_t response_bytes(std::size_t size) noexcept {
  if (size == 0) return 0;
  const std::size_t payload = 1 + varint_size(size) + size;
  return 1 + varint_size(payload) + payload;
}

/// SimpleResponse of `size` payload bytes, already framed (gRPC's 5-byte prefix, then the message) in
/// one buffer from `allocator`: what ServerCall::write_framed() sends. One allocation, no copy.
inline ByteBuf framed_response(std::size_t size, ByteBufAllocator& allocator) {
  const std::size_t message = response_bytes(size);
  ByteBuf out = allocator.buffer(kMessagePrefixBytes + message);
  out.write_u8(0);  // not compressed
  out.write_u32(static_cast<std::uint32_t>(message));
  if (size == 0) return out;
  out.write_u8(0x0A);  // SimpleResponse.payload: field 1, length-delimited
  write_varint(out, 1 + varint_size(size) + size);
  out.write_u8(0x12);  // Payload.body: field 2, length-delimited
  write_varint(out, size);
  std::fill_n(out.write_ptr(), size, std::uint8_t{0});
  out.advance_writer(size);
  return out;
}

}  // namespace weft::grpc::bench
