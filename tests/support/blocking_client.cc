#include "support/blocking_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

namespace weft::test {
namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

rlim_t raise_fd_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

std::uint16_t unused_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind to an ephemeral port failed");
  }
  ::close(fd);  // bound but never listening: connects to it are refused
  return ntohs(a.sin_port);
}

const char* to_string(StreamEnd end) noexcept {
  switch (end) {
    case StreamEnd::eof:
      return "eof";
    case StreamEnd::reset:
      return "reset";
    case StreamEnd::timeout:
      return "timeout";
    case StreamEnd::error:
      return "error";
  }
  return "?";
}

BlockingClient::BlockingClient(std::uint16_t port, Options options) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error_ = errno;
    return;
  }
  if (options.receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options.receive_buffer, sizeof(int));
  if (options.send_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &options.send_buffer, sizeof(int));
  int nodelay = options.tcp_nodelay ? 1 : 0;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
  sockaddr_in a = loopback(port);
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    error_ = errno;
    ::close(fd);
    return;
  }
  // Non-blocking from here on: every call below waits with poll() and a deadline.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  fd_ = fd;
}

BlockingClient BlockingClient::adopt(int fd) noexcept {
  BlockingClient c;
  c.fd_ = fd;
  return c;
}

BlockingClient::BlockingClient(BlockingClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), error_(other.error_) {}

BlockingClient& BlockingClient::operator=(BlockingClient&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    error_ = other.error_;
  }
  return *this;
}

BlockingClient::~BlockingClient() { close(); }

bool BlockingClient::wait_for(short events, TestDuration timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pollfd p{fd_, events, 0};
    int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0) {
      error_ = ETIMEDOUT;
      return false;
    }
    if (errno != EINTR) {
      error_ = errno;
      return false;
    }
  }
}

bool BlockingClient::send_all(std::string_view data, TestDuration timeout) {
  if (fd_ < 0) return false;
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = errno;
      return false;
    }
    if (!wait_for(POLLOUT, timeout)) return false;
  }
  return true;
}

std::size_t BlockingClient::send_some(std::string_view data) {
  if (fd_ < 0) return 0;
  for (;;) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) error_ = errno;
    return 0;
  }
}

std::optional<std::string> BlockingClient::recv_exact(std::size_t n, TestDuration timeout) {
  if (fd_ < 0) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out(n, '\0');
  std::size_t have = 0;
  while (have < n) {
    ssize_t r = ::recv(fd_, out.data() + have, n - have, 0);
    if (r > 0) {
      have += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) {
      error_ = 0;
      return std::nullopt;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = errno;
      return std::nullopt;
    }
    if (!wait_for(POLLIN, std::chrono::milliseconds(remaining_ms(deadline)))) return std::nullopt;
  }
  return out;
}

std::string BlockingClient::recv_some(std::size_t max, TestDuration timeout, StreamEnd* end) {
  std::string out;
  if (fd_ < 0) return out;
  if (!wait_for(POLLIN, timeout)) return out;
  out.resize(max);
  for (;;) {
    ssize_t r = ::recv(fd_, out.data(), max, 0);
    if (r > 0) {
      out.resize(static_cast<std::size_t>(r));
      return out;
    }
    out.clear();
    if (r == 0) {
      if (end != nullptr) *end = StreamEnd::eof;
      return out;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = errno;
      if (end != nullptr) *end = errno == ECONNRESET ? StreamEnd::reset : StreamEnd::error;
    }
    return out;
  }
}

StreamEnd BlockingClient::recv_until_end(std::string* data, TestDuration timeout) {
  if (fd_ < 0) return StreamEnd::error;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[16384];
  for (;;) {
    ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r > 0) {
      if (data != nullptr) data->append(buf, static_cast<std::size_t>(r));
      continue;
    }
    if (r == 0) return StreamEnd::eof;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) {
      error_ = errno;
      return StreamEnd::reset;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = errno;
      return StreamEnd::error;
    }
    if (!wait_for(POLLIN, std::chrono::milliseconds(remaining_ms(deadline)))) {
      return error_ == ETIMEDOUT ? StreamEnd::timeout : StreamEnd::error;
    }
  }
}

bool BlockingClient::round_trip(std::string_view message, TestDuration timeout) {
  if (!send_all(message, timeout)) return false;
  auto back = recv_exact(message.size(), timeout);
  return back.has_value() && *back == message;
}

void BlockingClient::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void BlockingClient::reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

void BlockingClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool BlockingClient::recv_until_count(std::string_view marker, std::size_t count, std::string* data,
                                      TestDuration timeout) {
  std::string in;
  std::size_t found = 0;
  std::size_t from = 0;  // where the next occurrence may start
  while (found < count) {
    const std::string more = recv_some(64 * 1024, timeout);
    if (more.empty()) break;
    in += more;
    for (auto at = in.find(marker, from); at != std::string::npos; at = in.find(marker, from)) {
      ++found;
      from = at + marker.size();
    }
  }
  if (data != nullptr) *data += in;
  return found >= count;
}

}  // namespace weft::test
