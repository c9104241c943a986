#include "blocking_socket_ops.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

#include "weft/core/error.h"

namespace weft::blocking_ops {

int open_blocking_stream_socket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw IoError(errno, "socket");
  return fd;
}

void set_send_timeout(int fd, Duration timeout) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  if (timeout > Duration::zero() && us == 0) us = 1;  // zero would mean no limit
  timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) throw IoError(errno, "setsockopt(SO_SNDTIMEO)");
}

bool readable_now(int fd) noexcept {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace weft::blocking_ops
