#pragma once
// AcceptMode::reuseport: one listening channel per loop of the child group, each bound with
// SO_REUSEPORT to the same address, each keeping the connections it accepts on its own loop.

#include <memory>

#include "acceptor.h"

namespace weft::detail {

// Binds one listener per loop of `setup->group`, one after the other (the first to `local`, the
// others to the first's address, so that port 0 gives all of them the kernel's port). The future
// holds the first listener, whose close() closes every listener (its close future completes once
// all are closed). If one fails, the listeners already bound are closed before the future fails.
// Thread-safe, not from a loop of the group.
Future<ChannelPtr> bind_listener_per_loop(const SocketAddress& local, ChannelConfig config, ChannelInitializer init,
                                          std::shared_ptr<const ChildSetup> setup);

}  // namespace weft::detail
