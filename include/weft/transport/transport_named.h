#pragma once
// Selecting a transport by name, for programs that take it as a flag (--transport epoll|blocking).

#include <string_view>

#include "weft/channel/transport.h"

namespace weft {

// Thread-safe. The transport called `name` ("epoll", "blocking"). Throws std::invalid_argument
// naming the available transports for any other name.
Transport& transport_named(std::string_view name);

}  // namespace weft
