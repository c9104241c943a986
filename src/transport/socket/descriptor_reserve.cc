#include "descriptor_reserve.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "weft/core/log.h"

namespace weft {
namespace {

int open_spare() noexcept { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

DescriptorReserve::DescriptorReserve() noexcept : fd_(open_spare()) {}

DescriptorReserve::~DescriptorReserve() { release(); }

DescriptorReserve::Shed DescriptorReserve::shed_one(int listen_fd, const SocketAddress& local, TimePoint now) noexcept {
  if (now - last_log_ >= std::chrono::seconds(1)) {
    last_log_ = now;
    log(LogLevel::warn, "server {}: out of file descriptors; refusing new connections", local.to_string());
  }
  if (fd_ < 0) return Shed::no_reserve;
  ::close(fd_);
  fd_ = -1;
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) ::close(fd);
  fd_ = open_spare();
  if (fd_ < 0) return Shed::no_reserve;
  return fd >= 0 ? Shed::one : Shed::queue_empty;
}

void DescriptorReserve::refill() noexcept {
  if (fd_ < 0) fd_ = open_spare();
}

void DescriptorReserve::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace weft
