#include "blocking_driver.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/log.h"
#include "weft/core/stall_watch.h"

namespace weft {

BlockingDriver::BlockingDriver() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (event_fd_ < 0) throw IoError(errno, "eventfd");
}

BlockingDriver::~BlockingDriver() { ::close(event_fd_); }

void BlockingDriver::poll(Duration timeout) {
  int ms = -1;
  if (timeout.count() >= 0) {
    ms = static_cast<int>(std::min<std::int64_t>((timeout.count() + 999'999) / 1'000'000, 1 << 30));
  }
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {watched_fd_, watched_events_, 0}};
  // Also with no events: poll() still reports POLLERR and POLLHUP (a peer that reset).
  const nfds_t count = (handle_ != nullptr && watched_fd_ >= 0) ? 2 : 1;
  int n = ::poll(fds, count, ms);
  if (n < 0) {
    if (errno != EINTR) log(LogLevel::error, "poll failed: errno {}", errno);
    return;
  }
  detail::note_io_ready();
  if (fds[0].revents != 0) {
    std::uint64_t value;
    [[maybe_unused]] auto r = ::read(event_fd_, &value, sizeof value);
  }
  if (count == 2 && fds[1].revents != 0) handle_->on_ready(fds[1].revents);
}

void BlockingDriver::wakeup() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(event_fd_, &one, sizeof one);
}

void BlockingDriver::interrupt_blocking_call(const void* owner) noexcept {
  std::lock_guard lock(call_mutex_);
  if (owner != nullptr) closing_owner_ = owner;  // a send it starts later fails at once
  if (call_fd_ < 0 || (owner != nullptr && owner != call_owner_)) return;
  ::shutdown(call_fd_, SHUT_RDWR);
  interrupted_ = true;
}

bool BlockingDriver::try_reserve() noexcept {
  int expected = kFree;
  return state_.compare_exchange_strong(expected, kReserved, std::memory_order_acq_rel);
}

bool BlockingDriver::try_own() noexcept {
  int expected = kReserved;
  if (!state_.compare_exchange_strong(expected, kOwned, std::memory_order_acq_rel)) {
    expected = kFree;
    if (!state_.compare_exchange_strong(expected, kOwned, std::memory_order_acq_rel)) return false;
  }
  std::lock_guard lock(call_mutex_);
  interrupted_ = false;
  closing_owner_ = nullptr;
  return true;
}

void BlockingDriver::release() noexcept { state_.store(kFree, std::memory_order_release); }

void BlockingDriver::watch(int fd, short events, BlockingHandle* handle) noexcept {
  watched_fd_ = fd;
  watched_events_ = events;
  handle_ = handle;
}

void BlockingDriver::unwatch() noexcept { watch(-1, 0, nullptr); }

void BlockingDriver::begin_blocking_call(int fd, const void* owner, bool send) noexcept {
  std::lock_guard lock(call_mutex_);
  call_fd_ = fd;
  call_owner_ = owner;
  call_is_send_ = send;
  // Asked before this call began (the loop's shutdown sets its state before it interrupts): fail at once.
  if (interrupted_ || owner == closing_owner_) {
    ::shutdown(fd, SHUT_RDWR);
    interrupted_ = true;
    return;
  }
  // A shutdown under way: sends go on (each returns within a slice, and the channel gives up at the
  // shutdown's deadline); any other call fails at once.
  if (!send && loop_ != nullptr && loop_->is_shutting_down()) {
    ::shutdown(fd, SHUT_RDWR);
    interrupted_ = true;
  }
}

void BlockingDriver::interrupt_for_shutdown(Duration) noexcept {
  std::lock_guard lock(call_mutex_);
  if (call_fd_ < 0 || call_is_send_) return;  // a send returns within its slice by itself
  ::shutdown(call_fd_, SHUT_RDWR);
  interrupted_ = true;
}

bool BlockingDriver::end_blocking_call() noexcept {
  std::lock_guard lock(call_mutex_);
  call_fd_ = -1;
  call_owner_ = nullptr;
  return interrupted_;
}

}  // namespace weft
