// grpc::parse_target: gRPC's target names (naming.md), and connectivity_state_name.

#include <charconv>
#include <stdexcept>
#include <string>

#include "weft/grpc/channel.h"

namespace weft::grpc {

namespace {

constexpr std::uint16_t kDefaultPort = 443;

[[noreturn]] void refuse(std::string_view target, std::string_view why) {
  throw std::invalid_argument("gRPC target '" + std::string(target) + "': " + std::string(why));
}

std::uint16_t parse_port(std::string_view target, std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    refuse(target, "'" + std::string(text) + "' is not a port");
  }
  return static_cast<std::uint16_t>(value);
}

// "host", "host:port", "[v6]", "[v6]:port", or (ipv6 lists) a bare v6 address: host and port.
std::pair<std::string_view, std::uint16_t> split_host_port(std::string_view target, std::string_view text,
                                                           bool bare_ipv6) {
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) refuse(target, "'" + std::string(text) + "' has no closing ']'");
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) refuse(target, "'" + std::string(text) + "' is not [address]:port");
    return {text.substr(1, close - 1), rest.empty() ? kDefaultPort : parse_port(target, rest.substr(1))};
  }
  const std::size_t colon = text.rfind(':');
  if (bare_ipv6 || colon == std::string_view::npos || text.find(':') != colon) return {text, kDefaultPort};
  return {text.substr(0, colon), parse_port(target, text.substr(colon + 1))};
}

ChannelTarget address_list(std::string_view target, std::string_view list, bool ipv6) {
  ChannelTarget parsed;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    if (item.empty()) refuse(target, "an address in the list is empty");
    const bool bare = ipv6 && !item.starts_with('[');
    const auto [host, port] = split_host_port(target, item, bare);
    try {
      SocketAddress address = SocketAddress::from(host, port);
      if ((address.family() == AF_INET6) != ipv6) throw std::invalid_argument("wrong family");
      parsed.addresses.push_back(address);
    } catch (const std::invalid_argument&) {
      refuse(target, "'" + std::string(host) + "' is not an " + (ipv6 ? "IPv6" : "IPv4") + " address");
    }
    start = comma + 1;
  }
  parsed.authority = parsed.addresses.front().to_string();
  return parsed;
}

// unix:path, unix:///absolute/path, unix-abstract:name: one address, authority "localhost" (as grpc-core).
ChannelTarget unix_target(std::string_view target) {
  ChannelTarget parsed;
  try {
    if (target.starts_with("unix-abstract:")) {
      parsed.addresses.push_back(SocketAddress::unix_abstract(target.substr(14)));
    } else {
      std::string_view path = target.substr(5);
      if (path.starts_with("//")) {
        if (!path.starts_with("///")) refuse(target, "unix:// needs an absolute path (unix:///path)");
        path.remove_prefix(2);
      }
      parsed.addresses.push_back(SocketAddress::unix_socket(path));
    }
  } catch (const std::invalid_argument& e) {
    refuse(target, e.what());
  }
  parsed.authority = "localhost";
  return parsed;
}

}  // namespace

ChannelTarget parse_target(std::string_view target) {
  if (target.starts_with("unix:") || target.starts_with("unix-abstract:")) return unix_target(target);
  if (target.starts_with("ipv4:")) return address_list(target, target.substr(5), false);
  if (target.starts_with("ipv6:")) return address_list(target, target.substr(5), true);
  std::string_view name = target;
  if (name.starts_with("dns:")) {
    name.remove_prefix(4);
    if (name.starts_with("//")) {  // dns://[authority]/host: the DNS server's authority is not supported
      const std::size_t slash = name.find('/', 2);
      if (slash == std::string_view::npos) refuse(target, "dns:// needs a '/' before the host");
      if (slash != 2)
        refuse(target, "a DNS server in the target (dns://server/host) is not supported; use ResolverOptions");
      name.remove_prefix(3);
    }
  }
  const auto [host, port] = split_host_port(target, name, false);
  if (host.empty()) refuse(target, "the host is empty");
  ChannelTarget parsed;
  parsed.host = std::string(host);
  parsed.port = port;
  parsed.authority =
      (host.find(':') != std::string_view::npos ? "[" + parsed.host + "]" : parsed.host) + ":" + std::to_string(port);
  return parsed;
}

std::string_view connectivity_state_name(ConnectivityState state) noexcept {
  switch (state) {
    case ConnectivityState::idle: return "IDLE";
    case ConnectivityState::connecting: return "CONNECTING";
    case ConnectivityState::ready: return "READY";
    case ConnectivityState::transient_failure: return "TRANSIENT_FAILURE";
    case ConnectivityState::shutdown: return "SHUTDOWN";
  }
  return "?";
}

}  // namespace weft::grpc
