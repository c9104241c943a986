#include "weft/channel/bootstrap.h"

#include <stdexcept>

#include "weft/core/log.h"

namespace weft {
namespace {

// What every accepted connection of one server is set up with; shared by the acceptor's tasks.
struct ChildSetup {
  Transport& transport;
  EventLoopGroup& group;
  ChannelConfig config;
  ChannelInitializer init;
};

// The server channel's handler: turns accepted sockets into registered channels on the child loops.
class Acceptor final : public InboundHandler<AcceptedSocket> {
 public:
  explicit Acceptor(std::shared_ptr<const ChildSetup> setup) : setup_(std::move(setup)) {}

  void channel_read(Context&, AcceptedSocket&& socket) override {
    EventLoop& loop = setup_->group.next();
    ChannelPtr child;
    try {
      child = setup_->transport.new_accepted_channel(loop, setup_->config, std::move(socket));
    } catch (const std::exception& e) {
      log(LogLevel::warn, "could not create a channel for an accepted connection: {}", e.what());
      return;
    }
    loop.try_execute([setup = setup_, child] {
      try {
        if (setup->init) setup->init(*child);
        child->register_channel();
      } catch (const std::exception& e) {
        log(LogLevel::warn, "setting up accepted channel {} failed: {}", child->id(), e.what());
        child->close();
      }
    });
  }

  void exception_caught(Context& ctx, std::exception_ptr error) override {
    // accept() failures are reported and the server keeps running.
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "server {}: {}", ctx.channel().local_address().to_string(), e.what());
    } catch (...) {
    }
  }

 private:
  std::shared_ptr<const ChildSetup> setup_;
};

}  // namespace

ServerBootstrap& ServerBootstrap::group(EventLoopGroup& parent, EventLoopGroup& child) {
  parent_ = &parent;
  child_ = &child;
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
  EventLoop& loop = parent_->next();
  ChannelPtr server = transport.new_server_channel(loop, server_config_);
  auto setup = std::make_shared<const ChildSetup>(ChildSetup{transport, *child_, child_config_, child_init_});
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
  return *this;
}

Bootstrap& Bootstrap::handler(ChannelInitializer init) {
  init_ = std::move(init);
  return *this;
}

Future<ChannelPtr> Bootstrap::connect(const SocketAddress& remote) const {
  if (group_ == nullptr) throw std::invalid_argument("Bootstrap: call group() before connect()");
  config_.validate();
  Transport& transport = transport_of(*group_);
  EventLoop& loop = group_->next();
  ChannelPtr channel = transport.new_socket_channel(loop, config_);
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
