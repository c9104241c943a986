#pragma once
/// @file
/// grpc::ClientChannel: calls over connections to every address of a target, balanced, as grpc++'s
/// channel: name resolution, pick_first or round_robin, reconnection with gRPC's backoff, calls
/// that wait for a connection, and transparent retries of calls the server never started.
///
///   auto channel = weft::grpc::ClientChannel::create(loop, "dns:///backend.local:50051",
///                                              {.load_balancing = weft::grpc::LoadBalancing::round_robin});
///   // on loop (spawn(loop, ...)): the calls of client.h, the same ClientCall
///   weft::grpc::UnaryResult r = co_await channel->unary("/pkg.Service/Method", std::move(request));
///   weft::grpc::ClientCall call = channel->call("/pkg.Service/Stream");
///
/// Targets (gRPC's naming.md): `dns:///host:port`, `dns:host:port` or plain `host:port` (resolved
/// by weft::Resolver: hosts file, then DNS; port 443 when none), `ipv4:a.b.c.d:port,...` and
/// `ipv6:[::1]:port,...` (the addresses as they are), `unix:path`, `unix:///absolute/path` and
/// `unix-abstract:name` (a Unix domain socket; :authority "localhost").
///
/// Load balancing: `pick_first` connects to the addresses in order and sends every call over the
/// first that answers; `round_robin` keeps a connection to each address and sends each call over
/// the next ready one. A connection that fails to connect is tried again after gRPC's connection
/// backoff (1 s, x1.6, ±20% jitter, at most 120 s; ChannelOptions::backoff); one that closes, or
/// whose server sends GOAWAY, is replaced at once. A dns target is resolved again when a connection
/// fails or closes (at most once per min_re_resolution_interval), and the connections follow the
/// new addresses.
///
/// A call made while no connection is ready waits for one while the channel connects (its writes
/// and reads wait; its deadline runs). Once every address has failed (TRANSIENT_FAILURE) a call
/// fails UNAVAILABLE at once with the last error, unless CallOptions::wait_for_ready, which keeps
/// it waiting until a connection is ready or its deadline passes. At most
/// ChannelOptions::max_pending_calls calls wait; more fail RESOURCE_EXHAUSTED.
///
/// Transparent retries: unary() sends a call again, over the next pick, when its server did not
/// process it (REFUSED_STREAM, or a GOAWAY whose last stream is below it: ClientCall::refused()),
/// at most RetryOptions::max_attempts times and while the retry budget (gRPC's retry throttling:
/// tokens, -1 per failed call, +token_ratio per success, retries only above half) allows. The
/// ClientCall form is not retried (its messages are not kept): refused() tells its caller.
///
/// Threads: the channel and all its connections live on one loop (loop()); create(), close(),
/// state(), ready() and the callback unary() are thread-safe; call(), the coroutine unary() and
/// stats() are loop thread only, as every ClientCall method. The blocking transport serves one
/// connection per loop, so create() refuses its loops (std::invalid_argument): use grpc::Client there.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/core/task.h"
#include "weft/core/unique_function.h"
#include "weft/dns/resolver.h"
#include "weft/grpc/client.h"
#include "weft/grpc/client_reactor.h"

