#pragma once
// What an HttpClient shares with the tasks it posts: the options, one LoopClient per loop of the
// group (its pools by origin, its requests' timers and redirects), the counters. A request runs on
// one loop from start to end: the caller's when the caller is on one of the group's loops, else
// the next one round-robin.

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "exchange.h"
#include "origin_connector.h"
#include "origin_pool.h"
#include "request_deadlines.h"
#include "stats_counters.h"
#include "weft/client/client_options.h"
#include "weft/client/client_stats.h"
#include "weft/client/request_body.h"
#include "weft/client/response_body.h"
#include "weft/client/websocket_options.h"
#include "weft/codec/websocket/client_upgrade.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/core/event_loop_group.h"

namespace weft::client::detail {

class ClientCore;

// One loop's share of the client. Loop thread only.
class LoopClient final : public ExchangeSink {
 public:
  LoopClient(ClientCore& core, EventLoop& loop);
  void begin(std::shared_ptr<Exchange> x);
  void close();
  void answered(std::shared_ptr<Exchange> x, http::HttpClientResponse&& response) override;
  void failed(std::shared_ptr<Exchange> x, std::exception_ptr error) override;
  EventLoop& loop() const noexcept { return loop_; }
  // Connects to `url` (TLS with `tls` when set) and hands the channel to `upgrade` (websocket.cc).
  void open_websocket(const Url& url, TlsContextPtr tls, std::shared_ptr<ws::ClientUpgrade> upgrade,
                      Promise<ws::Handshake> result);

 private:
  void route(std::shared_ptr<Exchange> x);
  void timed_out(const std::shared_ptr<Exchange>& x);
  void finish(Exchange& x);   // marks it done, stops its request timeout
  void arm_deadline_timer();  // for the first of deadlines_, unless one is armed
  void deadlines_due();
  void upload_failed(const std::shared_ptr<Exchange>& x, std::exception_ptr error);
  OriginPool& pool_for(const Url& url);

  ClientCore& core_;
  EventLoop& loop_;
  OriginConnector connector_;  // this loop's resolver (made on the first name), closed by close()
  std::unordered_map<std::string, std::shared_ptr<OriginPool>> pools_;  // by "scheme://host:port"
  std::string pool_key_;                   // pool_for's scratch: its capacity is kept, the lookup does not allocate
  OriginPool* last_pool_ = nullptr;        // pool_for's last answer (one of pools_)
  RequestDeadlines deadlines_;             // the requests under request_timeout
  std::optional<TimerId> deadline_timer_;  // for deadlines_.front() or earlier
  TimePoint deadline_timer_due_{};         // when deadline_timer_ fires
  bool closed_ = false;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(EventLoopGroup& group, ClientOptions options);
  // Thread-safe. Runs the request on a loop; the future's listeners run on the caller's loop.
  // `url`: a Url (moved) or a const Url& (copied once, into the request's exchange). `timeout`: the
  // request's own request timeout (HttpClientRequest::timeout), else the options'.
  template <class U>
  Future<http::HttpClientResponse> start(U&& url, std::string_view method, std::string header_block, ByteBuf body,
                                         std::optional<Duration> timeout = {}) {
    Promise<http::HttpClientResponse> result(answer_loop());
    Future<http::HttpClientResponse> future = result.future();
    auto x = make_exchange(std::forward<U>(url), method, std::move(result));
    if (!header_block.empty()) x->header_block = std::move(header_block);  // an empty one assigned is still a call
    x->timeout = timeout;
    x->body = std::move(body);
    launch(std::move(x));
    return future;
  }
  // Thread-safe. As start(), the answer being the head and a body read as it comes.
  Future<StreamedResponse> stream(Url url, std::string method, std::string header_block, ByteBuf body,
                                  std::optional<Duration> timeout = {});
  // Thread-safe. As stream(), the body being written as it goes (RequestBody); `length`: declared.
  Upload upload(Url url, std::string method, std::string header_block, std::optional<std::uint64_t> length,
                std::optional<Duration> timeout = {});
  // Thread-safe. Opens a WebSocket (HttpClient::websocket, websocket.cc).
  Future<ws::Handshake> websocket(std::string_view url, ws::TailFn tail, WebSocketOptions options);
  // Thread-safe. Ends the open WebSockets (a close with 1001 each, websocket.cc), then closes
  // every pool on its loop; the future completes when all have. Later requests are refused.
  Future<void> close();
  ClientStats stats() const noexcept { return counters_.snapshot(); }

  EventLoopGroup& group() const noexcept { return group_; }
  const ClientOptions& options() const noexcept { return *options_; }
  // Thread-safe. The https context: options().tls, else built on the first call (the system's trust
  // store costs milliseconds, which a client that never speaks https does not pay). Throws what
  // building it throws (and builds again on the next call).
  TlsContextPtr tls();
  // Thread-safe. The wss context when WebSocketOptions::tls is null (see websocket_options.h).
  TlsContextPtr websocket_tls();
  StatsCounters& counters() noexcept { return counters_; }
  SharedResolver& shared_resolver() noexcept { return shared_resolver_; }

 private:
  // The loop that owns a request's future (see the .cc).
  static EventLoop* answer_loop();
  Future<void> close_pools();  // close()'s second half
  // websocket(): on a connection of its own, or as a stream of the pool's HTTP/2 connection
  // (`fallback`: HTTP/1.1 where that cannot be).
  void websocket_http1(const Url& url, ws::ClientHandshakeRequest request, Promise<ws::Handshake> result,
                       ws::TailFn tail, TlsContextPtr tls);
  void websocket_http2(Url url, ws::ClientHandshakeRequest request, Promise<ws::Handshake> result, ws::TailFn tail,
                       bool fallback, TlsContextPtr fallback_tls);
  // The tail of a WebSocket, which notes its channel for close() before it adds `tail`.
  ws::TailFn tracked(ws::TailFn tail);
  void track_websocket(Channel& channel);    // thread-safe
  void launch(std::shared_ptr<Exchange> x);  // on home()'s loop
  LoopClient& home() const;                  // the caller's loop of the group, else the next one

  EventLoopGroup& group_;
  std::shared_ptr<const ClientOptions> options_;
  std::mutex tls_mutex_;
  TlsContextPtr tls_;  // under tls_mutex_
  TlsContextPtr ws_tls_;  // wss's default context (ALPN http/1.1 only), under tls_mutex_
  StatsCounters counters_;
  SharedResolver shared_resolver_;  // the blocking transport's (see origin_connector.h)
  std::vector<std::unique_ptr<LoopClient>> loops_;
  std::atomic<bool> closing_{false};  // close() was called: nothing new starts
  std::mutex websockets_mutex_;
  std::vector<std::weak_ptr<Channel>> websockets_;  // open WebSockets' channels, under websockets_mutex_
  std::size_t websockets_pruned_at_ = 16;           // the size at which the closed ones are dropped next
};

}  // namespace weft::client::detail
