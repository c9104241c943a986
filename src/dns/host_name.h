#pragma once
// Host-name checks shared by the resolver and the hosts file.

#include <optional>
#include <string>
#include <string_view>

#include "weft/channel/socket_address.h"

namespace weft::dns_detail {

// `host` in the form names are compared in: lower case, one trailing dot removed. Empty when it is
// not a host name: empty, longer than 253 bytes, an empty label or one over 63 bytes, or a byte other
// than a letter, a digit, '-' or '_' (which some private zones use).
std::string normalize_host_name(std::string_view host);

// `host` as a numeric IPv4 or IPv6 address, port 0 ("[::1]" as in a URL, and a zone: "fe80::1%lo"),
// without any lookup; nullopt when it is not one.
std::optional<SocketAddress> numeric_address(std::string_view host);

// `address` with its port set to `port`.
SocketAddress with_port(const SocketAddress& address, std::uint16_t port) noexcept;

}  // namespace weft::dns_detail
