#include "weft/core/io_driver.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft {

BasicDriver::BasicDriver(bool batch_scheduling)
    : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), batch_scheduling_(batch_scheduling) {
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

void BasicDriver::attach(EventLoop& /*loop*/) {
  if (!batch_scheduling_ || ::sched_getscheduler(0) != SCHED_OTHER) return;
  sched_param param{};
  if (::sched_setscheduler(0, SCHED_BATCH, &param) != 0) {
    log(LogLevel::debug, "executor thread stays SCHED_OTHER: sched_setscheduler: {}", std::strerror(errno));
  }
}

IoDriverFactory& basic_driver_factory() {
  static BasicDriverFactory factory;
  return factory;
}

IoDriverFactory& executor_driver_factory() {
  static BasicDriverFactory factory(true);
  return factory;
}

}  // namespace weft
