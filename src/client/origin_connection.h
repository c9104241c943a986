#pragma once
// The connection an OriginPool opens: TCP to the origin, TLS with ALPN for https, then HTTP/1.1 or
// HTTP/2 (h2 by ALPN, or h2c by prior knowledge). Its channel's handlers run on the channel's loop
// and report to the pool on the pool's loop. PooledConnection's methods: pool loop only.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http2_calls.h"
#include "pooled_connection.h"
#include "weft/channel/channel.h"
#include "weft/client/client_options.h"
#include "weft/client/http2_connection.h"
#include "weft/client/url.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/core/event_loop_group.h"

namespace weft::client::detail {

struct Http1Side;
class OriginConnector;
class UploadStream;

class OriginConnection final : public PooledConnection {
 public:
  OriginConnection(std::weak_ptr<OriginPool> pool, EventLoop& pool_loop, const Url& origin,
                   const ClientOptions& options, TlsContextPtr tls);
  ~OriginConnection() override;

  // Pool loop. Connects with `connector` (the pool loop's); the pool hears connection_ready or
  // connection_failed.
  void start(OriginConnector& connector);
  void send(std::shared_ptr<Exchange> x) override;
  void abandon(Exchange& x) override;
  void close() override;

  // Channel loop: the pipeline's protocol is known (TLS's ALPN, or from the start).
  void install_http1(Channel& ch);
  void install_http2(Channel& ch);
  // Channel loop: `channel` (an attempt's) ended before it was ready; `error` may be null.
  void report_failure(ChannelPtr channel, std::exception_ptr error);

  // Channel loop (from Http1Side's handlers), `channel` being the reporting one.
  void http1_ready(std::shared_ptr<Http1Side> side, ChannelPtr channel);
  void http1_response(http::HttpClientResponse&& response);
  void http1_body_done();  // a streamed body ended whole: the connection may serve again
  void http1_closed(ChannelPtr channel, std::exception_ptr error, bool answer_started, bool never_sent);

 private:
  // What an attempt's channel reported before it was known to be the connection's: ready (with
  // its protocol's state) or failed (`error` set).
  struct Early {
    ChannelPtr channel;
    std::exception_ptr error;
    std::size_t capacity = 1;
    bool http2 = false;
    std::shared_ptr<Http1Side> http1;
    std::shared_ptr<Http2Connection> h2;
  };
  // Pool loop. Happy Eyeballs runs the pipeline's setup on each attempt's channel; only the one the
  // connect future names (channel_) speaks for the connection. An attempt's first report waits
  // in early_ until that is known; a losing attempt's reports are dropped (Happy Eyeballs closes it).
  void attempt_ready(Early report);
  void attempt_failed(ChannelPtr channel, std::exception_ptr error);
  void connected(ChannelPtr channel);
  void became_ready(std::size_t capacity, bool is_http2, ChannelPtr channel);  // pool loop
  void failed_to_open(std::exception_ptr error);                               // pool loop
  void http1_answered(http::HttpClientResponse&& response);                    // pool loop
  void send_http2(std::shared_ptr<Exchange> x);
  void stream_http2(std::shared_ptr<Exchange> x);
  void tunnel_http2(std::shared_ptr<Exchange> x);  // an extended CONNECT (Exchange::tunnel)
  // Pool loop: an HTTP/2 request of `x` failed with `error` (`reused`: on a connection that had served).
  void http2_failed(const std::shared_ptr<Exchange>& x, std::exception_ptr error, bool reused);

  Url origin_;
  ClientOptions options_;  // a copy: the connection may outlive its client by a few tasks
  TlsContextPtr tls_;
  ChannelPtr channel_;                      // set on the pool loop once connected (the winning attempt)
  std::vector<Early> early_;                // pool loop: reports of attempts, until channel_ is known
  std::shared_ptr<Http1Side> http1_;        // HTTP/1.1: the handlers' state (channel loop)
  std::shared_ptr<Http2Connection> http2_;  // HTTP/2
  std::shared_ptr<Exchange> current_;       // HTTP/1.1: the request on the wire
  std::shared_ptr<UploadStream> upload_;    // HTTP/1.1: its body, while it is written as it goes
  std::optional<TimerId> connect_timer_;    // pool loop
  std::uint64_t h2_calls_made_ = 0;         // pool loop: HTTP/2 requests sent (numbers them)
  Http2Calls h2_calls_;                     // the channel's loop: their streams, while they wait
  bool reported_ = false;                   // pool loop: ready or failed was told
};

}  // namespace weft::client::detail
