#pragma once
// WebSocket over an HTTP/2 stream (RFC 8441): the handler that sits first in the stream's channel
// (http2::StreamChannel) and makes it look like a connection's bytes to ws::Codec. It answers the
// extended CONNECT with :status 200 once the channel is active, then adds the codec and the
// application's handler after itself (as the HTTP/1.1 upgrade puts them in HTTP's place).
//
// In: StreamData's bytes on as ByteBuf (the stream's DATA frames carry the WebSocket's frames; its
// end reaches the codec as ChannelInputShutdownEvent from the channel). Out: ByteBuf as StreamData.
// The codec's graceful end (close_gracefully) ends the stream with END_STREAM (StreamChannel's
// shutdown_output), and the client's END_STREAM then closes it: no RST_STREAM. A client's
// RST_STREAM (StreamResetError) is swallowed here: the channel closes next and the codec hands the
// handler a close with 1006. The connection's graceful end (ConnectionDrainingEvent: GOAWAY sent)
// starts the WebSocket's close handshake with 1001 (going away).

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http2/stream_channel.h"

namespace weft::ws::detail {

// Loop thread only; one per stream.
class Http2StreamBridge final : public DuplexHandler<http2::StreamMessage, ByteBuf, ByteBuf, http2::StreamData> {
 public:
  // `subprotocol` and `extensions`: the 200's Sec-WebSocket-Protocol and -Extensions (empty: none).
  // `start(channel)` adds the codec and the handler at the pipeline's end.
  Http2StreamBridge(std::string subprotocol, std::string extensions, std::function<void(Channel&)> start) noexcept
      : subprotocol_(std::move(subprotocol)), extensions_(std::move(extensions)), start_(std::move(start)) {}

  void channel_active(Context& ctx) override;
  void channel_read(Context& ctx, http2::StreamMessage&& message) override;
  void write(Context& ctx, ByteBuf&& bytes) override;
  void user_event(Context& ctx, const std::any& event) override;
  void exception_caught(Context& ctx, std::exception_ptr error) override;

 private:
  std::string subprotocol_;
  std::string extensions_;
  std::function<void(Channel&)> start_;
};

}  // namespace weft::ws::detail
