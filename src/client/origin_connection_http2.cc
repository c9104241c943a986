// OriginConnection over HTTP/2 (h2 by ALPN, h2c by prior knowledge): requests are streams, up to
// the server's SETTINGS_MAX_CONCURRENT_STREAMS at once.

#include <utility>

#include "exchange.h"
#include "origin_connection.h"
#include "origin_pool.h"
#include "weft/client/client_errors.h"
#include "weft/codec/http2/client_codec.h"

namespace weft::client::detail {
namespace {

// After the codec: its exception events are the failures of the requests it fails (each request
// learns its own), so they end here instead of in a warning from the pipeline's tail.
class CodecFailures final : public Handler {
 public:
  void exception_caught(Context&, std::exception_ptr) override {}
};

}  // namespace

void OriginConnection::install_http2(Channel& ch) {
  http2::ClientSettings settings;
  settings.max_response_body = options_.max_response_body;
  settings.authority = origin_.authority();
  settings.scheme = std::string(origin_.scheme_name());
  auto codec = std::make_shared<http2::ClientCodec>(settings);
  ChannelPtr channel = ch.shared_from_this();
  auto connection = std::make_shared<Http2Connection>(channel, codec);
  ch.pipeline().add_last("http2", codec);
  ch.pipeline().add_last("failures", std::make_shared<CodecFailures>());
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  // Both listeners run on the channel's loop (the codec's promises are its loop's).
  codec->ready().add_listener([self, connection, channel](const Future<void>& settled) {
    if (auto error = settled.error()) {
      self->report_failure(channel, error);
      return;
    }
    const std::size_t limit = connection->codec().peer_max_concurrent_streams();
    self->on_pool_loop([self, connection, channel, limit]() mutable {
      Early report;
      report.channel = std::move(channel);
      report.capacity = limit;
      report.http2 = true;
      report.h2 = std::move(connection);
      self->attempt_ready(std::move(report));
    });
  });
  const Channel* raw = &ch;  // compared only: capturing the channel in its own close future would keep it
  channel->close_future().add_listener([self, raw](const Future<void>&) {
    self->on_pool_loop([self, raw] {
      if (!self->reported_) return;             // the ready listener reports the failure
      if (self->channel_.get() != raw) return;  // an attempt that lost (Happy Eyeballs closed it)
      self->dead = true;
      if (auto p = self->pool()) p->connection_closed(*self);
    });
  });
}

void OriginConnection::send_http2(std::shared_ptr<Exchange> x) {
  ++in_flight;
  x->on = this;
  auto self = std::static_pointer_cast<OriginConnection>(shared_from_this());
  const bool reused = served > 0;
  http2_->request(x->wire_request()).add_listener([self, x, reused](const Future<http::HttpClientResponse>& f) {
    std::exception_ptr error = f.error();
    std::optional<http::HttpClientResponse> response;
    if (!error) response.emplace(f.take());
    self->on_pool_loop([self, x, reused, error, response = std::move(response)]() mutable {
      --self->in_flight;
      self->idle_since = self->pool_loop().now();
      auto p = self->pool();
      if (!p) {
        x->fail_closed(self->pool_loop());
        return;
      }
      if (!error) {
        ++self->served;
        p->answered(*self, x, std::move(*response));
        return;
      }
      bool retryable = false;
      std::exception_ptr failure = error;
      try {
        std::rethrow_exception(error);
      } catch (const http2::ClientStreamError& e) {
        if (e.refused()) {
          retryable = true;   // the server did not process it (REFUSED_STREAM, GOAWAY)
          self->dead = true;  // after GOAWAY: no new streams here
        } else if (std::string_view(e.what()).find("max_response_body") != std::string_view::npos) {
          failure =
              std::make_exception_ptr(ResponseTooLargeError(x->url.to_string(), self->options_.max_response_body));
        }
      } catch (const ChannelClosedError&) {
        retryable = reused && x->idempotent();
        self->dead = true;
      } catch (...) {
      }
      p->failed(*self, x, failure, retryable);
    });
  });
}

}  // namespace weft::client::detail
