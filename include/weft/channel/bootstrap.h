#pragma once
/// @file
/// Bootstraps: the fluent way to start servers and clients.
///
///   weft::EventLoopGroup loops(weft::epoll(), 2);
///   auto server = weft::ServerBootstrap()
///       .group(loops)
///       .option(weft::option::backlog, 4096)
///       .child_option(weft::option::tcp_nodelay, true)
///       .child_handler([](weft::Channel& ch) { ch.pipeline().add_last("echo", std::make_shared<Echo>()); })
///       .bind(weft::SocketAddress::loopback(8080))
///       .get();
///
/// Initializers run on the loop of the channel they initialize, possibly on several loops at once:
/// they must be safe to call concurrently (build new handlers; share only thread-safe state).

#include <functional>

#include "weft/channel/channel.h"
#include "weft/channel/channel_config.h"
#include "weft/channel/transport.h"
#include "weft/core/event_loop_group.h"

namespace weft {

/// Sets up a new channel's pipeline; runs on the channel's loop (see the file's description).
using ChannelInitializer = std::function<void(Channel&)>;

/// How a server accepts connections (ServerBootstrap::accept_mode; docs/accept.md compares them).
enum class AcceptMode {
  /// One listening channel, on a loop of the parent group, hands each connection it accepts to a
  /// loop of the child group (round-robin; a free loop on the blocking transport). The default.
  acceptor,
  /// Each loop of the child group owns a listening channel, all bound with SO_REUSEPORT to the same
  /// address; the kernel spreads connections over them by a hash of each connection's addresses, and
  /// a connection stays on the loop of the listener that accepted it (no hand-off between threads).
  /// The parent group is not used. epoll and io_uring only: a loop of the blocking transport serves
  /// one channel, so bind() refuses it with std::invalid_argument.
  reuseport,
  /// One listening channel, as with `acceptor`, hands each connection to the loop of the child group
  /// with the fewest of this server's connections open (handed to it and not yet closed; ties go
  /// round-robin). For long-lived connections (HTTP/2, gRPC), which stay where they land. On the
  /// blocking transport a loop serves one connection, so every free loop has none: it takes a free
  /// loop, as `acceptor` does.
  least_connections,
};

/// Starts a server: a listening channel whose accepted channels get child_handler()'s pipeline.
/// The setters return *this; configure it on one thread, then bind().
class ServerBootstrap {
 public:
  /// The acceptor loops and the loops that run accepted connections (may be the same group).
  ServerBootstrap& group(EventLoopGroup& parent, EventLoopGroup& child);
  /// One group both accepts and runs the accepted connections.
  ServerBootstrap& group(EventLoopGroup& both) { return group(both, both); }
  /// Sets an option (weft::option) of the listening channel.
  template <class T, class V>
  ServerBootstrap& option(const ChannelOption<T>& o, V value) {
    server_config_.*(o.field) = static_cast<T>(value);
    return *this;
  }
  /// Sets an option (weft::option) of each accepted channel.
  template <class T, class V>
  ServerBootstrap& child_option(const ChannelOption<T>& o, V value) {
    child_config_.*(o.field) = static_cast<T>(value);
    return *this;
  }
  /// How connections are accepted (default AcceptMode::acceptor).
  ServerBootstrap& accept_mode(AcceptMode mode);
  /// Sets up the listening channel's own pipeline (optional); with AcceptMode::reuseport, each
  /// listener's, on its loop.
  ServerBootstrap& handler(ChannelInitializer init);
  /// Sets up each accepted channel's pipeline.
  ServerBootstrap& child_handler(ChannelInitializer init);

  /// Thread-safe (not from a loop of the group: use the future's listeners there). Binds and
  /// listens; the future holds the server channel. Fails with IoError (e.g. address in use),
  /// ChannelLimitError (a blocking group with no free loop) or std::invalid_argument (bad options, no group).
  ///
  /// AcceptMode::reuseport binds the listeners one loop after the other, the first to `local` and
  /// the others to the first's address (port 0: all on the port the kernel chose for the first). The
  /// future holds the first listener, and closing it closes them all: its close future completes
  /// once no listener of the server is open. If one fails to bind, those already bound are closed
  /// before the future fails. Throws std::invalid_argument on the blocking transport.
  Future<ChannelPtr> bind(const SocketAddress& local) const;
  /// As bind(const SocketAddress&), on 0.0.0.0:`port`.
  Future<ChannelPtr> bind(std::uint16_t port) const { return bind(SocketAddress::any(port)); }

 private:
  EventLoopGroup* parent_ = nullptr;
  EventLoopGroup* child_ = nullptr;
  AcceptMode accept_mode_ = AcceptMode::acceptor;
  ChannelConfig server_config_;
  ChannelConfig child_config_;
  ChannelInitializer server_init_;
  ChannelInitializer child_init_;
};

/// Starts a client channel: connect() makes one, set up by handler(). The setters return *this;
/// configure it on one thread, then connect().
class Bootstrap {
 public:
  /// The loops the client channels run on (round-robin). Replaces a loop set with group(EventLoop&).
  Bootstrap& group(EventLoopGroup& group);
  /// Every channel connects on `loop`, a loop of a transport's EventLoopGroup (Netty's
  /// `b.group(inbound.eventLoop())`): a proxy's outbound channel then shares its inbound channel's
  /// thread, and the two call each other without posting. Replaces a group set with
  /// group(EventLoopGroup&). On the blocking transport a loop serves one channel: connect() fails
  /// with ChannelLimitError while `loop` serves another.
  Bootstrap& group(EventLoop& loop);
  /// Sets an option (weft::option) of the channels.
  template <class T, class V>
  Bootstrap& option(const ChannelOption<T>& o, V value) {
    config_.*(o.field) = static_cast<T>(value);
    return *this;
  }
  /// Sets up each channel's pipeline.
  Bootstrap& handler(ChannelInitializer init);

  /// Thread-safe. Connects; the future holds the active channel, or fails with IoError
  /// (e.g. connection refused), ConnectTimeoutError or ChannelLimitError (a blocking group is full,
  /// or the blocking loop given to group(EventLoop&) serves another channel).
  Future<ChannelPtr> connect(const SocketAddress& remote) const;

 private:
  EventLoopGroup* group_ = nullptr;
  EventLoop* loop_ = nullptr;
  ChannelConfig config_;
  ChannelInitializer init_;
};

}  // namespace weft
