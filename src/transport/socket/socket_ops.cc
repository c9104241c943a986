#include "socket_ops.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "weft/core/error.h"

namespace weft::socket_ops {
namespace {

void set_int(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) throw IoError(errno, what);
}

}  // namespace

int open_stream_socket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw IoError(errno, "socket");
  return fd;
}

void set_blocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) throw IoError(errno, "fcntl(O_NONBLOCK)");
}

void apply_connection_options(int fd, const ChannelConfig& config) {
  const int nodelay = config.tcp_nodelay ? 1 : 0;
  // A Unix domain socket has no TCP options (EOPNOTSUPP): tried rather than asked, no syscall more for TCP.
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay) != 0 && errno != EOPNOTSUPP) {
    throw IoError(errno, "setsockopt(TCP_NODELAY)");
  }
  if (config.keep_alive) set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "setsockopt(SO_KEEPALIVE)");
  if (config.send_buffer_size > 0) set_int(fd, SOL_SOCKET, SO_SNDBUF, config.send_buffer_size, "setsockopt(SO_SNDBUF)");
  if (config.receive_buffer_size > 0) {
    set_int(fd, SOL_SOCKET, SO_RCVBUF, config.receive_buffer_size, "setsockopt(SO_RCVBUF)");
  }
}

void apply_server_options(int fd, const ChannelConfig& config) {
  if (config.reuse_address) set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)");
  if (config.reuse_port) set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1, "setsockopt(SO_REUSEPORT)");
  // Inherited by accepted sockets: must be set before listen() to affect the window scale.
  if (config.receive_buffer_size > 0) {
    set_int(fd, SOL_SOCKET, SO_RCVBUF, config.receive_buffer_size, "setsockopt(SO_RCVBUF)");
  }
}

void bind_and_listen(int fd, const SocketAddress& local, const ChannelConfig& config) {
  apply_server_options(fd, config);
  if (::bind(fd, local.raw(), local.length()) != 0) throw IoError(errno, fmt::format("bind {}", local.to_string()));
  if (::listen(fd, config.backlog) != 0) throw IoError(errno, fmt::format("listen on {}", local.to_string()));
}

ConnectTimeoutError connect_timed_out(const SocketAddress& remote, Duration timeout) {
  return ConnectTimeoutError(fmt::format("connect to {} timed out after {} ms", remote.to_string(),
                                         std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
}

SocketAddress local_address(int fd) noexcept {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return SocketAddress(reinterpret_cast<sockaddr*>(&ss), len);
}

SocketAddress peer_address(int fd) noexcept {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return SocketAddress(reinterpret_cast<sockaddr*>(&ss), len);
}

int pending_error(int fd) noexcept {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace weft::socket_ops