namespace weft::grpc {

/// How a channel spreads calls over the target's addresses.
enum class LoadBalancing {
  pick_first,   ///< the first address that connects carries every call (gRPC's default)
  round_robin,  ///< a connection to each address; calls go to the ready ones in turn
};

/// A channel's state (gRPC's connectivity-semantics-and-api.md).
enum class ConnectivityState { idle, connecting, ready, transient_failure, shutdown };
/// Thread-safe (pure). "IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN".
std::string_view connectivity_state_name(ConnectivityState state) noexcept;

/// A parsed target (parse_target). A value type.
struct ChannelTarget {
  /// The name to resolve (dns targets); empty for address lists.
  std::string host;
  /// The port of a dns target.
  std::uint16_t port = 443;
  /// The addresses of an ipv4: or ipv6: target; empty for dns targets.
  std::vector<SocketAddress> addresses;
  /// What the calls' :authority is unless the options set one: host:port, or the first address.
  std::string authority;
};
/// Thread-safe (pure). Parses `target` (see the file's description). Throws std::invalid_argument
/// naming what is wrong (an empty host, a bad port or address, a socket path too long).
ChannelTarget parse_target(std::string_view target);

/// gRPC's connection backoff (connection-backoff.md). A value type.
struct BackoffOptions {
  Duration initial = std::chrono::seconds(1);  ///< the wait after the first failure
  double multiplier = 1.6;                     ///< each later wait is this much longer
  double jitter = 0.2;                         ///< each wait varies by up to this fraction either way
  Duration max = std::chrono::seconds(120);    ///< no wait is longer
  /// A connection attempt has at least this long (and as long as the current backoff).
  Duration min_connect_timeout = std::chrono::seconds(20);
};

/// Transparent retries of refused calls (the file's description). A value type.
struct RetryOptions {
  std::size_t max_attempts = 5;  ///< attempts of one call, the first included (1: never retry)
  double max_tokens = 10;        ///< the budget's size, and its start
  double token_ratio = 0.1;      ///< what each successful call gives back
};

/// How a channel works. A value type.
struct ChannelOptions {
  /// Each connection's (TLS, HTTP/2 settings, message bounds, compression). When its
  /// http2.settings.authority is empty, the target's authority is used.
  ClientOptions client;
  /// How calls are spread (default pick_first, as gRPC).
  LoadBalancing load_balancing = LoadBalancing::pick_first;
  /// Reconnection after a failed attempt.
  BackoffOptions backoff;
  /// Transparent retries.
  RetryOptions retries;
  /// The resolver of dns targets.
  ResolverOptions resolver;
  /// A dns target is resolved again at most this often.
  Duration min_re_resolution_interval = std::chrono::seconds(30);
  /// Calls that may wait for a connection at once; more fail RESOURCE_EXHAUSTED.
  std::size_t max_pending_calls = 4096;
};

/// What a channel has done, for tests and metrics. A value type.
struct ChannelStats {
  std::uint64_t calls = 0;                ///< calls started (a transparent retry counts again)
  std::uint64_t waited = 0;               ///< calls that waited for a connection
  std::uint64_t transparent_retries = 0;  ///< refused calls sent again
  std::uint64_t retries_throttled = 0;    ///< refused calls not sent again because the budget was spent
  std::uint64_t connects = 0;             ///< connection attempts
  std::uint64_t connect_failures = 0;     ///< attempts that failed
  std::uint64_t resolutions = 0;          ///< name resolutions started
  std::size_t ready_connections = 0;      ///< connections ready now
};

/// Calls balanced over a target's connections (see the file's description). Held by shared_ptr;
/// dropping the last one closes it.
class ClientChannel : public std::enable_shared_from_this<ClientChannel> {
 public:
  /// How it works.
  using Options = ChannelOptions;

  /// Thread-safe. A channel to `target` on `loop` (a loop of an epoll or io_uring EventLoopGroup); it
  /// starts resolving and connecting at once. Throws std::invalid_argument for a target
  /// parse_target refuses or a loop of the blocking transport.
  static std::shared_ptr<ClientChannel> create(EventLoop& loop, std::string_view target, Options options = {});
  /// Thread-safe. Closes the channel (close()).
  ~ClientChannel();
  ClientChannel(const ClientChannel&) = delete;
  ClientChannel& operator=(const ClientChannel&) = delete;

  /// Loop thread only. Starts a call of `method` over the next pick, or one that waits for a
  /// connection (see the file's description); a call the channel cannot start has ended already
  /// (read() nullopt, finish() its status). Throws InvalidMetadata as Client::call.
  ClientCall call(std::string_view method, const CallOptions& options = {});
  /// Loop thread only. A unary call, sent again when refused (transparent retries).
  Task<UnaryResult> unary(std::string method, ByteBuf request, CallOptions options = {});
  /// Thread-safe. The callback form of unary(): `done` runs once, on loop(), with the result
  /// (metadata Client::call refuses comes as INVALID_ARGUMENT). Throws RejectedExecutionError when
  /// the loop has terminated.
  void unary(std::string method, ByteBuf request, CallOptions options, UniqueFunction<void(UnaryResult)> done);
  /// Thread-safe. A call of any shape in callback form, as Client::start (client_reactor.h): over
  /// the next pick, or once a connection is ready (a waiting call). Not retried. Throws as Client::start.
  ClientStream start(std::string method, CallOptions options, std::shared_ptr<ClientReactor> reactor);
  /// Loop thread only. For the callback form: call(), with `watcher` told when the connection the
  /// call goes over closes (once the call has one).
  ClientCall call_watched(std::string_view method, const CallOptions& options,
                          std::weak_ptr<detail::ConnectionCloseWatcher> watcher);

  /// Thread-safe. The channel's state now.
  ConnectivityState state() const noexcept { return state_->load(std::memory_order_acquire); }
  /// Thread-safe. Completes the first time a connection is ready; fails with Error when the channel
  /// closes first.
  Future<void> ready() const;
  /// Loop thread only.
  ChannelStats stats() const;
  /// Thread-safe. The loop of the channel and its calls.
  EventLoop& loop() const noexcept { return loop_; }
  /// Thread-safe. Closes every connection (their open calls end UNAVAILABLE), ends the waiting calls
  /// UNAVAILABLE and stops reconnecting; completes once the connections have closed. Again: the same.
  Future<void> close();

  class Impl;
  /// For create(); use create().
  ClientChannel(EventLoop& loop, std::shared_ptr<Impl> impl) noexcept;

 private:
  EventLoop& loop_;
  std::shared_ptr<Impl> impl_;
  std::shared_ptr<std::atomic<ConnectivityState>> state_;
};

}  // namespace weft::grpc
