#pragma once
/// @file
/// client::HttpClient: HTTP/1.1 and HTTP/2 requests by URL, over pooled connections, on an
/// EventLoopGroup it is given.
///
///   weft::client::HttpClient client(group);                       // ClientOptions{} : see client_options.h
///   weft::http::HttpClientResponse r = co_await client.get("http://127.0.0.1:8080/json");
///   client.get("https://example.com/").add_listener([](const auto& f) { ... });   // the callback form
///
/// - http speaks HTTP/1.1 (or h2c with ClientOptions::http2_prior_knowledge); https speaks h2 when
///   the server chooses it by ALPN, else HTTP/1.1, with the system's trust store, SNI and the host
///   name checked (an untrusted or misnamed certificate: TlsHandshakeError, cause() certificate).
/// - Each loop keeps a pool per origin (scheme, host, port): see ClientOptions for its bounds and
///   OriginPool (src/client/origin_pool.h) for its rules. A request that a keep-alive connection
///   dropped unanswered is sent once more on a fresh connection when it is idempotent, or when
///   none of its bytes had been written to the socket (a write completion on its first byte tells;
///   one that was even partly written is never sent twice).
/// - A request runs on the caller's loop when the caller is on one of the group's loops, else on
///   the next loop; the returned future's listeners (and a co_await's resumption) run on the
///   caller's loop when the caller is on any loop -- except an executor thread (ExecutorGroup, a
///   loop without I/O), where get() blocks until the answer and listeners run on the request's
///   loop. On an I/O loop get() throws BlockingOperationError (docs/client.md, "Which thread").
/// - Failures are typed: UrlError, TimeoutError (which timeout), PoolQueueFullError,
///   ResponseTooLargeError, TooManyRedirectsError, HostResolutionError (client_errors.h), IoError
///   (a refused connect), ChannelClosedError (a connection lost under the request), TlsHandshakeError,
///   http::HttpProtocolError (a malformed HTTP/1.1 answer).
///
/// Names: numeric hosts and "localhost" until the resolver (weft/dns/) is in.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/client/client_errors.h"
#include "weft/client/client_options.h"
#include "weft/client/client_stats.h"
#include "weft/client/request_body.h"
#include "weft/client/response_body.h"
#include "weft/client/url.h"
#include "weft/client/websocket_options.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/websocket/client_upgrade.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"

namespace weft::client {

namespace detail {
class ClientCore;
}

/// An HTTP client (see the file's description). Every method is thread-safe.
class HttpClient {
 public:
  /// A client on `group`'s loops; the group must outlive it.
  explicit HttpClient(EventLoopGroup& group, ClientOptions options = {});
  /// Closes the client (see close()); off the group's loops, waits until every loop has closed its
  /// pools (so destroy the client before its group).
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// GET `url`.
  Future<http::HttpClientResponse> get(std::string_view url) { return request("GET", url); }
  /// `method` on `url`, with `body` (empty: none).
  Future<http::HttpClientResponse> request(std::string_view method, std::string_view url, ByteBuf body = {});
  /// GET `url`, parsed already: a URL requested again and again is parsed once (Url::parse).
  Future<http::HttpClientResponse> get(const Url& url) { return request("GET", url); }
  /// `method` on `url`, parsed already, with `body` (empty: none).
  Future<http::HttpClientResponse> request(std::string_view method, const Url& url, ByteBuf body = {});
  /// `request`, whose target is an absolute URL ("https://host/path"); its headers and body are sent
  /// (Host, when it has none, is the URL's authority). Its timeout(), when set, replaces
  /// ClientOptions::request_timeout for it (so in stream() and upload() too).
  Future<http::HttpClientResponse> request(http::HttpClientRequest request);
  /// `request`, whose target is origin-form ("/path?query"), sent to `origin`'s scheme, host and port
  /// (its path and query are not used): a client that sends many requests to one origin, a proxy,
  /// parses it once. Otherwise as request(http::HttpClientRequest); a target that is not
  /// origin-form fails the future with UrlError.
  Future<http::HttpClientResponse> request(const Url& origin, http::HttpClientRequest request);
  /// As request(method, url, body), but the future completes with the response's head, and its body
  /// is read as it comes, with backpressure (ResponseBody, response_body.h): no bound on its size,
  /// memory bounded whatever the reader's pace. request_timeout covers the request until the head;
  /// idle_timeout, each wait for body bytes. A redirect is not followed (it is the answer).
  Future<StreamedResponse> stream(std::string_view method, std::string_view url, ByteBuf body = {});
  /// As stream(method, url, body) for `request` (see request(http::HttpClientRequest)).
  Future<StreamedResponse> stream(http::HttpClientRequest request);
  /// As stream(http::HttpClientRequest), sent to `origin` (see request(const Url&, HttpClientRequest)).
  Future<StreamedResponse> stream(const Url& origin, http::HttpClientRequest request);

