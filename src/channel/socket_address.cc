#include "weft/channel/socket_address.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <sys/un.h>

#include <charconv>
#include <cstddef>
#include <cstring>
#include <stdexcept>

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

namespace {

constexpr std::size_t kMaxUnixPath = sizeof(sockaddr_un::sun_path) - 1;  // and its NUL

}  // namespace

SocketAddress SocketAddress::unix_socket(std::string_view path) {
  if (path.empty() || path.size() > kMaxUnixPath || path.find('\0') != std::string_view::npos) {
    throw std::invalid_argument(fmt::format("not a Unix domain socket path (1 to {} bytes): '{}'", kMaxUnixPath, path));
  }
  SocketAddress out;
  auto* un = reinterpret_cast<sockaddr_un*>(&out.storage_);
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.data(), path.size());
  out.length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return out;
}

SocketAddress SocketAddress::unix_abstract(std::string_view name) {
  if (name.empty() || name.size() > kMaxUnixPath) {
    throw std::invalid_argument(fmt::format("not an abstract socket name (1 to {} bytes): '{}'", kMaxUnixPath, name));
  }
  SocketAddress out;
  auto* un = reinterpret_cast<sockaddr_un*>(&out.storage_);
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: the abstract namespace
  out.length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return out;
}

SocketAddress SocketAddress::parse(std::string_view text) {
  if (text.starts_with("unix:")) return unix_socket(text.substr(5));
  if (text.starts_with("unix-abstract:")) return unix_abstract(text.substr(14));
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
  if (family() == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
    const std::size_t offset = offsetof(sockaddr_un, sun_path);
    if (length_ <= offset) return {};  // unnamed
    std::size_t n = length_ - offset;
    if (un->sun_path[0] == '\0') return "@" + std::string(un->sun_path + 1, n - 1);
    return std::string(un->sun_path, ::strnlen(un->sun_path, n));
  }
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
  if (family() == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
    const bool abstract = length_ > offsetof(sockaddr_un, sun_path) && un->sun_path[0] == '\0';
    // host() writes an abstract name "@name"; a file path may itself begin with '@'.
    return abstract ? "unix-abstract:" + host().substr(1) : "unix:" + host();
  }
  return "(none)";
}

}  // namespace weft
