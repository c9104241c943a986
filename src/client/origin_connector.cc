#include "origin_connector.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdexcept>
#include <utility>

#include "weft/channel/channel_config.h"
#include "weft/client/client_errors.h"
#include "weft/core/io_driver.h"
#include "weft/dns/happy_eyeballs.h"

namespace weft::client::detail {
namespace {

// The loop that runs the blocking transport's resolvers and Happy Eyeballs timers: one BasicDriver
// loop (timers and tasks, no I/O, so it never blocks in a connect), started on first use and kept
// for the process, since Happy Eyeballs' attempts may end after the client that started them.
EventLoop& blocking_resolution_loop() {
  static EventLoopGroup* group = new EventLoopGroup(basic_driver_factory(), 1, "weft-client-dns");
  return group->at(0);
}

HappyEyeballsOptions happy_eyeballs_options(const ClientOptions& options) {
  HappyEyeballsOptions he;
  he.attempt_delay = options.connection_attempt_delay;
  return he;
}

Future<ChannelPtr> closed_future(EventLoop* loop) {
  return make_failed_future<ChannelPtr>(std::make_exception_ptr(ClientClosedError()), loop);
}

}  // namespace

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

SharedResolver::~SharedResolver() {
  // close() destroyed it on its loop; else (a client never closed) do it there now.
  if (resolver_ == nullptr) return;
  EventLoop& loop = blocking_resolution_loop();
  if (loop.in_loop()) {
    resolver_.reset();
    return;
  }
  Promise<void> done;
  if (loop.try_execute([this, done]() mutable {
        resolver_.reset();
        done.set_value();
      })) {
    done.future().wait();
  }
}

Future<ChannelPtr> SharedResolver::connect(const Bootstrap& bootstrap, const Url& origin, ChannelInitializer init) {
  std::lock_guard lock(mutex_);
  if (closed_) return closed_future(nullptr);
  // resolve() posts to the resolver's loop while the lock is held: close()'s destruction, posted
  // after it under the same lock, runs after it there.
  try {
    if (resolver_ == nullptr) resolver_ = std::make_unique<Resolver>(blocking_resolution_loop(), options_.resolver);
  } catch (...) {
    return make_failed_future<ChannelPtr>(std::current_exception());  // bad ResolverOptions, or c-ares failed
  }
  return connect_to_host(*resolver_, bootstrap, origin.host(), origin.port(), std::move(init),
                         happy_eyeballs_options(options_));
}

Future<void> SharedResolver::close() {
  std::unique_ptr<Resolver> resolver;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    resolver = std::move(resolver_);
  }
  if (resolver == nullptr) return make_ready_future();
  EventLoop& loop = blocking_resolution_loop();
  Promise<void> done;
  Future<void> result = done.future();
  auto owned = std::make_shared<std::unique_ptr<Resolver>>(std::move(resolver));
  if (loop.in_loop() || !loop.try_execute([owned, done]() mutable {
        owned->reset();
        done.set_value();
      })) {
    owned->reset();  // on its loop already (or the process is ending and the loop with it)
    done.set_value();
  }
  return result;
}

OriginConnector::OriginConnector(EventLoop& loop, EventLoopGroup& group, const ClientOptions& options,
                                 SharedResolver& shared)
    : loop_(loop),
      group_(group),
      options_(options),
      shared_(shared),
      // A transport that bounds its channels (blocking: a loop per channel) blocks in connect().
      blocking_(group.driver_factory().name() == "blocking") {
  if (blocking_) {
    bootstrap_.group(group_);
  } else {
    bootstrap_.group(loop_);
  }
  bootstrap_.option(option::tcp_nodelay, true);
  if (options_.connect_timeout > Duration::zero()) bootstrap_.option(option::connect_timeout, options_.connect_timeout);
}

OriginConnector::~OriginConnector() = default;

Future<ChannelPtr> OriginConnector::connect(const Url& origin, ChannelInitializer init) {
  if (closed_) return closed_future(&loop_);
  if (is_ip_literal(origin.host())) {
    Bootstrap bootstrap = bootstrap_;
    bootstrap.handler(std::move(init));
    return bootstrap.connect(SocketAddress::from(origin.host(), origin.port()));
  }
  if (blocking_) return shared_.connect(bootstrap_, origin, std::move(init));
  try {
    if (resolver_ == nullptr) resolver_ = std::make_unique<Resolver>(loop_, options_.resolver);
  } catch (...) {
    return make_failed_future<ChannelPtr>(std::current_exception(), &loop_);  // bad ResolverOptions, or c-ares failed
  }
  return connect_to_host(*resolver_, bootstrap_, origin.host(), origin.port(), std::move(init),
                         happy_eyeballs_options(options_));
}

void OriginConnector::close() {
  closed_ = true;
  resolver_.reset();
}

}  // namespace weft::client::detail
