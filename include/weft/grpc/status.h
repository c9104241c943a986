#pragma once
/// @file
/// gRPC status codes and the status a call ends with (grpc-status, grpc-message), and the
/// percent-encoding grpc-message is sent in (gRPC's PROTOCOL-HTTP2.md).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace weft::grpc {

/// The gRPC status codes (grpc/doc/statuscodes.md), with their wire values.
enum class StatusCode : std::uint8_t {
  ok = 0,
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
};

/// Thread-safe (pure). The code's name as gRPC spells it ("DEADLINE_EXCEEDED"); "UNKNOWN" for a
/// value outside the list.
std::string_view status_code_name(StatusCode code) noexcept;

/// How a call ended: a code and a message for people (sent percent-encoded as grpc-message).
/// A value type (not thread-safe to mutate from several threads).
/// Not an aggregate on purpose: GCC 12 mishandles aggregates built from temporaries in coroutines.
struct Status {
  StatusCode code = StatusCode::ok;  ///< the gRPC status code
  std::string message;               ///< for people; empty when there is nothing to say

  /// OK, no message.
  Status() = default;
  /// `code` with `message`.
  Status(StatusCode status_code, std::string status_message = {})
      : code(status_code), message(std::move(status_message)) {}

  /// Whether the code is OK.
  bool ok() const noexcept { return code == StatusCode::ok; }
};

/// Thread-safe (pure). grpc-message's encoding: bytes outside 0x20..0x7E, and '%', as %XX
/// (uppercase hex); UTF-8 passes byte by byte.
std::string percent_encode(std::string_view text);
/// Thread-safe (pure). The inverse of percent_encode; a '%' not followed by two hex digits is
/// kept as it is (the spec asks receivers to be lenient).
std::string percent_decode(std::string_view text);

}  // namespace weft::grpc
