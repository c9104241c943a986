#include "origin_connection.h"

#include <utility>

#include "body_stream.h"
#include "exchange.h"
#include "http1_side.h"
#include "origin_connector.h"
#include "origin_pool.h"
#include "tunnel_opener.h"
#include "upload_stream.h"
#include "weft/client/client_errors.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"

namespace weft::client::detail {
namespace {

// An HTTP/1.1 request's streamed body: chunks written on the channel, each push done when the
// channel is writable again (Http1Side::upload_push).
class Http1Upload final : public UploadSink {
 public:
  Http1Upload(std::shared_ptr<Http1Side> side, ChannelPtr channel, EventLoop& pool_loop)
      : side_(std::move(side)), channel_(std::move(channel)), pool_loop_(pool_loop) {}
  Future<void> push(ByteBuf chunk) override {
    Promise<void> done(&pool_loop_);
    Future<void> future = done.future();
    on_channel([side = side_, chunk = std::move(chunk), done]() mutable { side->upload_push(std::move(chunk), done); },
               done);
    return future;
  }
  void end() override {
    on_channel([side = side_] { side->upload_end(); }, std::nullopt);
  }
  void abort() override { channel_->close(); }  // a body cut short: never reused

 private:
  template <class F>
  void on_channel(F&& fn, std::optional<Promise<void>> done) {
    if (channel_->loop().in_loop()) {
      fn();
    } else if (!channel_->loop().try_execute(std::forward<F>(fn)) && done) {
      done->fail(ChannelClosedError("the request body's connection has ended (its loop terminated)"));
    }
  }
  std::shared_ptr<Http1Side> side_;
  ChannelPtr channel_;
  EventLoop& pool_loop_;
};

// After TLS: completes the pipeline from the protocol ALPN chose, then leaves it. A failed
// handshake's error is kept (and its exception event taken, so that nothing reaches the tail).
class AlpnSwitch final : public Handler {
 public:
  explicit AlpnSwitch(std::weak_ptr<OriginConnection> connection) : connection_(std::move(connection)) {}
  void user_event(Context& ctx, const std::any& event) override {
    const auto* done = std::any_cast<TlsHandshakeCompleted>(&event);
    if (done == nullptr) {
      ctx.fire_user_event(event);
      return;
    }
    if (!done->success()) {
      error_ = done->error;
      return;
    }
    Channel& ch = ctx.channel();
    if (auto connection = connection_.lock()) {
      if (done->protocol == "h2") {
        connection->install_http2(ch);
      } else {
        connection->install_http1(ch);
      }
    }
    ch.pipeline().remove(*this);
  }
  void exception_caught(Context&, std::exception_ptr error) override {
    if (!error_) error_ = error;
  }
  void channel_inactive(Context& ctx) override {
    if (auto connection = connection_.lock()) connection->report_failure(ctx.channel().shared_from_this(), error_);
    ctx.fire_channel_inactive();
  }

 private:
  std::weak_ptr<OriginConnection> connection_;  // the connection holds the channel
  std::exception_ptr error_;
};

}  // namespace

OriginConnection::OriginConnection(std::weak_ptr<OriginPool> pool, EventLoop& pool_loop, const Url& origin,
                                   const ClientOptions& options, TlsContextPtr tls)
    : PooledConnection(std::move(pool), pool_loop), origin_(origin), options_(options), tls_(std::move(tls)) {}

OriginConnection::~OriginConnection() = default;

void OriginConnection::start(OriginConnector& connector) {
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  if (options_.connect_timeout > Duration::zero()) {
    connect_timer_ = pool_loop().schedule(options_.connect_timeout, [self] {
      self->connect_timer_.reset();
      if (self->reported_) return;
      self->failed_to_open(
          std::make_exception_ptr(TimeoutError(TimeoutError::Kind::connect, self->origin_.to_string())));
    });
  }
  const bool tls = origin_.scheme() == Scheme::https;
  const bool prior_knowledge = !tls && options_.http2_prior_knowledge;
  TlsContextPtr context = tls_;
  std::string server_name = is_ip_literal(origin_.host()) ? std::string() : origin_.host();
  const bool verify = !options_.insecure;
  Future<ChannelPtr> connected =
      connector.connect(origin_, [self, tls, prior_knowledge, context, server_name, verify](Channel& ch) {
        if (tls) {
          TlsHandlerOptions tls_options;
          tls_options.server_name = server_name;
          tls_options.verify_hostname = verify;
          ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context, tls_options));
          ch.pipeline().add_last("alpn", std::make_shared<AlpnSwitch>(self));
        } else if (prior_knowledge) {
          self->install_http2(ch);
        } else {
          self->install_http1(ch);
        }
      });
  connected.add_listener([self](const Future<ChannelPtr>& f) {
    if (auto error = f.error()) {
      try {
        std::rethrow_exception(error);
      } catch (const ConnectTimeoutError&) {
        error = std::make_exception_ptr(TimeoutError(TimeoutError::Kind::connect, self->origin_.to_string()));
      } catch (const DnsError& e) {
        error = std::make_exception_ptr(HostResolutionError(e));
      } catch (...) {
      }
      self->on_pool_loop([self, error] { self->failed_to_open(error); });
      return;
    }
    ChannelPtr channel = f.get();
    self->on_pool_loop([self, channel] { self->connected(channel); });
  });
}

