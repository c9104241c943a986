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
  /// Sets up the listening channel's own pipeline (optional).
  ServerBootstrap& handler(ChannelInitializer init);
  /// Sets up each accepted channel's pipeline.
  ServerBootstrap& child_handler(ChannelInitializer init);

  /// Thread-safe (not from a loop of the group: use the future's listeners there). Binds and
  /// listens; the future holds the server channel. Fails with IoError (e.g. address in use),
  /// ChannelLimitError (a blocking group with no free loop) or std::invalid_argument (bad options, no group).
  Future<ChannelPtr> bind(const SocketAddress& local) const;
  /// As bind(const SocketAddress&), on 0.0.0.0:`port`.
  Future<ChannelPtr> bind(std::uint16_t port) const { return bind(SocketAddress::any(port)); }

 private:
  EventLoopGroup* parent_ = nullptr;
  EventLoopGroup* child_ = nullptr;
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
