#pragma once
/// @file
/// The grpc-timeout header (PROTOCOL-HTTP2.md): "TimeoutValue TimeoutUnit", at most 8 digits and
/// one of H M S m u n.

#include <optional>
#include <string_view>

#include "weft/core/clock.h"

namespace weft::grpc {

/// Thread-safe (pure). The timeout `value` says; nullopt when it is malformed (the call then has
/// no deadline, as grpc++ does).
std::optional<Duration> parse_timeout(std::string_view value) noexcept;

}  // namespace weft::grpc
