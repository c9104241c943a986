#include "weft/codec/tls/application_protocol_negotiation_handler.h"

#include <stdexcept>
#include <utility>

#include "weft/channel/pipeline.h"
#include "weft/codec/tls/tls_events.h"

namespace weft {

ApplicationProtocolNegotiationHandler::ApplicationProtocolNegotiationHandler(std::string fallback, Configure configure)
    : fallback_(std::move(fallback)), configure_(std::move(configure)) {
  if (!configure_) throw std::invalid_argument("ApplicationProtocolNegotiationHandler: no configure function");
}

void ApplicationProtocolNegotiationHandler::channel_read(Context& ctx, ByteBuf&& message) {
  ctx.fire_read(std::move(message));
}

void ApplicationProtocolNegotiationHandler::user_event(Context& ctx, const std::any& event) {
  const auto* handshake = std::any_cast<TlsHandshakeCompleted>(&event);
  if (handshake == nullptr || done_) {
    ctx.fire_user_event(event);
    return;
  }
  done_ = true;
  if (handshake->success()) {
    try {
      configure_(ctx, handshake->protocol.empty() ? std::string_view(fallback_) : std::string_view(handshake->protocol));
    } catch (...) {
      ctx.fire_exception(std::current_exception());
      ctx.close();
      return;
    }
  }
  ctx.fire_user_event(event);  // the handlers just added see it too
  if (!ctx.is_removed()) ctx.pipeline().remove(*this);
}

}  // namespace weft
