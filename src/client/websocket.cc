// HttpClient::websocket: a WebSocket's own connection (never pooled), through the loop's
// connector (names, Happy Eyeballs, connect timeout), TLS for wss, then ws::ClientUpgrade; or a
// stream of the pool's HTTP/2 connection to the origin (RFC 8441, WebSocketOptions::http2). And
// HttpClient::close()'s first half: the open WebSockets' close handshakes.

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client_core.h"
#include "http2_tunnel_channel.h"
#include "tunnel_opener.h"
#include "weft/client/client_errors.h"
#include "weft/client/http_client.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/dns/dns_error.h"

namespace weft::client {

namespace detail {

namespace {

// Behind TLS until the WebSocket handshake starts: a failed TLS handshake is reported through its
// future (the caller's), so the exception event the TlsHandler also fires stops here instead of
// reaching the pipeline's tail (a stray WARN line, and a second reader of the error on the loop
// while the caller holds it). Removed before ws::ClientUpgrade is added.
class TlsFailureSink final : public Handler {
 public:
  static constexpr const char* kName = "websocket-tls-failure";
  void exception_caught(Context&, std::exception_ptr) override {}
};

// "ws://..." as the "http://..." Url::parse reads ("wss": "https"); throws UrlError.
Url parse_websocket_url(std::string_view text) {
  std::string_view scheme = text.substr(0, text.find("://"));
  std::string as_http;
  if (scheme.size() == 2 && (scheme[0] == 'w' || scheme[0] == 'W') && (scheme[1] == 's' || scheme[1] == 'S')) {
    as_http = "http";
  } else if (scheme.size() == 3 && (scheme[0] == 'w' || scheme[0] == 'W') && (scheme[1] == 's' || scheme[1] == 'S') &&
             (scheme[2] == 's' || scheme[2] == 'S')) {
    as_http = "https";
  } else {
    throw UrlError(UrlError::Part::scheme, text, "a WebSocket URL is ws:// or wss://");
  }
  as_http += text.substr(scheme.size());
  return Url::parse(as_http);
}

// A connect's failure as the client reports it (as OriginConnection does).
std::exception_ptr connect_error(std::exception_ptr error, const Url& url) {
  try {
    std::rethrow_exception(error);
  } catch (const ConnectTimeoutError&) {
    return std::make_exception_ptr(TimeoutError(TimeoutError::Kind::connect, url.to_string()));
  } catch (const DnsError& e) {
    return std::make_exception_ptr(HostResolutionError(e));
  } catch (...) {
    return error;
  }
}

// A WebSocket as the stream of an extended CONNECT (RFC 8441 4 and 5): the request's fields; once
// the server answered 2xx, the check of what it negotiated and a channel on the stream with the
// client's ws::Codec and the application. Settled once: opened, failed, or handed to HTTP/1.1.
class WebSocketTunnel final : public TunnelOpener {
 public:
  WebSocketTunnel(const ws::ClientHandshakeRequest& request, Promise<ws::Handshake> result, ws::TailFn tail)
      : request_(request), result_(std::move(result)), tail_(std::move(tail)) {
    fields_.emplace_back("sec-websocket-version", "13");
    if (!request_.subprotocols.empty()) {
      std::string offered;
      for (const std::string& p : request_.subprotocols) {
        if (!offered.empty()) offered += ", ";
        offered += p;
      }
      fields_.emplace_back("sec-websocket-protocol", std::move(offered));
    }
    if (request_.deflate.enabled) fields_.emplace_back("sec-websocket-extensions", ws::deflate_offer(request_.deflate));
    for (const auto& [name, value] : request_.headers) {
      std::string lower(name);
      for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
      fields_.emplace_back(std::move(lower), value);
    }
  }

  std::string_view protocol() const noexcept override { return "websocket"; }
  const std::vector<std::pair<std::string, std::string>>& fields() const noexcept override { return fields_; }

