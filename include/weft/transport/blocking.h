#pragma once
/// @file
/// The blocking transport (the model Java calls OIO): thread-per-connection, blocking sockets, the
/// same channels, pipelines and handlers as epoll.
///
///   weft::EventLoopGroup loops(weft::blocking(), 256);  // at most 256 channels at once
///
/// Each channel owns one loop of its group, whose thread runs its handlers; reads and accepts wait in
/// the kernel and sends block until the kernel took every byte, so a slow peer stalls only its own
/// thread. A loop thread waits in poll(2) on its socket and an eventfd rather than in recv(), so that
/// writes, closes and tasks posted from other threads wake it (see src/transport/blocking/
/// blocking_driver.h). A close or a group shutdown from another thread shuts down the socket of a
/// thread blocked in send(): queued writes are dropped, as close() says.
///
/// The bound: a group of N loops serves at most N channels (a server's listening channel takes one
/// too: give a server its own group of one). The group starts its N threads up front, as every group
/// does; an idle one sleeps in poll() and costs only its stack. A loop is reused once its channel has
/// closed. When every loop is busy, a server closes the accepted connection at once, logs (at most
/// once a second) and fires ChannelLimitError, naming the bound, on the server channel's pipeline; a
/// Bootstrap::connect fails its future with ChannelLimitError.
///
/// Use it to compare with epoll, for a few long connections whose handlers block (a database driver,
/// a file), or where one thread per connection is what a measurement favours. Prefer epoll for many
/// connections: every connection costs a thread. The write_spin_count option does not apply.

#include "weft/channel/transport.h"

namespace weft {

/// Thread-safe. The process-wide blocking transport.
Transport& blocking();

}  // namespace weft
