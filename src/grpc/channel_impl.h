#pragma once
// grpc::ClientChannel::Impl: the subchannels (one per address), the picking, the calls that wait, the
// resolution and the backoff. Everything here is loop thread only (the channel's loop) except
// shared_state(), first_ready() and closed(), which are set up at construction.

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "client_call_state.h"
#include "weft/grpc/channel.h"

namespace weft::grpc {

// gRPC's connection backoff: the waits after consecutive failures.
class ConnectionBackoff {
 public:
  explicit ConnectionBackoff(const BackoffOptions& options) noexcept : options_(options), current_(options.initial) {}
  // The wait before the next attempt (jittered), and the one after it grows.
  Duration next(std::mt19937& random);
  // How long the next attempt may take.
  Duration connect_timeout() const noexcept { return std::max(current_, options_.min_connect_timeout); }
  void reset() noexcept { current_ = options_.initial; }

 private:
  BackoffOptions options_;
  Duration current_;
};

// A connection to one address and its state.
struct Subchannel {
  Subchannel(SocketAddress a, const BackoffOptions& backoff_options) : address(a), backoff(backoff_options) {}
  SocketAddress address;
  std::shared_ptr<Client> client;  // while ready
  ConnectivityState state = ConnectivityState::idle;
  ConnectionBackoff backoff;
  std::optional<TimerId> retry_timer;
  std::optional<TimerId> connect_timer;  // the attempt's bound: TCP, TLS and the server's SETTINGS
  std::uint64_t attempt = 0;             // callbacks of an older attempt are ignored
  TimePoint ready_at;                    // when its connection was last ready
  bool removed = false;                  // no longer among the target's addresses
};

class ClientChannel::Impl : public std::enable_shared_from_this<ClientChannel::Impl> {
 public:
  Impl(EventLoop& loop, ChannelTarget target, ChannelOptions options);

  void start();
  void shutdown();
  // `watcher`: told when the call's connection closes (the callback form), once it has one.
  ClientCall call(std::string_view method, const CallOptions& options,
                  std::weak_ptr<detail::ConnectionCloseWatcher> watcher = {});
  // Whether a refused call's attempt `attempt` may be sent again (counts the retry or the throttling).
  bool may_retry(std::size_t attempt);
  // The retry budget hears how `call` ended (one the channel ended itself, never sent, does not count).
  void count_result(const ClientCall& call, const Status& status);
  ChannelStats stats() const;
  EventLoop& loop() const noexcept { return loop_; }

  // Thread-safe: set up at construction.
  std::shared_ptr<std::atomic<ConnectivityState>> shared_state() const noexcept { return state_; }
  Future<void> first_ready() const { return first_ready_.future(); }
  Future<void> closed() const { return closed_.future(); }

 private:
  void resolve();
  void request_re_resolution();
  void set_addresses(std::vector<SocketAddress> addresses);
  void connect(const std::shared_ptr<Subchannel>& sc);
  void connected(const std::shared_ptr<Subchannel>& sc, std::uint64_t attempt, std::shared_ptr<Client> client);
  void connect_failed(const std::shared_ptr<Subchannel>& sc, std::uint64_t attempt, const std::string& why);
  void lost(std::shared_ptr<Subchannel> sc);  // by value: `sc` may be an element of subchannels_
  void retry_later(const std::shared_ptr<Subchannel>& sc);
  void stop_connect_timer(Subchannel& sc);
  void connect_next_first();  // pick_first: the first idle address, unless one is ready or connecting
  Subchannel* pick();
  bool usable(Subchannel& sc);
  void serve_waiting();
  void update_state();
  void set_state(ConnectivityState state);

  EventLoop& loop_;
  ChannelTarget target_;
  ChannelOptions options_;
  std::unique_ptr<Resolver> resolver_;                    // dns targets
  std::vector<std::shared_ptr<Subchannel>> subchannels_;  // in the resolver's order
  std::size_t next_pick_ = 0;                             // round_robin
  std::deque<std::weak_ptr<ClientCall::State>> waiting_;  // calls without a connection, oldest first
  std::string last_error_ = "no connection has been tried yet";
  std::mt19937 random_;
  double retry_tokens_;
  ChannelStats stats_;
  bool shut_down_ = false;
  bool resolving_ = false;
  std::optional<TimePoint> last_resolution_;
  std::optional<TimerId> resolution_timer_;
  ConnectionBackoff resolution_backoff_;  // a failed resolution is tried again after it
  std::shared_ptr<std::atomic<ConnectivityState>> state_;
  Promise<void> first_ready_;
  bool first_ready_set_ = false;
  Promise<void> closed_;
};

}  // namespace weft::grpc