void OriginConnection::connected(ChannelPtr channel) {
  channel_ = channel;
  std::vector<Early> early = std::move(early_);
  early_.clear();
  if (reported_) {
    channel->close();  // it failed meanwhile (the connect timeout, close())
    return;
  }
  for (Early& report : early) {
    if (report.channel != channel) continue;
    if (report.error) {
      failed_to_open(report.error);
    } else {
      attempt_ready(std::move(report));
    }
    return;
  }
}

void OriginConnection::attempt_ready(Early report) {
  if (!channel_) {
    if (!reported_) early_.push_back(std::move(report));
    return;
  }
  if (report.channel != channel_) return;  // an attempt that lost
  if (report.http1) http1_ = std::move(report.http1);
  if (report.h2) http2_ = std::move(report.h2);
  became_ready(report.capacity, report.http2, std::move(report.channel));
}

void OriginConnection::attempt_failed(ChannelPtr channel, std::exception_ptr error) {
  if (!error) error = std::make_exception_ptr(ChannelClosedError("the connection closed before it was ready"));
  if (!channel_) {
    // Kept when this attempt is the first to report; the connect future decides whether it counts.
    bool seen = false;
    for (const Early& e : early_) seen = seen || e.channel == channel;
    if (reported_ || seen) return;
    Early report;
    report.channel = std::move(channel);
    report.error = error;
    early_.push_back(std::move(report));
    return;
  }
  if (channel != channel_) return;  // an attempt that lost
  failed_to_open(error);
}

void OriginConnection::report_failure(ChannelPtr channel, std::exception_ptr error) {
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  on_pool_loop(
      [self, channel = std::move(channel), error]() mutable { self->attempt_failed(std::move(channel), error); });
}

void OriginConnection::became_ready(std::size_t capacity_now, bool is_http2, ChannelPtr channel) {
  if (reported_) {
    channel->close();  // timed out meanwhile
    return;
  }
  reported_ = true;
  if (connect_timer_) pool_loop().cancel(*connect_timer_);
  connect_timer_.reset();
  ready = true;
  opened_at = pool_loop().now();  // the age counts from here (max_connection_age)
  http2 = is_http2;
  capacity = capacity_now == 0 ? 1 : capacity_now;
  idle_since = pool_loop().now();
  if (auto p = pool()) p->connection_ready(*this);
}

void OriginConnection::failed_to_open(std::exception_ptr error) {
  if (reported_) return;
  reported_ = true;
  dead = true;
  if (connect_timer_) pool_loop().cancel(*connect_timer_);
  connect_timer_.reset();
  early_.clear();
  if (channel_) channel_->close();
  if (auto p = pool()) p->connection_failed(*this, error);
}

void OriginConnection::close() {
  dead = true;
  if (current_) {
    // Closed by the pool (the client's close): its answer cannot come now. (A request that timed
    // out is done already and stays so.)
    in_flight = 0;
    std::exchange(current_, nullptr)->fail_closed(pool_loop());
  }
  if (upload_) std::exchange(upload_, nullptr)->stop(std::make_exception_ptr(ClientClosedError()));
  if (channel_) {
    channel_->close();
  } else if (!reported_) {
    failed_to_open(std::make_exception_ptr(ChannelClosedError("the connection was closed while it opened")));
  }
}

void OriginConnection::send(std::shared_ptr<Exchange> x) {
  if (http2) {
    send_http2(std::move(x));
    return;
  }
  if (x->tunnel) {  // an extended CONNECT needs HTTP/2: the exchange fails, from a task of its own
    pool_loop().try_execute(
        [self = std::static_pointer_cast<OriginConnection>(shared_from_this()), x = std::move(x)]() mutable {
          if (auto p = self->pool()) {
            p->failed(*self, std::move(x),
                      std::make_exception_ptr(TunnelUnavailableError("the server chose HTTP/1.1, not h2")), false);
          }
        });
    return;
  }
  ++in_flight;
  x->on = this;
  current_ = x;
  http::HttpClientRequest request = x->wire_request();
  if (x->upload) request.stream_body(x->upload->length());
  std::shared_ptr<Http1Body> body;
  if (x->streamed) {
    body = std::allocate_shared<Http1Body>(weft::detail::FramePoolAllocator<Http1Body>(), channel_,
                                           options_.idle_timeout, x->url);
    std::weak_ptr<OriginConnection> weak = std::static_pointer_cast<OriginConnection>(shared_from_this());
    body->on_end = [weak] {
      if (auto c = weak.lock()) c->http1_body_done();
    };
    request.stream_body_to(body);
    x->body_stream = body;
  }
  http1_->send_from_pool(channel_, std::move(request), !x->idempotent(), std::move(body));
  if (x->upload) {
    upload_ = x->upload;
    upload_->attach(std::make_shared<Http1Upload>(http1_, channel_, pool_loop()));
  }
}

void OriginConnection::abandon(Exchange& x) {
  x.on = nullptr;
  if (!http2) {
    close();  // an HTTP/1.1 answer cannot be skipped: the connection goes
    return;
  }
  // HTTP/2: RST_STREAM(CANCEL) frees the server's work and the stream's slot; its failure then
  // reaches the pool as any stream's does. Posted after the request's own opening (the same queue).
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  http2_->loop().try_execute([self, call = x.h2_call] {
    if (const std::int32_t stream = self->h2_calls_.stream_of(call)) self->http2_->codec().cancel(stream);
  });
}

}  // namespace weft::client::detail
