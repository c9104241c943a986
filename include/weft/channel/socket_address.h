#pragma once
// An IPv4 or IPv6 socket address (value type).

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

class SocketAddress {
 public:
  SocketAddress() noexcept;
  // From a raw address as accept()/getsockname() fill it.
  SocketAddress(const sockaddr* addr, socklen_t len) noexcept;

  // "127.0.0.1:8080", "[::1]:8080", "localhost:8080" (localhost only; no DNS). Throws std::invalid_argument.
  static SocketAddress parse(std::string_view host_and_port);
  // Numeric host ("127.0.0.1", "::1", "0.0.0.0") and port. Throws std::invalid_argument.
  static SocketAddress from(std::string_view host, std::uint16_t port);
  static SocketAddress loopback(std::uint16_t port) { return from("127.0.0.1", port); }
  static SocketAddress any(std::uint16_t port) { return from("0.0.0.0", port); }

  const sockaddr* raw() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const noexcept { return length_; }
  int family() const noexcept { return storage_.ss_family; }
  bool is_valid() const noexcept { return length_ != 0; }
  std::uint16_t port() const noexcept;
  std::string host() const;
  std::string to_string() const;  // "host:port", IPv6 in brackets

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

}  // namespace weft
