#pragma once
/// @file
/// Selecting a transport by name, for programs that take it as a flag (--transport epoll|io_uring|blocking).

#include <string_view>

#include "weft/channel/transport.h"

namespace weft {

/// Thread-safe. The transport called `name` ("epoll", "io_uring", "blocking"). Throws std::invalid_argument
/// naming the available transports for any other name.
Transport& transport_named(std::string_view name);

}  // namespace weft
