#pragma once
// Out of file descriptors, a connection waiting in a listening socket's queue cannot be accepted, and on
// a readiness transport it keeps the socket readable forever. A DescriptorReserve holds one spare
// descriptor to give up for a moment: accept the waiting connection, close it, take the spare back.
// Loop thread only.

#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"

namespace weft {

class DescriptorReserve {
 public:
  enum class Shed { one, queue_empty, no_reserve };

  DescriptorReserve() noexcept;
  ~DescriptorReserve();
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;

  // Accepts one waiting connection from the non-blocking `listen_fd` with the spare descriptor and
  // closes it. Logs (at most once a second) that `local` refuses connections. `no_reserve`: the spare
  // could not be taken back (the caller should pause accepting and refill() later).
  Shed shed_one(int listen_fd, const SocketAddress& local, TimePoint now) noexcept;
  // Takes a spare descriptor again if it has none.
  void refill() noexcept;
  // Closes the spare (when the listening channel closes).
  void release() noexcept;

 private:
  int fd_ = -1;
  TimePoint last_log_{};
};

}  // namespace weft
