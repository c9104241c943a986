#include "host_name.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <cstring>

namespace weft::dns_detail {

std::string normalize_host_name(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return {};
  std::string name;
  name.reserve(host.size());
  std::size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) return {};
      label = 0;
    } else {
      bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (!allowed || ++label > 63) return {};
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    name.push_back(c);
  }
  return name;
}

std::optional<SocketAddress> numeric_address(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN + IF_NAMESIZE) return std::nullopt;
  char text[INET6_ADDRSTRLEN + IF_NAMESIZE];
  std::memcpy(text, host.data(), host.size());
  text[host.size()] = '\0';
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, text, &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    return SocketAddress(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
  }
  sockaddr_in6 v6{};
  char* zone = std::strchr(text, '%');
  if (zone != nullptr) *zone++ = '\0';
  if (::inet_pton(AF_INET6, text, &v6.sin6_addr) != 1) return std::nullopt;
  if (zone != nullptr) {
    v6.sin6_scope_id = ::if_nametoindex(zone);
    if (v6.sin6_scope_id == 0) return std::nullopt;
  }
  v6.sin6_family = AF_INET6;
  return SocketAddress(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
}

SocketAddress with_port(const SocketAddress& address, std::uint16_t port) noexcept {
  sockaddr_storage raw{};
  std::memcpy(&raw, address.raw(), address.length());
  if (raw.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&raw)->sin_port = htons(port);
  } else if (raw.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&raw)->sin6_port = htons(port);
  }
  return SocketAddress(reinterpret_cast<const sockaddr*>(&raw), address.length());
}

}  // namespace weft::dns_detail
