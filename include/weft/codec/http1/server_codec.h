#pragma once
// The HTTP/1.1 server codec: decodes requests from bytes (pipelined, keep-alive, fixed-length and
// chunked bodies, Expect: 100-continue) and encodes responses into one buffer per read batch, so a
// batch of pipelined requests is answered with one write.
//
// Bad input is answered with its status (400, 408, 413, 414, 431, 501, 505, 417) and the connection
// is closed after the answer; nothing else is read from it. Inbound ByteBuf -> HttpRequest;
// outbound HttpResponse -> ByteBuf. Loop thread only; one codec per channel.

#include <cstdint>
#include <memory>
#include <vector>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_message.h"
#include "weft/core/event_loop.h"
#include "weft/codec/http1/body_decoder.h"

namespace weft::http {

class ServerCodec final : public Handler {
 public:
  explicit ServerCodec(Limits limits = {});

  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(HttpRequest), &typeid(HttpResponse), &typeid(ByteBuf)};
  }
  void read_message(Context& ctx, MessageRef message) override;
  void write_message(Context& ctx, MessageRef message) override;
  void flush(Context& ctx) override;
  void channel_read_complete(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  // I/O errors (a peer that resets) end the connection quietly; others travel on.
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void handler_removed(Context& ctx) override;

 private:
  enum class State : std::uint8_t { head, body, closed };

  void decode(Context& ctx);
  bool decode_head(Context& ctx);
  bool decode_body(Context& ctx);
  void emit_request(Context& ctx);
  void fail(Context& ctx, int status, std::string_view reason);
  void encode(Context& ctx, HttpResponse& response);
  void write_interim_continue(Context& ctx);
  void arm_request_timer(Context& ctx);
  void cancel_request_timer(Context& ctx);

  Limits limits_;
  State state_ = State::head;
  ByteBuf in_;        // received bytes not yet decoded
  ByteBuf out_;       // responses encoded since the last flush
  HttpRequest request_;
  detail::BodyDecoder body_decoder_;
  // keep-alive of requests decoded but not yet answered, oldest first
  std::vector<std::uint8_t> pending_keep_alive_;
  std::size_t pending_head_ = 0;
  bool close_after_flush_ = false;
  bool reading_paused_ = false;
  TimerId request_timer_ = 0;
};

}  // namespace weft::http
