#include "weft/channel/bootstrap.h"

#include <stdexcept>

#include "weft/core/error.h"
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

  void channel_read(Context& ctx, AcceptedSocket&& socket) override {
    ChannelPtr child;
    EventLoop* loop = nullptr;
    try {
      loop = &setup_->transport.choose_loop(setup_->group);
      child = setup_->transport.new_accepted_channel(*loop, setup_->config, std::move(socket));
    } catch (const ChannelLimitError& e) {
      refuse(ctx, std::move(socket), e);
      return;
    } catch (const std::exception& e) {
      log(LogLevel::warn, "could not create a channel for an accepted connection: {}", e.what());
      return;
    }
    loop->try_execute([setup = setup_, child] {
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
    } catch (const ChannelLimitError&) {
      // logged, rate-limited, by refuse()
    } catch (const std::exception& e) {
      log(LogLevel::warn, "server {}: {}", ctx.channel().local_address().to_string(), e.what());
    } catch (...) {
    }
  }

 private:
  // The transport is full: close the connection at once, log at most once a second, and tell the
  // server pipeline's handlers (from its head, so that handlers before this one see it too).
  void refuse(Context& ctx, AcceptedSocket socket, const ChannelLimitError& error) {
    const SocketAddress remote = socket.remote_address();
    socket = AcceptedSocket();  // closes the descriptor
    ++refused_since_log_;
    const TimePoint now = ctx.channel().loop().now();
    if (now - last_refusal_log_ >= std::chrono::seconds(1)) {
      log(LogLevel::warn, "server {}: refused {} connection(s) (latest from {}): {}",
          ctx.channel().local_address().to_string(), refused_since_log_, remote.to_string(), error.what());
      last_refusal_log_ = now;
      refused_since_log_ = 0;
    }
    ctx.channel().pipeline().fire_exception(std::make_exception_ptr(error));
  }

  std::shared_ptr<const ChildSetup> setup_;
  TimePoint last_refusal_log_{};
  std::uint64_t refused_since_log_ = 0;
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
