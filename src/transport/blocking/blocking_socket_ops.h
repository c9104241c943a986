#pragma once
// Socket calls of the blocking transport (the shared ones are in ../socket/socket_ops.h).

#include "weft/core/clock.h"

namespace weft::blocking_ops {

// A blocking, close-on-exec TCP socket. Throws IoError.
int open_blocking_stream_socket(int family);
// SO_SNDTIMEO (zero: no limit), which also bounds a blocking connect(). Throws IoError.
void set_send_timeout(int fd, Duration timeout);
// How long one blocking send may wait for the peer before the loop's thread looks again at the
// channel's send timeout and the loop's shutdown deadline (SO_SNDTIMEO of every connected socket):
// a send to a peer that does not read never holds a graceful shutdown past its deadline.
inline constexpr Duration kSendSlice = std::chrono::milliseconds(250);
// Whether a read (or accept) on `fd` would return at once. Never blocks.
bool readable_now(int fd) noexcept;

}  // namespace weft::blocking_ops
