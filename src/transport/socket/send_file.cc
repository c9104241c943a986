// socket_ops::send_file: sendfile(2) without SIGPIPE.

#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>

#include <cerrno>

#include "socket_ops.h"

namespace weft::socket_ops {

ssize_t send_file(int socket, int file, std::uint64_t offset, std::size_t count) noexcept {
  static thread_local bool sigpipe_blocked = false;
  sigset_t sigpipe;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  if (!sigpipe_blocked) [[unlikely]] {
    pthread_sigmask(SIG_BLOCK, &sigpipe, nullptr);
    sigpipe_blocked = true;
  }
  off_t at = static_cast<off_t>(offset);
  const ssize_t n = ::sendfile(socket, file, &at, count);
  if (n < 0 && errno == EPIPE) [[unlikely]] {
    const timespec now{0, 0};
    while (::sigtimedwait(&sigpipe, nullptr, &now) == SIGPIPE) {
    }
    errno = EPIPE;
  }
  return n;
}

}  // namespace weft::socket_ops
