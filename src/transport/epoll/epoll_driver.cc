#include "epoll_driver.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/log.h"
#include "weft/core/stall_watch.h"

namespace weft {

EpollDriver::EpollDriver() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)), event_fd_(-1) {
  if (epoll_fd_ < 0) throw IoError(errno, "epoll_create1");
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) {
    int e = errno;
    ::close(epoll_fd_);
    throw IoError(e, "eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // null marks the wake-up descriptor
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev) != 0) {
    int e = errno;
    ::close(event_fd_);
    ::close(epoll_fd_);
    throw IoError(e, "epoll_ctl(eventfd)");
  }
}

EpollDriver::~EpollDriver() {
  ::close(event_fd_);
  ::close(epoll_fd_);
}

EpollDriver& EpollDriver::of(EventLoop& loop) {
  auto* driver = dynamic_cast<EpollDriver*>(&loop.driver());
  if (driver == nullptr) {
    throw Error(fmt::format("an epoll channel cannot run on loop '{}': its group was not made by weft::epoll()",
                            loop.name()));
  }
  return *driver;
}

namespace {

// With hundreds of connections, the one an event names is out of cache: its first touch (the
// handler's vtable, then the channel's and pipeline's hot fields) costs a miss each, measured as a
// third of the event loop's own time. Fetching the next handle's lines while this one is served
// hides that latency. The hot state of a socket channel (the channel, its pipeline and the first
// contexts) is in the first 768 bytes of the object.
inline void prefetch_handle(const void* handle) noexcept {
  if (handle == nullptr) return;
  constexpr int kLines = 12;
  // Integer arithmetic: the lines lie past the EpollHandle subobject the pointer names.
  const auto address = reinterpret_cast<std::uintptr_t>(handle);
  for (int line = 0; line < kLines; ++line) __builtin_prefetch(reinterpret_cast<const void*>(address + line * 64));
}

}  // namespace

void EpollDriver::poll(Duration timeout) {
  int ms = -1;
  if (timeout.count() >= 0) {
    // Round up: waking before a timer's deadline would only poll again.
    ms = static_cast<int>(std::min<std::int64_t>((timeout.count() + 999'999) / 1'000'000, 1 << 30));
  }
  int n = ::epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), ms);
  if (n < 0) {
    if (errno != EINTR) log(LogLevel::error, "epoll_wait failed: errno {}", errno);
    return;
  }
  detail::note_io_ready();
  for (int i = 0; i < n; ++i) {
    if (i + 1 < n) prefetch_handle(events_[i + 1].data.ptr);
    auto* handle = static_cast<EpollHandle*>(events_[i].data.ptr);
    if (handle == nullptr) {
      std::uint64_t value;
      [[maybe_unused]] auto r = ::read(event_fd_, &value, sizeof value);
      continue;
    }
    handle->on_epoll_events(events_[i].events);
  }
}

void EpollDriver::wakeup() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(event_fd_, &one, sizeof one);
}

void EpollDriver::add(int fd, std::uint32_t events, EpollHandle* handle) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handle;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) throw IoError(errno, "epoll_ctl(ADD)");
}

void EpollDriver::modify(int fd, std::uint32_t events, EpollHandle* handle) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handle;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) throw IoError(errno, "epoll_ctl(MOD)");
}

void EpollDriver::remove(int fd) noexcept { ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

}  // namespace weft