  /// `method` on `url`, its body written as it goes, with backpressure (RequestBody,
  /// request_body.h): `content_length` declared, or chunked (HTTP/1.1) / DATA until the end
  /// (HTTP/2). The response comes as stream() gives it. Never retried; not redirected.
  Upload upload(std::string_view method, std::string_view url, std::optional<std::uint64_t> content_length = {});
  /// As upload(method, url, content_length) for `request` (its headers; its body must be empty).
  Upload upload(http::HttpClientRequest request, std::optional<std::uint64_t> content_length = {});
  /// As upload(http::HttpClientRequest, content_length), sent to `origin` (see
  /// request(const Url&, HttpClientRequest)).
  Upload upload(const Url& origin, http::HttpClientRequest request, std::optional<std::uint64_t> content_length = {});

  /// Opens a WebSocket to `url` ("ws://host[:port]/path?query" or "wss://..."; RFC 6455 over
  /// HTTP/1.1) on a connection of its own -- it leaves HTTP and never returns to a pool -- or, as
  /// WebSocketOptions::http2 asks, as a stream of the pooled HTTP/2 connection to the origin (RFC
  /// 8441), and runs `callbacks` on it, on the connection's loop. The future completes, on the
  /// caller's loop as request()'s does, with what the handshake settled (subprotocol, deflate, the
  /// answer's fields, the version) once the WebSocket is open, or fails: UrlError,
  /// HostResolutionError, IoError (refused), TimeoutError (connect), TlsHandshakeError (wss: an
  /// untrusted or misnamed certificate), ws::HandshakeError (any flaw in the server's answer, see
  /// client_upgrade.h; over HTTP/2 an answer other than 2xx), http2::ClientStreamError (HTTP/2: the
  /// server reset the CONNECT's stream), ClientClosedError (after close()), std::invalid_argument
  /// (options that cannot be sent). On failure the connection (HTTP/2: the stream) is closed.
  /// The WebSocket ends with its handler (a close, the coroutine's return), close(), or its
  /// group's shutdown.
  Future<ws::Handshake> websocket(std::string_view url, ws::Callbacks callbacks, WebSocketOptions options = {});
  /// As websocket(url, Callbacks, options), with a coroutine that reads and writes ws::Message
  /// through a Connection (as the server's coroutine handlers do); the connection closes when it
  /// returns.
  Future<ws::Handshake> websocket(std::string_view url, ws::CoroutineFn fn, WebSocketOptions options = {});
  /// As websocket(url, CoroutineFn, options), the coroutine also taking what the handshake settled.
  Future<ws::Handshake> websocket(std::string_view url, ws::HandshakeCoroutineFn fn, WebSocketOptions options = {});

  /// Closes the client. Each open WebSocket first gets a close with 1001 (going away) and ends its
  /// close handshake (its handler's close comes as usual; close_timeout bounds the wait); then every
  /// pooled connection closes, and requests still waiting or under way fail with ClientClosedError.
  /// Requests and WebSockets asked for after the call fail with ClientClosedError. The future
  /// completes once the WebSockets have ended and every loop has closed its pools.
  Future<void> close();
  /// What the pools did so far.
  ClientStats stats() const noexcept;

 private:
  std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace weft::client
