#pragma once
// Small wrappers over socket system calls shared by the transports' channels.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "weft/channel/channel_config.h"
#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"
#include "weft/core/error.h"

namespace weft::socket_ops {

// How long a listener stops accepting after accept failed for lack of descriptors or memory.
inline constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// At most this many buffers and bytes go to the kernel in one gathering write.
inline constexpr int kMaxIovecs = 256;
inline constexpr std::size_t kMaxBytesPerWrite = std::size_t{4} << 20;

// A non-blocking, close-on-exec TCP socket. Throws IoError.
int open_stream_socket(int family);
// Clears O_NONBLOCK (for transports that wait in the kernel, not in the socket call). Throws IoError.
void set_blocking(int fd);
// Options of a connected socket from `config`. Throws IoError.
void apply_connection_options(int fd, const ChannelConfig& config);
// Options of a listening socket from `config`. Throws IoError.
void apply_server_options(int fd, const ChannelConfig& config);
// Applies `config`'s server options to `fd`, binds it to `local` and listens. Throws IoError naming the
// address.
void bind_and_listen(int fd, const SocketAddress& local, const ChannelConfig& config);
// The error a connect that did not finish within `timeout` fails with, naming the address and the limit.
ConnectTimeoutError connect_timed_out(const SocketAddress& remote, Duration timeout);
SocketAddress local_address(int fd) noexcept;
SocketAddress peer_address(int fd) noexcept;
// The pending error of a socket (SO_ERROR), 0 if none.
int pending_error(int fd) noexcept;
// sendfile(2) of `count` bytes of `file` from `offset` (not advanced) to `socket`, without the
// SIGPIPE a peer that has gone raises (sendfile has no MSG_NOSIGNAL): the calling thread blocks
// SIGPIPE the first time (a loop thread, which only writes with MSG_NOSIGNAL anyway), and an EPIPE
// takes the pending signal back. Returns what sendfile returns; errno as it leaves it.
ssize_t send_file(int socket, int file, std::uint64_t offset, std::size_t count) noexcept;

}  // namespace weft::socket_ops
