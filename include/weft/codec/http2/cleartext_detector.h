#pragma once
/// @file
/// CleartextDetector: HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on one port. First in the
/// pipeline, before the application's handlers for http::HttpRequest:
///
///   ch.pipeline().add_last("detect", std::make_shared<weft::http2::CleartextDetector>());
///   ch.pipeline().add_last("router", router);   // serves both versions
///
/// It looks at the first bytes of the connection: the HTTP/2 connection preface
/// ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") makes it put an http2::ServerCodec (named "http2") in its
/// place. Anything else is HTTP/1.1, and the head of the first request decides: one that asks to
/// switch (`Upgrade: h2c` with `HTTP2-Settings`, RFC 7540 3.2, and no body) is answered
/// `101 Switching Protocols` and becomes stream 1 of an http2::ServerCodec; any other goes, with
/// the bytes after it, to an http::ServerCodec (named "http1"), which parses it again. The detector
/// then leaves the pipeline. Bytes that match the preface so far, or an HTTP/1.1 head not yet
/// whole, wait for the rest (the head is bounded by http::Limits: past them the HTTP/1.1 codec
/// answers the error). A connection that sends nothing for http::Limits::idle_timeout is closed, as
/// is one whose input ends before a protocol was chosen.
///
/// Not for TLS: behind a TLS handler the protocol is chosen by ALPN ("h2" or "http/1.1").
/// Loop thread only; one per channel.

#include <any>
#include <cstddef>
#include <exception>
#include <string>
#include <utility>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_types.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/codec/http2/settings.h"
#include "weft/core/event_loop.h"

namespace weft::http2 {

/// Chooses HTTP/1.1 or HTTP/2 from a connection's first bytes (see the file's description). One
/// per channel; loop thread only.
class CleartextDetector final : public Handler {
 public:
  /// The codecs it may put in its place are made with `http1_limits` and `http2_settings`.
  explicit CleartextDetector(http::Limits http1_limits = {}, Settings http2_settings = {}) noexcept
      : http1_limits_(http1_limits), http2_settings_(std::move(http2_settings)) {}

  /// ByteBuf in; out, whatever the codec it chooses emits (http::HttpRequest): AnyMessage, so that
  /// the handlers for requests may follow it. Outbound: anything in, ByteBuf out.
  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(AnyMessage), &typeid(AnyMessage), &typeid(ByteBuf)};
  }
  /// Loop thread only. Arms the idle timer once the channel is active.
  void handler_added(Context& ctx) override;
  /// Loop thread only. Stops the timer.
  void handler_removed(Context& ctx) override;
  /// Loop thread only. Arms the idle timer.
  void channel_active(Context& ctx) override;
  /// Loop thread only. Buffers the bytes until they decide the protocol, then hands over.
  void read_message(Context& ctx, MessageRef message) override;
  /// Loop thread only. Input that ends before a protocol was chosen closes the channel.
  void user_event(Context& ctx, const std::any& event) override;

 private:
  void choose(Context& ctx, bool http2);
  void upgrade(Context& ctx, const std::string& settings, const http::RequestHead& head, std::size_t head_size);
  void arm_idle_timer(Context& ctx);

  http::Limits http1_limits_;
  Settings http2_settings_;
  ByteBuf buffered_;
  TimerId idle_timer_ = 0;
  bool chosen_ = false;
};

}  // namespace weft::http2
