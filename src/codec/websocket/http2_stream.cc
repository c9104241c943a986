#include "http2_stream.h"

#include "weft/codec/http1/http_message.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/message.h"
#include "weft/core/log.h"

namespace weft::ws::detail {

void Http2StreamBridge::channel_active(Context& ctx) {
  http::HttpResponse head(200);
  if (!subprotocol_.empty()) head.header("sec-websocket-protocol", subprotocol_);
  if (!extensions_.empty()) head.header("sec-websocket-extensions", extensions_);
  ctx.write(http2::ResponseHeaders{std::move(head), false});
  ctx.flush();
  ctx.fire_channel_active();
  const std::function<void(Channel&)> start = std::move(start_);
  start_ = nullptr;
  if (start) start(ctx.channel());
}

void Http2StreamBridge::channel_read(Context& ctx, http2::StreamMessage&& message) {
  // (A tunnel's channel reads no StreamHeaders; trailers carry nothing for a WebSocket.)
  auto* data = std::get_if<http2::StreamData>(&message);
  if (data != nullptr && data->data.is_readable()) ctx.fire_read(std::move(data->data));
}

void Http2StreamBridge::write(Context& ctx, ByteBuf&& bytes) { ctx.write(http2::StreamData{std::move(bytes), false}); }

void Http2StreamBridge::user_event(Context& ctx, const std::any& event) {
  ctx.fire_user_event(event);
  if (std::any_cast<http2::ConnectionDrainingEvent>(&event) != nullptr && ctx.channel().is_open()) {
    // The connection is going: the WebSocket's close handshake, then the stream's end.
    ctx.channel().pipeline().write_and_flush(Message::close(close_code::going_away, "server shutting down"));
  }
}

void Http2StreamBridge::exception_caught(Context& ctx, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const http2::StreamResetError& reset) {
    log(LogLevel::debug, "channel {}: websocket over HTTP/2: the stream was reset (error code {})", ctx.channel().id(),
        reset.error_code());
    return;  // the channel closes next: the handler gets 1006
  } catch (...) {
  }
  ctx.fire_exception(std::move(error));
}

}  // namespace weft::ws::detail