  // Thread-safe. Whether this call settles the WebSocket (the first one does).
  bool settle() noexcept { return !settled_.exchange(true, std::memory_order_acq_rel); }
  // Thread-safe. Fails the WebSocket unless it is settled.
  void fail(std::exception_ptr error) {
    if (settle()) result_.set_error(std::move(error));
  }

  std::optional<Future<void>> opened(Channel& connection, http2::ClientStream stream,
                                     const http::HttpClientResponse& head) override {
    if (!settle()) return std::nullopt;  // given up (the handshake timeout): the stream is reset as it goes
    ws::Handshake h;
    h.version = http::Version::http2;
    h.target = request_.target;
    const http::ResponseHead& fields = head.head();
    h.headers.reserve(fields.header_count);
    for (std::size_t i = 0; i < fields.header_count; ++i) {
      h.headers.emplace_back(std::string(fields.inline_headers[i].name), std::string(fields.inline_headers[i].value));
    }
    std::optional<Future<void>> ended;
    try {
      std::optional<ws::PerMessageDeflate::Config> config;
      if (const auto deflate = ws::check_negotiation(request_, head.status(), h)) {
        config = ws::PerMessageDeflate::client_config(*deflate, request_.deflate);
      }
      auto channel = std::make_shared<Http2TunnelChannel>(connection, std::move(stream));
      channel->pipeline().add_last(
          "websocket", std::make_shared<ws::Codec>(ws::Codec::Role::client, request_.connection, ByteBuf(), config));
      tail_(*channel, h);
      channel->start();
      ended = channel->close_future();
    } catch (...) {
      result_.set_error(std::current_exception());  // the stream is reset as its handle goes
      return std::nullopt;
    }
    result_.set_value(std::move(h));
    return ended;
  }

