#pragma once
// epoll-based IoDriver: one epoll set and one eventfd (for wake-ups) per loop.

#include <sys/epoll.h>

#include <array>
#include <cstdint>

#include "weft/core/io_driver.h"

namespace weft {

// Receives the readiness events of one descriptor. Loop thread only.
class EpollHandle {
 public:
  virtual void on_epoll_events(std::uint32_t events) = 0;

 protected:
  ~EpollHandle() = default;
};

class EpollDriver final : public IoDriver {
 public:
  EpollDriver();
  ~EpollDriver() override;
  EpollDriver(const EpollDriver&) = delete;
  EpollDriver& operator=(const EpollDriver&) = delete;

  // The driver of `loop`. Throws weft::Error naming the loop when its group was not made by weft::epoll().
  static EpollDriver& of(EventLoop& loop);

  void poll(Duration timeout) override;
  void wakeup() noexcept override;

  // Loop thread only. Throw IoError.
  void add(int fd, std::uint32_t events, EpollHandle* handle);
  void modify(int fd, std::uint32_t events, EpollHandle* handle);
  // Loop thread only. Never throws (the descriptor may already be gone).
  void remove(int fd) noexcept;

 private:
  int epoll_fd_;
  int event_fd_;
  std::array<epoll_event, 512> events_{};
};

}  // namespace weft
