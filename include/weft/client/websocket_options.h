#pragma once
/// @file
/// client::WebSocketOptions: the settings of one WebSocket a client opens
/// (HttpClient::websocket(), http_client.h).

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/codec/tls/tls_context.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/core/clock.h"

namespace weft::client {

/// Whether a WebSocket is opened as a stream of the client's HTTP/2 connection to its origin (RFC
/// 8441's extended CONNECT) or on an HTTP/1.1 connection of its own (RFC 6455's upgrade).
enum class WebSocketHttp2 : std::uint8_t {
  /// HTTP/1.1 on a connection of its own (the default: every WebSocket server speaks it).
  never,
  /// HTTP/2 when the origin's pooled connection is HTTP/2 and its server enabled extended CONNECT;
  /// else HTTP/1.1 on a connection of its own.
  prefer,
  /// HTTP/2 only: where it cannot be, the WebSocket fails with ws::HandshakeError (status 0).
  require,
};

/// The settings of a WebSocket opened by HttpClient::websocket(). The connect timeout, name
/// resolution and `insecure` are the client's (ClientOptions).
struct WebSocketOptions {
  std::vector<std::string> subprotocols;                     ///< offered, preferred first (tokens)
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra request fields (Origin, Authorization...)
  /// permessage-deflate (RFC 7692): offered when enabled; what each field asks is in deflate.h.
  ws::DeflateOptions deflate;
  ws::Options connection;  ///< the WebSocket's limits, close timeout and idle keepalive pings
  /// The 101 must have arrived this long after the connection (and its TLS handshake) was made:
  /// else HandshakeError with status 0. Zero: no limit.
  Duration handshake_timeout = std::chrono::seconds(10);
  /// wss: the TLS context (its trust, client certificate; its ALPN list should hold only
  /// "http/1.1"). Null: ClientOptions::tls when set, else one the client builds once for WebSockets:
  /// the system's trust store, the server's certificate and name verified unless
  /// ClientOptions::insecure.
  TlsContextPtr tls;
  /// HTTP/2 (RFC 8441): the WebSocket as a stream of the pooled HTTP/2 connection to its origin,
  /// beside other WebSockets and requests -- wss:// when the server chose h2 by ALPN
  /// (ClientOptions::http2), ws:// when the client speaks h2c by prior knowledge
  /// (ClientOptions::http2_prior_knowledge) -- once the server's SETTINGS enabled extended CONNECT.
  /// The connection's TLS is then the client's (ClientOptions::tls), not `tls`.
  WebSocketHttp2 http2 = WebSocketHttp2::never;
};

}  // namespace weft::client
