#include "weft/core/io_driver.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "weft/core/error.h"

namespace weft {

BasicDriver::BasicDriver() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (event_fd_ < 0) throw IoError(errno, "eventfd");
}

BasicDriver::~BasicDriver() { ::close(event_fd_); }

void BasicDriver::poll(Duration timeout) {
  int ms = -1;
  if (timeout.count() >= 0) {
    // round up so a timer is never polled for early and then busy-waited
    ms = static_cast<int>(std::min<std::int64_t>((timeout.count() + 999'999) / 1'000'000, 1 << 30));
  }
  pollfd pfd{event_fd_, POLLIN, 0};
  int n = ::poll(&pfd, 1, ms);
  if (n > 0) {
    std::uint64_t value;
    [[maybe_unused]] auto r = ::read(event_fd_, &value, sizeof value);
  }
}

void BasicDriver::wakeup() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(event_fd_, &one, sizeof one);
}

IoDriverFactory& basic_driver_factory() {
  static BasicDriverFactory factory;
  return factory;
}

}  // namespace weft
