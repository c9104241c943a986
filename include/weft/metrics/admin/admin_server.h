#pragma once
/// @file
/// The admin endpoints an operator's tools call: `/metrics` (a registry's scrape, Prometheus text or
/// OpenMetrics by the request's Accept), `/healthz` (200 while the process serves) and `/readyz`
/// (200 while ready, 503 once not: set it when the server starts draining, so a load balancer stops
/// sending before the listeners close). add_admin_routes() puts them on any router; AdminServer is a
/// listener of its own that serves them (weft-hello's `--admin-port`).

#include <atomic>
#include <memory>
#include <string>

#include "weft/channel/channel.h"
#include "weft/channel/socket_address.h"
#include "weft/codec/http1/router.h"
#include "weft/core/event_loop_group.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// Whether `/readyz` answers ready. Shared by the routes and whoever drains. Thread-safe.
class Readiness {
 public:
  /// Ready (200) or not (503). Thread-safe.
  void set(bool ready) noexcept { ready_.store(ready, std::memory_order_release); }
  /// The current answer. Thread-safe.
  bool get() const noexcept { return ready_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> ready_{true};
};

/// Adds GET `/metrics` (a scrape of `registry`), `/healthz` and `/readyz` (from `readiness`) to
/// `router`. The registry must outlive the router. Not thread-safe (as adding routes is: before serving).
void add_admin_routes(http::Router& router, Registry& registry, std::shared_ptr<const Readiness> readiness);

/// A listener serving the admin routes with HTTP/1.1 on loops of its caller's choosing (best one of
/// their own, so a scrape never waits behind the traffic). Thread-safe.
class AdminServer {
 public:
  /// Binds `address` on `loops` (0 as the port: the kernel chooses) and serves `registry`. Throws
  /// what ServerBootstrap::bind throws when it cannot listen. Thread-safe; not from a loop of `loops`.
  AdminServer(EventLoopGroup& loops, const SocketAddress& address, Registry& registry = Registry::global());
  /// The same on one epoll loop of its own, named `loop_name` (a scrape never waits behind the
  /// traffic), shut down by the destructor. Throws as the constructor above. Thread-safe.
  explicit AdminServer(const SocketAddress& address, Registry& registry = Registry::global(),
                       const std::string& loop_name = "admin");
  /// Closes the listener (connections open end with their loops), then stops the loop of its own if
  /// it has one.
  ~AdminServer();
  /// Not copyable.
  AdminServer(const AdminServer&) = delete;
  /// Not copyable.
  AdminServer& operator=(const AdminServer&) = delete;

  /// `/readyz` answers 503 from now on: call it when draining starts. Thread-safe.
  void set_not_ready() noexcept { readiness_->set(false); }
  /// The readiness `/readyz` reports, to share with other code. Thread-safe.
  Readiness& readiness() noexcept { return *readiness_; }
  /// The address listened on (the kernel's port when 0 was asked). Thread-safe.
  SocketAddress local_address() const { return listener_->local_address(); }

 private:
  void listen(EventLoopGroup& loops, const SocketAddress& address, Registry& registry);

  std::unique_ptr<EventLoopGroup> own_loops_;  // the second constructor's; declared first: closed last
  std::shared_ptr<Readiness> readiness_ = std::make_shared<Readiness>();
  ChannelPtr listener_;
};

}  // namespace weft::metrics
