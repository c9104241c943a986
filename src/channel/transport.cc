#include "weft/channel/transport.h"

#include <unistd.h>

#include <stdexcept>

#include <fmt/format.h>

namespace weft {

AcceptedSocket& AcceptedSocket::operator=(AcceptedSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    remote_ = o.remote_;
  }
  return *this;
}

AcceptedSocket::~AcceptedSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Transport& transport_of(const EventLoopGroup& group) {
  auto* transport = dynamic_cast<Transport*>(&group.driver_factory());
  if (transport == nullptr) {
    throw std::invalid_argument(fmt::format("event loop group of driver '{}' has no channel transport; "
                                            "create it with a transport such as weft::epoll()",
                                            group.driver_factory().name()));
  }
  return *transport;
}

Transport& transport_of(const EventLoop& loop) {
  auto* transport = dynamic_cast<Transport*>(loop.driver_factory());
  if (transport == nullptr) {
    throw std::invalid_argument(
        fmt::format("event loop '{}' has no channel transport; use a loop of an "
                    "EventLoopGroup made with a transport such as weft::epoll()",
                    loop.name()));
  }
  return *transport;
}

}  // namespace weft
