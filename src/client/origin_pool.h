#pragma once
// The connections of one loop to one origin (scheme, host, port), and the requests waiting for
// them. A request goes to a ready connection below its capacity (HTTP/2: the server's concurrency
// limit); else it waits in a bounded queue while connections open, up to
// max_connections_per_origin. A connection that failed, closed, or said Connection: close is never
// handed out again; one idle past idle_connection_timeout or older than max_connection_age is
// closed. A request whose keep-alive connection closed before any byte of its answer is sent once
// more, on a fresh connection, when it is idempotent or was never sent. Pool loop only.

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exchange.h"
#include "pooled_connection.h"
#include "stats_counters.h"
#include "weft/client/client_options.h"
#include "weft/core/event_loop_group.h"

namespace weft::client::detail {

class OriginConnector;

// Where a pool's requests end: their answer, or their failure (the client's redirects and timers).
class ExchangeSink {
 public:
  virtual ~ExchangeSink() = default;
  virtual void answered(std::shared_ptr<Exchange> x, http::HttpClientResponse&& response) = 0;
  virtual void failed(std::shared_ptr<Exchange> x, std::exception_ptr error) = 0;
};

class OriginPool : public std::enable_shared_from_this<OriginPool> {
 public:
  OriginPool(EventLoop& loop, OriginConnector& connector, const Url& origin, const ClientOptions& options,
             TlsContextPtr tls, ExchangeSink& sink, StatsCounters& stats);
  ~OriginPool();
  OriginPool(const OriginPool&) = delete;
  OriginPool& operator=(const OriginPool&) = delete;

  // A request for this origin: sent now, queued, or failed with PoolQueueFullError.
  void submit(std::shared_ptr<Exchange> x);
  // `x` timed out: out of the queue, or abandoned by its connection.
  void withdraw(Exchange& x);
  // Closes every connection and fails what waits with `error`.
  void close_all(std::exception_ptr error);
  // Takes `c`, opened elsewhere (bench/client_pool.cc: one without a socket), as open() takes the
  // connections it makes; a ready one serves at once.
  void adopt(std::shared_ptr<PooledConnection> c);

  // From the connections.
  void connection_ready(PooledConnection& c);
  void connection_failed(PooledConnection& c, std::exception_ptr error);  // never became ready
  void connection_closed(PooledConnection& c);
  void answered(PooledConnection& c, std::shared_ptr<Exchange> x, http::HttpClientResponse&& response);
  // `c` finished carrying a streamed body (answered earlier with its head): it may serve again.
  void released(PooledConnection& c);
  // `retryable`: no byte of the answer came, and the request is idempotent or was never sent.
  void failed(PooledConnection& c, std::shared_ptr<Exchange> x, std::exception_ptr error, bool retryable);

  std::size_t connection_count() const noexcept { return connections_.size(); }
  std::size_t pending_count() const noexcept { return pending_.size(); }
  const std::string& name() const noexcept { return name_; }
  const Url& origin() const noexcept { return origin_; }

 private:
  void dispatch();
  void dispatch_once();
  void reap();  // closes the ready connections marked dead with nothing in flight (when reap_due_)
  // A connection reporting: when it is dead, the next reap() looks for those it can close; when it
  // is idle, pick() finds it on top of idle_.
  void note(PooledConnection& c) {
    reap_due_ = reap_due_ || c.dead;
    if (c.ready && !c.dead && c.in_flight == 0 && !c.in_idle_stack) {
      c.in_idle_stack = true;
      idle_.push_back(&c);
    }
  }
  PooledConnection* pop_idle(TimePoint now);  // the last one that became idle and still is, or null
  PooledConnection* pick(bool fresh_only);
  void open();
  void remove(PooledConnection& c);
  void sweep();  // closes connections idle too long or too old; re-arms itself
  void arm_sweep();
  bool expired(const PooledConnection& c, TimePoint now) const noexcept;

  EventLoop& loop_;
  OriginConnector& connector_;  // the loop's (LoopClient's): resolves and connects
  Url origin_;
  std::string name_;  // "http://host:port", for messages
  const ClientOptions& options_;
  TlsContextPtr tls_;
  ExchangeSink& sink_;
  StatsCounters& stats_;
  std::vector<std::shared_ptr<PooledConnection>> connections_;
  std::deque<std::shared_ptr<Exchange>> pending_;
  bool spoke_http2_ = false;  // a connection here became HTTP/2: expect more streams per connection
  bool spoke_http1_ = false;  // one became HTTP/1.1: a connection per request in flight
  bool closed_ = false;
  bool dispatching_ = false;
  bool dispatch_again_ = false;
  // A connection may be dead, ready and idle: set where one is marked dead (pick) or reports while
  // dead (each of its in_flight drops is reported), so that reap() scans only then.
  bool reap_due_ = false;
  // The connections that became idle, the latest on top: pick() takes one without a scan. An entry
  // may have been handed out since (pop_idle() skips it); each is one of connections_ (remove()
  // takes it out) and is here at most once (in_idle_stack).
  std::vector<PooledConnection*> idle_;
  std::optional<TimerId> sweep_timer_;
};

}  // namespace weft::client::detail
