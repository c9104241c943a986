#pragma once
/// @file
/// The WebSocket server's upgrade from HTTP/1.1 (RFC 6455 section 4.2), as a Router route.
///
///   ws::websocket(*router, "/echo", ws::Callbacks{                       // callbacks
///       .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }});
///   ws::websocket(*router, "/chat", [](Connection<ws::Message>& c) -> Task<> {   // a coroutine
///     for (;;) {
///       ws::Message m = co_await c.read();       // the next whole message; a close comes last
///       if (m.is_close()) co_return;
///       co_await c.write(std::move(m));          // waits while the channel is not writable
///       c.flush();
///     }
///   });
///
/// The route checks the handshake: a GET over HTTP/1.1 with `Upgrade: websocket`, `Connection:
/// upgrade`, `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 bytes in base64. It answers
/// 426 (with `Upgrade: websocket` or `Sec-WebSocket-Version: 13`) where another protocol or version
/// was asked for, 400 for any other flaw, each with a body that says what was wrong; else 101 with
/// `Sec-WebSocket-Accept` and the subprotocol chosen (the first of UpgradeOptions::subprotocols that
/// the client offers; none if it offers none of them) and, when UpgradeOptions::deflate is enabled,
/// `Sec-WebSocket-Extensions` with the permessage-deflate offer accepted (deflate.h). Then the
/// connection leaves HTTP: the HTTP/1.1 codec and the router give way to a ws::Codec (codec.h) and
/// the application's handler.
///
/// It is a function rather than a member of Router because the router's layer (codec/http1) comes
/// below this one.
///
/// Over HTTP/2 (RFC 8441), with http2::Settings::enable_connect_protocol set, the same route answers
/// an extended CONNECT (`:protocol websocket`, `:path` the route's): `Sec-WebSocket-Version: 13` is
/// checked (426 otherwise), there is no key or accept (RFC 8441 5), the subprotocol and
/// permessage-deflate are negotiated as over HTTP/1.1, and `:status 200` accepts; then the stream is
/// served as a channel (http2::ServerCodec::serve_as_channel) whose DATA frames carry the WebSocket's
/// frames, and the same ws::Codec and handler run on it. The close handshake ends the stream with
/// END_STREAM both ways; a client's RST_STREAM or the connection's end reaches the handler as a
/// close with 1006; the connection's graceful end (GOAWAY: a drain, the loop's shutdown) starts the
/// close handshake with 1001. Backpressure is the stream's: a WebSocket that does not read holds at
/// most its stream window, and stalls no other stream. Handshake::version says which carried it.
///
/// What the handshake asked and settled (the target, the subprotocol, the request's headers) reaches
/// the application as a ws::Handshake: Callbacks::on_open, or a coroutine that takes it as its
/// second parameter.
///
/// Callbacks and coroutines run on the channel's loop, one connection's one at a time; the route's
/// functions are shared by every connection, on every loop, so they must be thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/channel/connection.h"
#include "weft/channel/context.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/message.h"
#include "weft/core/task.h"

namespace weft::ws {

/// What a connection's handshake asked for and settled, kept for the connection's life; a server's
/// or a client's (client_upgrade.h). Read-only: safe from any thread.
struct Handshake {
  /// The HTTP version that carried the handshake: http11 (an upgraded GET) or http2 (an extended
  /// CONNECT, RFC 8441: the WebSocket is one stream of an HTTP/2 connection).
  http::Version version = http::Version::http11;
  std::string target;       ///< the request target as sent: path and query ("/chat?room=7")
  std::string subprotocol;  ///< the subprotocol chosen (UpgradeOptions::subprotocols); empty: none
  /// permessage-deflate's parameters, when the handshake agreed it (UpgradeOptions::deflate); nullopt: none.
  std::optional<DeflateParameters> deflate;
  /// The header fields, in order: a server's the request's, a client's the 101 response's.
  std::vector<std::pair<std::string, std::string>> headers;

  /// The first header field named `name` (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept;
};

/// The callback form of a WebSocket handler. All run on the channel's loop; reply with
/// ctx.write(Message) and ctx.flush() (or ctx.write_and_flush), close with
/// ctx.write_and_flush(Message::close(code, reason)). Shared by every connection of the route: thread-safe.
struct Callbacks {
  /// Once, when the connection has switched, before any message: what the handshake settled (it
  /// lives as long as the connection: keep a pointer to it, or copy what you need).
  std::function<void(Context& ctx, const Handshake& handshake)> on_open = {};
  /// A whole text or binary message (take it with std::move to keep or echo it).
  std::function<void(Context& ctx, Message& message)> on_message = {};
  /// The connection's end, once: the close code and reason (Message::close_code(), reason()).
  std::function<void(Context& ctx, const Message& close)> on_close = {};
};

/// The coroutine form: one task per connection, reading Messages from a Connection (the last one a
/// close) and writing them (see weft::Connection, whose read() and write() it uses).
using CoroutineFn = std::function<Task<>(Connection<Message>& connection)>;
/// The coroutine form that also takes what the handshake settled (alive until the task ends).
using HandshakeCoroutineFn = std::function<Task<>(Connection<Message>& connection, const Handshake& handshake)>;

/// What puts the application after the codec once a connection has switched (loop thread): adds
/// its handler at the pipeline's end (a callbacks handler, or a Connection and its coroutine).
using TailFn = std::function<void(Channel& channel, Handshake handshake)>;
/// The TailFn of the callback form (for a server's route or a client). Thread-safe.
TailFn tail_for(Callbacks callbacks);
/// The TailFn of the coroutine form. Thread-safe.
TailFn tail_for(CoroutineFn fn);
/// The TailFn of the coroutine form that takes the handshake. Thread-safe.
TailFn tail_for(HandshakeCoroutineFn fn);

/// The settings of a WebSocket route.
struct UpgradeOptions {
  Options connection;                     ///< limits and timeouts of each connection
  std::vector<std::string> subprotocols;  ///< the server's subprotocols, preferred first
  DeflateOptions deflate;                 ///< permessage-deflate (RFC 7692): off unless enabled
};

/// The Sec-WebSocket-Accept value for a Sec-WebSocket-Key: base64(SHA-1(key + RFC 6455's GUID)).
/// Thread-safe.
std::string accept_key(std::string_view key);

/// A low-level route (Router::RouteFn) that upgrades to WebSocket and runs `callbacks` (see the
/// file's description). Thread-safe to call; the route runs on each channel's loop.
http::Router::RouteFn upgrade(Callbacks callbacks, UpgradeOptions options = {});
/// As upgrade(Callbacks, UpgradeOptions), with a coroutine per connection.
http::Router::RouteFn upgrade(CoroutineFn fn, UpgradeOptions options = {});
/// As upgrade(CoroutineFn, UpgradeOptions), with a coroutine that takes the handshake.
http::Router::RouteFn upgrade(HandshakeCoroutineFn fn, UpgradeOptions options = {});

/// router.get(path, route) and router.route("CONNECT", path, route) with route = upgrade(handler,
/// options): the GET of HTTP/1.1 and the extended CONNECT of HTTP/2. Not thread-safe (the router's setup).
template <class Handler>
http::Router& websocket(http::Router& router, std::string path, Handler&& handler, UpgradeOptions options = {}) {
  http::Router::RouteFn route = upgrade(std::forward<Handler>(handler), std::move(options));
  router.route("CONNECT", path, route);
  return router.get(std::move(path), std::move(route));
}

}  // namespace weft::ws
