#pragma once
/// @file
/// gRPC custom metadata (PROTOCOL-HTTP2.md, "Custom-Metadata"): keys of lowercase letters, digits,
/// '-', '_' and '.'; ASCII values of printable characters (0x20..0x7E); binary values under keys
/// ending in "-bin", base64-encoded on the wire. "Implementations MUST accept padded and un-padded
/// values and should emit un-padded values": weft sends them unpadded and takes both. Keys starting
/// with "grpc-" are reserved to gRPC, and the headers HTTP/2 and gRPC's transport own (content-type,
/// te, user-agent, host, and HTTP/1's connection headers) are not metadata either: the application
/// cannot add them (InvalidMetadata, at once, never a bad frame on the wire).
///
/// For the server (ServerCall::metadata(), add_response_header(), add_trailing_metadata()) and for
/// a client alike: encode_metadata_value() before sending, decode_metadata_values() after receiving.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "weft/grpc/status.h"

namespace weft::http {
class HttpRequest;
}

namespace weft::grpc {

/// Thrown when the application adds metadata gRPC does not allow (a key or value, see the file's
/// description). Nothing was added.
class InvalidMetadata : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Thread-safe (pure). Whether `key` names binary metadata (ends in "-bin").
bool is_binary_metadata_key(std::string_view key) noexcept;
/// Thread-safe (pure). Whether `key` is reserved (grpc-*, or a header the transport owns).
bool is_reserved_metadata_key(std::string_view key) noexcept;

/// Thread-safe (pure). `bytes` in base64 (RFC 4648 section 4, the standard alphabet), unpadded.
std::string base64_encode(std::string_view bytes);
/// Thread-safe (pure). The bytes `text` encodes, padded or not; nullopt when it is not base64
/// (another character, '=' before the end, a length of 4n + 1).
std::optional<std::string> base64_decode(std::string_view text);

/// Thread-safe (pure). Checks metadata the application adds: throws InvalidMetadata for a key
/// that is empty, has a character other than a-z 0-9 '-' '_' '.', or is reserved, and for an
/// ASCII key's value with a byte outside 0x20..0x7E (a -bin key's value may hold any bytes).
void check_metadata(std::string_view key, std::string_view value);
/// Thread-safe (pure). check_metadata(), then the value as sent: base64 (unpadded) under a -bin key,
/// else as it is.
std::string encode_metadata_value(std::string_view key, std::string_view value);
/// Thread-safe (pure). A received value as the application sees it: under a -bin key, each of its
/// comma-separated parts decoded (HTTP joins repeated fields with ','), nullopt when one is not
/// base64; else the value itself, once.
std::optional<std::vector<std::string>> decode_metadata_values(std::string_view key, std::string_view wire_value);
/// Thread-safe (pure). The first value decode_metadata_values() gives for a received field, if it
/// was received (`wire_value`) and decodes.
std::optional<std::string> decode_first_metadata_value(std::string_view key, std::optional<std::string_view> wire_value);

/// Thread-safe (pure). The first -bin header of `request` whose value is not base64, as the status
/// a call with it fails with (INTERNAL, as grpc-core fails a stream whose binary metadata does not
/// decode); nullopt when every -bin value decodes.
std::optional<Status> check_binary_metadata(const http::HttpRequest& request);
/// Thread-safe (pure). The same for one received field: INTERNAL when `key` is a -bin key and
/// `wire_value` is not base64; nullopt otherwise.
std::optional<Status> check_binary_metadata(std::string_view key, std::string_view wire_value);

}  // namespace weft::grpc
