#pragma once
/// @file
/// Resolver: asynchronous host-name resolution on an event loop (c-ares), with the hosts file first,
/// numeric hosts without any lookup, and a TTL-bounded cache.
///
///   weft::Resolver resolver(loop);                   // on `loop`'s thread
///   auto addresses = co_await resolver.resolve("example.com", 443);
///
/// A resolve() answers, in this order: a numeric host ("192.0.2.1", "::1", "[::1]") as it is; the
/// hosts file's addresses for the name ("localhost" and "*.localhost" are loopback even when the
/// file lacks them, RFC 6761); the cache; else one DNS query per name and family (callers
/// asking for a name already in flight share its query). A and AAAA are asked at once (or one of
/// them, ResolverOptions::family); the answer lists the preferred family first. Failures are
/// DnsError, naming the host, with a code (NXDOMAIN, timeout, server failure...).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft {

/// Which address family a resolver asks for, or puts first.
enum class AddressFamily {
  any,   ///< both (as `family`); no preference (as `preferred`: the server's order)
  ipv4,  ///< A records
  ipv6,  ///< AAAA records
};

/// A resolver's settings.
struct ResolverOptions {
  /// The DNS servers, tried in order; empty: those of /etc/resolv.conf.
  std::vector<SocketAddress> servers;
  /// The hosts(5) file consulted before DNS; empty: none. Re-read when it changes (checked at most
  /// every `hosts_file_check_interval`).
  std::string hosts_file = "/etc/hosts";
  /// How often, at most, the hosts file's modification time is checked.
  Duration hosts_file_check_interval = std::chrono::seconds(5);
  /// Whether the search domains of /etc/resolv.conf apply to names with few dots.
  bool search_domains = true;
  /// The records asked for.
  AddressFamily family = AddressFamily::any;
  /// The family listed first in an answer (RFC 8305 prefers IPv6).
  AddressFamily preferred = AddressFamily::ipv6;
  /// A resolution that has no answer after this fails with DnsErrorCode::timeout.
  Duration timeout = std::chrono::seconds(5);
  /// An answer is cached for its records' smallest TTL, at most this long (zero: no caching).
  Duration max_ttl = std::chrono::minutes(5);
  /// NXDOMAIN and no-address answers are cached this long (zero: not at all).
  Duration negative_ttl = std::chrono::seconds(5);
  /// Names kept in the cache at most; past it, expired entries and then the oldest go.
  std::size_t max_cache_entries = 4096;
  /// How often the loop checks the resolver's sockets while a query is in flight (see resolver.cc:
  /// the loops of every transport have timers, not all of them can watch a descriptor).
  Duration poll_interval = std::chrono::milliseconds(1);
};

/// What a resolver has done, for tests and metrics.
struct ResolverStats {
  std::uint64_t queries = 0;     ///< DNS lookups started (one per name and family, shared by waiters)
  std::uint64_t cache_hits = 0;  ///< answers (positive or negative) from the cache
  std::uint64_t hosts_hits = 0;  ///< answers from the hosts file
  std::uint64_t numeric = 0;     ///< numeric hosts answered without lookup
};

/// Resolves host names on one event loop (see the file's description). One per loop: it is
/// confined to its loop's thread, except resolve(), which may be called from any thread.
class Resolver {
 public:
  /// Thread-safe (makes nothing on the loop yet). Throws DnsError (code failure) when c-ares cannot
  /// be set up, std::invalid_argument for bad options.
  explicit Resolver(EventLoop& loop, ResolverOptions options = {});
  /// Loop thread only, or once the loop has terminated. Pending resolutions fail with DnsError
  /// (code cancelled).
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  /// Thread-safe. The addresses of `host` with `port`, preferred family first; never empty. Fails
  /// with DnsError naming the host. The future belongs to the resolver's loop (its listeners run
  /// there); co_await it from a coroutine on any loop. Off the loop thread the work is posted; a
  /// terminated loop fails it with EventLoopTerminatedError.
  Future<std::vector<SocketAddress>> resolve(std::string_view host, std::uint16_t port);

  /// Loop thread only. Forgets every cached answer.
  void clear_cache();
  /// Loop thread only.
  ResolverStats stats() const noexcept;
  /// Thread-safe.
  EventLoop& loop() const noexcept { return loop_; }

  class Impl;

 private:
  EventLoop& loop_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft
