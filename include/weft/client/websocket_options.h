#pragma once
/// @file
/// client::WebSocketOptions: the settings of one WebSocket a client opens
/// (HttpClient::websocket(), http_client.h).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "weft/codec/tls/tls_context.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/core/clock.h"

namespace weft::client {

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
};

}  // namespace weft::client
