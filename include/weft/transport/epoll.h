#pragma once
/// @file
/// The epoll transport: non-blocking sockets, one epoll set per event loop, level-triggered.
///
///   weft::EventLoopGroup loops(weft::epoll(), 4);

#include "weft/channel/transport.h"

namespace weft {

/// Thread-safe. The process-wide epoll transport.
Transport& epoll();

}  // namespace weft
