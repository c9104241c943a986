#include "weft/transport/transport_named.h"

#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/io_uring.h"

namespace weft {

Transport& transport_named(std::string_view name) {
  const std::array<Transport*, 3> available{&epoll(), &io_uring(), &blocking()};
  for (Transport* transport : available) {
    if (transport->name() == name) return *transport;
  }
  throw std::invalid_argument(fmt::format("unknown transport '{}'; available: epoll, io_uring, blocking", name));
}

}  // namespace weft
