#pragma once
// Opening a TCP connection to a URL's host and port: the one place that turns a host into
// addresses. A numeric host (IPv4, bracketed IPv6 in the URL) is connected to without a lookup; a
// name is resolved by a weft::Resolver (ClientOptions::resolver: hosts file, cache, DNS), then its
// addresses are connected to with Happy Eyeballs (RFC 8305). A DnsError becomes HostResolutionError.
//
// Where it runs: on epoll and io_uring, each loop of the client has its own resolver (made when the
// loop first connects to a name, destroyed by close() on that loop) and its connections run on
// that loop. On the blocking transport a connect blocks its loop's thread, and Happy Eyeballs' delay
// timers must run on a loop that makes no attempt: the resolver (one per client) and the timers run
// on a BasicDriver loop kept for the process (blocking_resolution_loop()), the connections on the
// group's free loops.

#include <memory>
#include <mutex>

#include "weft/channel/bootstrap.h"
#include "weft/client/client_options.h"
#include "weft/client/url.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"
#include "weft/dns/resolver.h"

namespace weft::client::detail {

// The blocking transport's resolver of one client, on blocking_resolution_loop(). Thread-safe.
class SharedResolver {
 public:
  explicit SharedResolver(const ClientOptions& options) noexcept : options_(options) {}
  // The resolver must be gone already (close()), or its loop's thread is this one.
  ~SharedResolver();
  SharedResolver(const SharedResolver&) = delete;
  SharedResolver& operator=(const SharedResolver&) = delete;

  // Thread-safe. Resolves `origin`'s host (the resolver is made on first use) and connects to it
  // with `bootstrap` and Happy Eyeballs. Fails with ClientClosedError once closed.
  Future<ChannelPtr> connect(const Bootstrap& bootstrap, const Url& origin, ChannelInitializer init);
  // Thread-safe. Destroys the resolver on its loop (resolutions in flight fail: DnsError
  // cancelled); the future completes then.
  Future<void> close();

 private:
  const ClientOptions& options_;
  std::mutex mutex_;  // once per connection opened on the blocking transport; not on a request's path
  std::unique_ptr<Resolver> resolver_;
  bool closed_ = false;
};

// One loop's way to its origins (a LoopClient's). Loop thread only, except where said.
class OriginConnector {
 public:
  // `loop`: the pools' loop; `group`: the client's; `shared`: the client's SharedResolver (used on
  // the blocking transport only). All outlive this.
  OriginConnector(EventLoop& loop, EventLoopGroup& group, const ClientOptions& options, SharedResolver& shared);
  // Loop thread, or once the loop has terminated (then the resolver must be gone: close()).
  ~OriginConnector();
  OriginConnector(const OriginConnector&) = delete;
  OriginConnector& operator=(const OriginConnector&) = delete;

  // Connects to `origin`'s host and port, `init` setting up the channel's pipeline; the future's
  // listeners may run on another loop (see the file's description). Fails with
  // HostResolutionError for a name that does not resolve, ClientClosedError once closed, else as
  // Bootstrap::connect does (IoError, ConnectTimeoutError after ClientOptions::connect_timeout).
  Future<ChannelPtr> connect(const Url& origin, ChannelInitializer init);
  // Destroys the resolver: resolutions in flight fail (DnsError cancelled, which the caller has
  // stopped waiting for); later connects fail with ClientClosedError. Loop thread, or once the loop
  // has terminated.
  void close();

 private:
  EventLoop& loop_;
  EventLoopGroup& group_;
  const ClientOptions& options_;
  SharedResolver& shared_;
  const bool blocking_;                 // the group's transport blocks its loop's thread in connect()
  Bootstrap bootstrap_;                 // the options every connection gets; bound to `loop_` unless blocking_
  std::unique_ptr<Resolver> resolver_;  // made on the first name
  bool closed_ = false;
};

// Whether `host` (as Url::host() gives it: IPv6 without brackets) is an IPv4 or IPv6 address.
// Thread-safe.
bool is_ip_literal(const std::string& host);

}  // namespace weft::client::detail
