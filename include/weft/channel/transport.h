#pragma once
/// @file
/// Transport: an I/O engine (epoll, io_uring, blocking) as seen by the channel layer. It makes the
/// drivers of an EventLoopGroup's loops and the channels that run on them; a group and its channels
/// always come from the same transport.

#include <memory>

#include "weft/channel/channel.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/io_driver.h"

namespace weft {

/// A connection accepted by a server channel, not yet a channel: the server pipeline's message
/// type. Owns the descriptor (closes it unless handed on).
class AcceptedSocket {
 public:
  AcceptedSocket() noexcept = default;
  /// Takes ownership of the accepted descriptor `fd`, connected to `remote`.
  AcceptedSocket(int fd, SocketAddress remote) noexcept : fd_(fd), remote_(remote) {}
  /// Takes `o`'s descriptor; `o` no longer owns one.
  AcceptedSocket(AcceptedSocket&& o) noexcept : fd_(std::exchange(o.fd_, -1)), remote_(o.remote_) {}
  /// Closes the descriptor held, then takes `o`'s.
  AcceptedSocket& operator=(AcceptedSocket&& o) noexcept;
  AcceptedSocket(const AcceptedSocket&) = delete;
  AcceptedSocket& operator=(const AcceptedSocket&) = delete;
  ~AcceptedSocket();

  /// The descriptor; -1 when none is held.
  int fd() const noexcept { return fd_; }
  /// The peer's address.
  const SocketAddress& remote_address() const noexcept { return remote_; }
  /// Hands the descriptor over; this object no longer closes it.
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
  SocketAddress remote_;
};

/// An I/O engine as the channel layer sees it: it makes the drivers of a group's loops and the
/// channels that run on them (see the file's description).
class Transport : public IoDriverFactory {
 public:
  /// Thread-safe. An unconnected client socket channel on `loop` (for Bootstrap::connect).
  virtual ChannelPtr new_socket_channel(EventLoop& loop, const ChannelConfig& config) = 0;
  /// Thread-safe. A channel for an accepted connection, to be registered on `loop`.
  virtual ChannelPtr new_accepted_channel(EventLoop& loop, const ChannelConfig& config, AcceptedSocket socket) = 0;
  /// Thread-safe. A listening channel on `loop` (for ServerBootstrap::bind).
  virtual ChannelPtr new_server_channel(EventLoop& loop, const ChannelConfig& config) = 0;
  /// Thread-safe. The loop of `group` for the next new channel (the bootstraps ask). Default:
  /// round-robin. A transport that bounds its channels reserves a free loop or throws ChannelLimitError.
  virtual EventLoop& choose_loop(EventLoopGroup& group) { return group.next(); }
  /// Thread-safe. Whether one loop serves many channels at once (false on the blocking transport,
  /// whose loop serves one): AcceptMode::reuseport needs it.
  virtual bool loops_serve_many_channels() const noexcept { return true; }
};

/// The transport that made `group`'s loops. Throws std::invalid_argument when the group was not made
/// by a Transport (e.g. BasicDriver loops, which have no I/O).
Transport& transport_of(const EventLoopGroup& group);
/// The transport that made `loop`'s driver (a loop of a transport's EventLoopGroup). Throws
/// std::invalid_argument otherwise.
Transport& transport_of(const EventLoop& loop);

}  // namespace weft
