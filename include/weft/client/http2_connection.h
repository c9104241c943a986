#pragma once
/// @file
/// client::Http2Connection: a connection to an HTTP/2 server that multiplexes requests. Opening it
/// (TCP, TLS with ALPN h2 or cleartext with prior knowledge, the server's first SETTINGS) is the
/// client layer's job; the protocol is the codec's (http2::ClientCodec, weft/codec/http2/client_codec.h:
/// its streams, limits, GOAWAY and keepalive).
///
///   auto client = co_await weft::client::Http2Connection::connect(group, address);   // h2c, prior knowledge
///   auto secure = co_await weft::client::Http2Connection::connect(group, address,    // h2 by ALPN over TLS
///                     {.tls = weft::TlsContext::client().application_protocols({"h2"}).build(),
///                      .server_name = "example.com"});
///   weft::http::HttpClientResponse r = co_await client->request(weft::http::HttpClientRequest("GET", "/json"));
///
/// Streamed requests (open(); weft/codec/http2/client_stream.h) send their body in chunks with
/// backpressure and give the response's head, its DATA as it comes and its trailers, for coroutines
/// on the connection's loop; gRPC's client (weft/grpc/client.h) is built on them.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "weft/channel/channel.h"
#include "weft/channel/socket_address.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"

namespace weft::client {

/// A connection to an HTTP/2 server that multiplexes requests (see the file's description).
/// Thread-safe unless a method says otherwise.
class Http2Connection {
 public:
  /// How to reach the server.
  struct Options {
    /// TLS with ALPN "h2" (the context should offer it); null: cleartext with prior knowledge.
    TlsContextPtr tls;
    /// TLS: the name sent as SNI and checked against the certificate.
    std::string server_name;
    /// The connection's settings (see http2::ClientSettings).
    http2::ClientSettings settings;
    /// A connection not made by then fails with ConnectTimeoutError; unset: the channel's default (30 s).
    std::optional<Duration> connect_timeout;
  };

  /// Connects to `address` on a loop of `group`; completes once the connection is ready: the
  /// server's SETTINGS (its concurrency limit) have arrived, and over TLS the handshake chose h2
  /// (another protocol fails it with Error).
  static Future<std::shared_ptr<Http2Connection>> connect(EventLoopGroup& group, const SocketAddress& address,
                                                          Options options = {});
  /// Connects to `address` on `loop` (Bootstrap::group(EventLoop&): on the blocking transport, a
  /// loop that serves no other channel); as connect() otherwise.
  static Future<std::shared_ptr<Http2Connection>> connect(EventLoop& loop, const SocketAddress& address,
                                                          Options options = {});

  /// Sends `request`; the future completes with its response (see http2::ClientCodec::request).
  Future<http::HttpClientResponse> request(http::HttpClientRequest request);
  /// Loop thread only (channel().loop()). Opens a streamed request (see http2::ClientCodec::open).
  http2::ClientStream open(std::string_view method, std::string_view path, std::span<const http::Header> headers) {
    return codec_->open(method, path, headers);
  }
  /// Thread-safe. The connection's event loop (where open() and its streams are used).
  EventLoop& loop() const noexcept { return channel_->loop(); }
  /// Closes the connection; requests still waiting fail with ChannelClosedError.
  Future<void> close() { return channel_->close(); }
  /// The connection's channel.
  Channel& channel() const noexcept { return *channel_; }
  /// The connection's codec (loop thread only, as its methods say); it outlives the channel's pipeline.
  http2::ClientCodec& codec() const noexcept { return *codec_; }

  /// For connect(); use connect().
  Http2Connection(ChannelPtr channel, std::shared_ptr<http2::ClientCodec> codec) noexcept
      : channel_(std::move(channel)), codec_(std::move(codec)) {}

 private:
  ChannelPtr channel_;
  std::shared_ptr<http2::ClientCodec> codec_;
};

}  // namespace weft::client
