// HttpClient::websocket: a WebSocket's own connection (never pooled), through the loop's
// connector (names, Happy Eyeballs, connect timeout), TLS for wss, then ws::ClientUpgrade.

#include <memory>
#include <utility>

#include "client_core.h"
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
    Url url = parse_websocket_url(url_text);
    ws::ClientHandshakeRequest request;
    request.host = url.authority();
    request.target = url.target();
    request.subprotocols = std::move(options.subprotocols);
    request.headers = std::move(options.headers);
    request.deflate = options.deflate;
    request.connection = options.connection;
    request.timeout = options.handshake_timeout;
    TlsContextPtr tls;
    if (url.scheme() == Scheme::https) tls = options.tls ? options.tls : websocket_tls();
    auto upgrade = std::make_shared<ws::ClientUpgrade>(std::move(request), result, std::move(tail));
    LoopClient& loop_client = home();
    loop_client.loop().execute(
        [&loop_client, url = std::move(url), tls = std::move(tls), upgrade = std::move(upgrade), result]() mutable {
          loop_client.open_websocket(url, std::move(tls), std::move(upgrade), std::move(result));
        });
  } catch (...) {
    result.set_error(std::current_exception());
  }
  return future;
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
