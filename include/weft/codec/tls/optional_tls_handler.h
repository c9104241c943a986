#pragma once
/// @file
/// OptionalTlsHandler: TLS and cleartext on one port (Netty's OptionalSslHandler), opt-in. First in
/// the pipeline, it looks at the connection's first bytes: a TLS handshake record (0x16 0x03) puts a
/// TlsHandler on `context` in its place; anything else is cleartext. Either way it first calls
/// `configure(ctx, encrypted)`, which adds the handlers for the decrypted or cleartext bytes after
/// ctx.name() -- the TlsHandler is then put between this handler and them -- and it leaves the
/// pipeline, handing on the bytes it looked at. With HTTP, ALPN behind TLS and the h2c detector in
/// cleartext keep choosing the version:
///
///   ch.pipeline().add_last("tls-or-not", std::make_shared<weft::OptionalTlsHandler>(
///       tls, [](weft::Context& ctx, bool encrypted) {
///         if (encrypted) {
///           ctx.pipeline().add_after(ctx.name(), "alpn", make_alpn_handler());   // h2 or http/1.1
///         } else {
///           ctx.pipeline().add_after(ctx.name(), "detect", std::make_shared<weft::http2::CleartextDetector>());
///         }
///       }));
///   ch.pipeline().add_last("router", router);
///
/// A connection that sends nothing for `decide_timeout`, or whose input ends first, is closed. A
/// `configure` that throws closes the channel (the error travels on as an exception event).
/// Loop thread only; one per channel.

#include <any>
#include <functional>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"

namespace weft {

/// Chooses TLS or cleartext from a connection's first bytes (see the file's description).
class OptionalTlsHandler final : public Handler {
 public:
  /// Adds the handlers for the connection's bytes (decrypted, when `encrypted`) after ctx.name().
  using Configure = std::function<void(Context& ctx, bool encrypted)>;

  /// TLS connections get a TlsHandler(context, options). Thread-safe.
  OptionalTlsHandler(TlsContextPtr context, Configure configure, TlsHandlerOptions options = {},
                     Duration decide_timeout = std::chrono::seconds(10));

  /// ByteBuf in; out whatever the handlers `configure` adds emit (AnyMessage), so that the handlers
  /// for requests may follow it. Outbound: anything in, ByteBuf out.
  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(AnyMessage), &typeid(AnyMessage), &typeid(ByteBuf)};
  }
  /// Loop thread only. Arms the timer once the channel is active.
  void handler_added(Context& ctx) override;
  /// Loop thread only. Stops the timer.
  void handler_removed(Context& ctx) override;
  /// Loop thread only. Arms the timer.
  void channel_active(Context& ctx) override;
  /// Loop thread only. Decides from the first bytes, then hands them over.
  void read_message(Context& ctx, MessageRef message) override;
  /// Loop thread only. Input that ends before the choice closes the channel.
  void user_event(Context& ctx, const std::any& event) override;

 private:
  void arm_timer(Context& ctx);
  void choose(Context& ctx, bool encrypted);

  TlsContextPtr context_;
  Configure configure_;
  TlsHandlerOptions options_;
  Duration decide_timeout_;
  ByteBuf buffered_;
  TimerId timer_ = 0;
  bool chosen_ = false;
};

}  // namespace weft
