#include "weft/channel/socket_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace weft {

SocketAddress::SocketAddress() noexcept = default;

SocketAddress::SocketAddress(const sockaddr* addr, socklen_t len) noexcept {
  if (addr == nullptr || len == 0 || len > sizeof storage_) return;
  std::memcpy(&storage_, addr, len);
  length_ = len;
}

SocketAddress SocketAddress::from(std::string_view host, std::uint16_t port) {
  std::string h(host);
  if (h == "localhost") h = "127.0.0.1";
  SocketAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage_);
  if (::inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    out.length_ = sizeof(sockaddr_in);
    return out;
  }
  out = SocketAddress();
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  if (::inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    out.length_ = sizeof(sockaddr_in6);
    return out;
  }
  throw std::invalid_argument(fmt::format("not a numeric IP address: '{}'", host));
}

SocketAddress SocketAddress::parse(std::string_view text) {
  std::string_view host, port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw std::invalid_argument(fmt::format("expected [host]:port, got '{}'", text));
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) throw std::invalid_argument(fmt::format("expected host:port, got '{}'", text));
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535 || port_text.empty()) {
    throw std::invalid_argument(fmt::format("bad port in '{}'", text));
  }
  return from(host, static_cast<std::uint16_t>(port));
}

std::uint16_t SocketAddress::port() const noexcept {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

std::string SocketAddress::host() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof buf);
  } else if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string SocketAddress::to_string() const {
  if (family() == AF_INET6) return fmt::format("[{}]:{}", host(), port());
  if (family() == AF_INET) return fmt::format("{}:{}", host(), port());
  return "(none)";
}

}  // namespace weft
