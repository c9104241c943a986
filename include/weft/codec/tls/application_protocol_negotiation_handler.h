#pragma once
/// @file
/// ApplicationProtocolNegotiationHandler: completes a pipeline from the protocol TLS negotiated
/// (ALPN), then leaves it. Put it right after the TlsHandler:
///
///   ch.pipeline().add_last("tls", std::make_shared<weft::TlsHandler>(context));
///   ch.pipeline().add_last("alpn", std::make_shared<weft::ApplicationProtocolNegotiationHandler>(
///       "http/1.1", [router](weft::Context& ctx, std::string_view protocol) {
///         if (protocol != "http/1.1") throw std::runtime_error("unsupported protocol");
///         ctx.pipeline().add_after(ctx.name(), "http", std::make_shared<weft::http::ServerCodec>());
///         ctx.pipeline().add_after("http", "router", router);
///       }));
///
/// On TlsHandshakeCompleted it calls `configure` with the protocol (`fallback` when the peer
/// offered none) and removes itself; the TlsHandler passes decrypted bytes on only after that
/// event, so the handlers `configure` adds see all of them. `configure` adds its handlers after
/// this one (ctx.name()). A `configure` that throws, and a failed handshake, close the channel (the
/// error travels on as an exception event). The handlers for what the added codec emits may be
/// in the pipeline already, after this one (see message_types()). Loop thread only.

#include <any>
#include <functional>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"

namespace weft {

/// Completes the pipeline from the ALPN protocol, then removes itself (see the file's description).
class ApplicationProtocolNegotiationHandler final : public InboundHandler<ByteBuf> {
 public:
  /// What the pipeline becomes for `protocol`: adds handlers after ctx.name().
  using Configure = std::function<void(Context& ctx, std::string_view protocol)>;

  /// Calls `configure` with the negotiated protocol, or `fallback` when none was negotiated.
  ApplicationProtocolNegotiationHandler(std::string fallback, Configure configure);

  /// ByteBuf in; out, whatever the handlers `configure` adds emit (AnyMessage), so the handlers for
  /// those messages (a Router for http::HttpRequest) may follow it before the protocol is known.
  /// Outbound: anything in, ByteBuf out.
  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(AnyMessage), &typeid(AnyMessage), &typeid(ByteBuf)};
  }
  /// Bytes before the handshake's end do not happen (TlsHandler holds them); passed on if they do.
  void channel_read(Context& ctx, ByteBuf&& message) override;
  /// On TlsHandshakeCompleted: configures the pipeline and leaves it; every event is passed on.
  void user_event(Context& ctx, const std::any& event) override;

 private:
  std::string fallback_;
  Configure configure_;
  bool done_ = false;
};

}  // namespace weft
