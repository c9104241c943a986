#include "weft/channel/bootstrap.h"

#include <fmt/format.h>

#include <stdexcept>

#include "acceptor.h"
#include "listener_per_loop.h"
#include "weft/core/error.h"

namespace weft {

using detail::Acceptor;
using detail::ChildSetup;

ServerBootstrap& ServerBootstrap::group(EventLoopGroup& parent, EventLoopGroup& child) {
  parent_ = &parent;
  child_ = &child;
  return *this;
}

ServerBootstrap& ServerBootstrap::accept_mode(AcceptMode mode) {
  accept_mode_ = mode;
  return *this;
}

ServerBootstrap& ServerBootstrap::handler(ChannelInitializer init) {
  server_init_ = std::move(init);
  return *this;
}

ServerBootstrap& ServerBootstrap::child_handler(ChannelInitializer init) {
  child_init_ = std::move(init);
  return *this;
}

Future<ChannelPtr> ServerBootstrap::bind(const SocketAddress& local) const {
  if (parent_ == nullptr || child_ == nullptr) throw std::invalid_argument("ServerBootstrap: call group() before bind()");
  server_config_.validate();
  child_config_.validate();
  Transport& transport = transport_of(*parent_);
  if (&transport_of(*child_) != &transport) {
    throw std::invalid_argument("ServerBootstrap: parent and child groups use different transports");
  }
  if (accept_mode_ == AcceptMode::reuseport) {
    if (!transport.loops_serve_many_channels()) {
      throw std::invalid_argument(fmt::format(
          "ServerBootstrap: AcceptMode::reuseport needs a loop that serves many channels (epoll, io_uring); on "
          "the {} transport a loop serves one channel, so its listener could not keep what it accepts",
          transport.name()));
    }
    return detail::bind_listener_per_loop(local, server_config_, server_init_,
                                          std::make_shared<const ChildSetup>(ChildSetup{
                                              transport, *child_, child_config_, child_init_, AcceptMode::reuseport,
                                              std::make_shared<detail::ServerConnections>(*child_)}));
  }
  EventLoop* chosen = nullptr;
  try {
    chosen = &transport.choose_loop(*parent_);
  } catch (const ChannelLimitError&) {
    Promise<ChannelPtr> full;
    full.set_error(std::current_exception());
    return full.future();
  }
  EventLoop& loop = *chosen;
  ChannelPtr server = transport.new_server_channel(loop, server_config_);
  auto setup =
      std::make_shared<const ChildSetup>(ChildSetup{transport, *child_, child_config_, child_init_, accept_mode_,
                                                    std::make_shared<detail::ServerConnections>(*child_)});
  Promise<ChannelPtr> result(&loop);
  loop.execute([server, setup, init = server_init_, local, result]() mutable {
    try {
      if (init) init(*server);
      server->pipeline().add_last("acceptor", std::make_shared<Acceptor>(setup));
      server->register_channel();
      Promise<void> bound(&server->loop());
      bound.future().add_listener([server, result](const Future<void>& f) mutable {
        if (auto error = f.error()) {
          server->close();
          result.set_error(error);
        } else {
          result.set_value(server);
        }
      });
      server->pipeline().bind(local, bound);
    } catch (...) {
      server->close();
      result.set_error(std::current_exception());
    }
  });
  return result.future();
}

Bootstrap& Bootstrap::group(EventLoopGroup& group) {
  group_ = &group;
  loop_ = nullptr;
  return *this;
}

Bootstrap& Bootstrap::group(EventLoop& loop) {
  transport_of(loop);  // throws now when the loop has no transport
  loop_ = &loop;
  group_ = nullptr;
  return *this;
}

Bootstrap& Bootstrap::handler(ChannelInitializer init) {
  init_ = std::move(init);
  return *this;
}

Future<ChannelPtr> Bootstrap::connect(const SocketAddress& remote) const {
  if (group_ == nullptr && loop_ == nullptr) throw std::invalid_argument("Bootstrap: call group() before connect()");
  config_.validate();
  Transport& transport = loop_ != nullptr ? transport_of(*loop_) : transport_of(*group_);
  EventLoop* chosen = loop_;
  ChannelPtr channel;
  try {
    if (chosen == nullptr) chosen = &transport.choose_loop(*group_);
    channel = transport.new_socket_channel(*chosen, config_);
  } catch (const ChannelLimitError&) {
    Promise<ChannelPtr> full;
    full.set_error(std::current_exception());
    return full.future();
  }
  EventLoop& loop = *chosen;
  Promise<ChannelPtr> result(&loop);
  loop.execute([channel, init = init_, remote, result]() mutable {
    try {
      if (init) init(*channel);
      channel->register_channel();
      Promise<void> connected(&channel->loop());
      connected.future().add_listener([channel, result](const Future<void>& f) mutable {
        if (auto error = f.error()) {
          channel->close();
          result.set_error(error);
        } else {
          result.set_value(channel);
        }
      });
      channel->pipeline().connect(remote, connected);
    } catch (...) {
      channel->close();
      result.set_error(std::current_exception());
    }
  });
  return result.future();
}

}  // namespace weft
