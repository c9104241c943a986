#pragma once
/// @file
/// An IPv4 or IPv6 socket address (value type).

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

/// An IPv4 or IPv6 socket address (value type); default-constructed, it is invalid (is_valid()).
class SocketAddress {
 public:
  SocketAddress() noexcept;
  /// From a raw address as accept()/getsockname() fill it.
  SocketAddress(const sockaddr* addr, socklen_t len) noexcept;

  /// "127.0.0.1:8080", "[::1]:8080", "localhost:8080" (localhost only; no DNS), "unix:/path/to/socket",
  /// "unix-abstract:name". Throws std::invalid_argument.
  static SocketAddress parse(std::string_view host_and_port);
  /// A Unix domain socket at `path` in the file system (AF_UNIX). A server's bind() creates the
  /// file, fails when it exists (IoError, address in use) and does not remove it when it closes.
  /// Throws std::invalid_argument for an empty path or one longer than 107 bytes.
  static SocketAddress unix_socket(std::string_view path);
  /// A Unix domain socket in Linux's abstract namespace (no file; gone with its last socket).
  /// Throws std::invalid_argument for an empty name or one longer than 107 bytes.
  static SocketAddress unix_abstract(std::string_view name);
  /// Numeric host ("127.0.0.1", "::1", "0.0.0.0") and port. Throws std::invalid_argument.
  static SocketAddress from(std::string_view host, std::uint16_t port);
  /// 127.0.0.1:`port`.
  static SocketAddress loopback(std::uint16_t port) { return from("127.0.0.1", port); }
  /// 0.0.0.0:`port` (every IPv4 interface).
  static SocketAddress any(std::uint16_t port) { return from("0.0.0.0", port); }

  /// The address as bind()/connect() take it, with length().
  const sockaddr* raw() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  /// The size of raw(); 0 for an invalid address.
  socklen_t length() const noexcept { return length_; }
  /// AF_INET, AF_INET6 or AF_UNIX (AF_UNSPEC when invalid).
  int family() const noexcept { return storage_.ss_family; }
  /// Whether it is a Unix domain socket's (AF_UNIX).
  bool is_unix() const noexcept { return family() == AF_UNIX; }
  /// Whether the address holds one.
  bool is_valid() const noexcept { return length_ != 0; }
  /// The port (host byte order); 0 for an invalid or a Unix domain address.
  std::uint16_t port() const noexcept;
  /// The numeric host ("127.0.0.1", "::1"); a Unix domain socket's path ("@name" when abstract);
  /// empty for an invalid address (or an unnamed Unix domain socket's, as a client's).
  std::string host() const;
  /// "host:port", IPv6 in brackets; "unix:PATH" or "unix-abstract:NAME".
  std::string to_string() const;

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

}  // namespace weft