 private:
  const ws::ClientHandshakeRequest request_;
  Promise<ws::Handshake> result_;
  ws::TailFn tail_;
  std::vector<std::pair<std::string, std::string>> fields_;
  std::atomic<bool> settled_{false};
};

}  // namespace

TlsContextPtr ClientCore::websocket_tls() {
  std::lock_guard lock(tls_mutex_);
  if (options_->tls) return options_->tls;
  if (!ws_tls_) {
    TlsContextBuilder builder = TlsContext::client();
    builder.application_protocols({"http/1.1"});
    if (options_->insecure) {
      builder.verify(TlsVerify::none);
    } else {
      builder.trust_system_default();
    }
    ws_tls_ = builder.build();
  }
  return ws_tls_;
}

Future<ws::Handshake> ClientCore::websocket(std::string_view url_text, ws::TailFn tail, WebSocketOptions options) {
  Promise<ws::Handshake> result(answer_loop());
  Future<ws::Handshake> future = result.future();
  try {
    if (closing_.load(std::memory_order_acquire)) throw ClientClosedError();
    Url url = parse_websocket_url(url_text);
    ws::ClientHandshakeRequest request;
    request.host = url.authority();
    request.target = url.target();
    request.subprotocols = std::move(options.subprotocols);
    request.headers = std::move(options.headers);
    request.deflate = options.deflate;
    request.connection = options.connection;
    request.timeout = options.handshake_timeout;
    ws::validate(request);
    const bool secure = url.scheme() == Scheme::https;
    if (options.http2 != WebSocketHttp2::never) {
      // The pool's connection to the origin is HTTP/2 only where the client speaks it there.
      if (secure ? options_->http2 : options_->http2_prior_knowledge) {
        websocket_http2(std::move(url), std::move(request), std::move(result), tracked(std::move(tail)),
                        options.http2 == WebSocketHttp2::prefer, std::move(options.tls));
        return future;
      }
      if (options.http2 == WebSocketHttp2::require) {
        throw ws::HandshakeError(0, secure ? "HTTP/2 is off for this client (ClientOptions::http2)"
                                           : "ws:// over HTTP/2 is h2c by prior knowledge, which this client does "
                                             "not speak (ClientOptions::http2_prior_knowledge)");
      }
    }
    websocket_http1(url, std::move(request), std::move(result), tracked(std::move(tail)), std::move(options.tls));
  } catch (...) {
    result.set_error(std::current_exception());
  }
  return future;
}

void ClientCore::websocket_http1(const Url& url, ws::ClientHandshakeRequest request, Promise<ws::Handshake> result,
                                 ws::TailFn tail, TlsContextPtr tls) {
  try {
    if (url.scheme() == Scheme::https && !tls) tls = websocket_tls();
    if (url.scheme() != Scheme::https) tls = nullptr;
    auto upgrade = std::make_shared<ws::ClientUpgrade>(std::move(request), result, std::move(tail));
    LoopClient& loop_client = home();
    loop_client.loop().execute(
        [&loop_client, url, tls = std::move(tls), upgrade = std::move(upgrade), result]() mutable {
          loop_client.open_websocket(url, std::move(tls), std::move(upgrade), std::move(result));
        });
  } catch (...) {
    result.set_error(std::current_exception());
  }
}

ws::TailFn ClientCore::tracked(ws::TailFn tail) {
  return [core = weak_from_this(), tail = std::move(tail)](Channel& channel, ws::Handshake handshake) {
    if (auto c = core.lock()) c->track_websocket(channel);
    tail(channel, std::move(handshake));
  };
}

void ClientCore::track_websocket(Channel& channel) {
  std::lock_guard lock(websockets_mutex_);
  if (websockets_.size() >= websockets_pruned_at_) {  // the closed ones go, at a cost amortised over the adds
    std::erase_if(websockets_, [](const std::weak_ptr<Channel>& w) { return w.expired(); });
    websockets_pruned_at_ = std::max<std::size_t>(16, 2 * websockets_.size());
  }
  websockets_.push_back(channel.shared_from_this());
}

Future<void> ClientCore::close() {
  closing_.store(true, std::memory_order_release);
  std::vector<std::weak_ptr<Channel>> open;
  {
    std::lock_guard lock(websockets_mutex_);
    open = std::move(websockets_);
    websockets_.clear();
  }
  // Each WebSocket's close handshake (1001), then the pools: an HTTP/2 connection carrying
  // WebSockets stays until their streams have ended.
  auto left = std::make_shared<std::atomic<std::size_t>>(1);
  Promise<void> all;
  auto one_ended = [self = shared_from_this(), left, all]() mutable {
    if (left->fetch_sub(1) != 1) return;
    self->close_pools().add_listener([all](const Future<void>&) mutable { all.set_value(); });
  };
  for (const std::weak_ptr<Channel>& w : open) {
    ChannelPtr channel = w.lock();
    if (!channel || !channel->is_open()) continue;
    left->fetch_add(1);
    channel->close_future().add_listener([one_ended](const Future<void>&) mutable { one_ended(); });
    channel->write_and_flush(ws::Message::close(ws::close_code::going_away, "the client is closing"));
    // The last reference may be this one: let it go on the channel's loop.
    EventLoop& loop = channel->loop();
    if (!loop.in_loop()) loop.try_execute([c = std::move(channel)] {});
  }
  one_ended();
  return all.future();
}

void ClientCore::websocket_http2(Url url, ws::ClientHandshakeRequest request, Promise<ws::Handshake> result,
                                 ws::TailFn tail, bool fallback, TlsContextPtr fallback_tls) {
  auto tunnel = std::make_shared<WebSocketTunnel>(request, result, tail);
  Promise<http::HttpClientResponse> head;  // no loop: its listener runs where the pool answers
  auto x = make_exchange(url, "CONNECT", head);
  x->streamed = true;  // the answer is its head: no redirect is followed
  x->tunnel = tunnel;
  x->timeout = request.timeout;  // zero: none
  head.future().add_listener([self = shared_from_this(), tunnel, url, request, result, tail, fallback,
                              fallback_tls](const Future<http::HttpClientResponse>& f) mutable {
    if (auto error = f.error()) {
      try {
        std::rethrow_exception(error);
      } catch (const TunnelUnavailableError& e) {
        if (fallback) {  // HTTP/1.1 on a connection of its own
          if (tunnel->settle()) self->websocket_http1(url, std::move(request), result, std::move(tail), fallback_tls);
          return;
        }
        tunnel->fail(std::make_exception_ptr(ws::HandshakeError(0, e.what())));
      } catch (const TimeoutError& e) {
        tunnel->fail(e.kind() == TimeoutError::Kind::request
                         ? std::make_exception_ptr(ws::HandshakeError(0, "no answer within the handshake timeout"))
                         : error);
      } catch (...) {
        tunnel->fail(error);
      }
      return;
    }
    const int status = f.get().status();
    if (status < 200 || status >= 300) {
      tunnel->fail(std::make_exception_ptr(
          ws::HandshakeError(status, "the server answered " + std::to_string(status) + " to the extended CONNECT")));
    }
  });
  launch(std::move(x));
}

void LoopClient::open_websocket(const Url& url, TlsContextPtr tls, std::shared_ptr<ws::ClientUpgrade> upgrade,
                                Promise<ws::Handshake> result) {
  std::shared_ptr<TlsHandler> tls_handler;
  if (tls) {
    TlsHandlerOptions tls_options;
    tls_options.server_name = is_ip_literal(url.host()) ? std::string() : url.host();
    tls_options.verify_hostname = !core_.options().insecure;
    tls_handler = std::make_shared<TlsHandler>(std::move(tls), tls_options);
  }
  Future<ChannelPtr> connected = connector_.connect(url, [tls_handler](Channel& ch) {
    if (tls_handler) {
      ch.pipeline().add_last("tls", tls_handler);
      ch.pipeline().add_last(TlsFailureSink::kName, std::make_shared<TlsFailureSink>());
    }
  });
  connected.add_listener([url, tls_handler, upgrade, result](const Future<ChannelPtr>& f) mutable {
    if (auto error = f.error()) {
      result.set_error(connect_error(error, url));
      return;
    }
    ChannelPtr channel = f.take();
    // On the channel's loop, once TLS (if any) is up: the handshake's handler takes over.
    auto start = [channel, upgrade, result]() mutable {
      if (!channel->is_active()) {
        result.set_error(std::make_exception_ptr(ws::HandshakeError(0, "the connection closed before the handshake")));
        return;
      }
      try {
        if (channel->pipeline().context(TlsFailureSink::kName) != nullptr)
          channel->pipeline().remove(TlsFailureSink::kName);
        channel->pipeline().add_last("websocket-handshake", upgrade);
      } catch (...) {
        result.set_error(std::current_exception());
        channel->close();
      }
    };
    if (!tls_handler) {
      channel->loop().execute(std::move(start));
      return;
    }
    tls_handler->handshake_future().add_listener(
        [channel, tls_handler, result, start = std::move(start)](const Future<void>& h) mutable {
          if (auto error = h.error()) {
            result.set_error(error);
            channel->close();
            return;
          }
          if (tls_handler->application_protocol() == "h2") {
            result.set_error(std::make_exception_ptr(ws::HandshakeError(0, "the server chose h2 by ALPN")));
            channel->close();
            return;
          }
          channel->loop().execute(std::move(start));
        });
  });
}

}  // namespace detail

Future<ws::Handshake> HttpClient::websocket(std::string_view url, ws::Callbacks callbacks, WebSocketOptions options) {
  return core_->websocket(url, ws::tail_for(std::move(callbacks)), std::move(options));
}

Future<ws::Handshake> HttpClient::websocket(std::string_view url, ws::CoroutineFn fn, WebSocketOptions options) {
  return core_->websocket(url, ws::tail_for(std::move(fn)), std::move(options));
}

Future<ws::Handshake> HttpClient::websocket(std::string_view url, ws::HandshakeCoroutineFn fn,
                                            WebSocketOptions options) {
  return core_->websocket(url, ws::tail_for(std::move(fn)), std::move(options));
}

}  // namespace weft::client
