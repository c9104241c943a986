#pragma once
// The HTTP/1.1 server codec: decodes requests from bytes (pipelined, keep-alive, fixed-length and
// chunked bodies, Expect: 100-continue) and encodes responses into one buffer per read batch, so a
// batch of pipelined requests is answered with one write.
//
// Bad input is answered with its status (400, 408, 413, 414, 431, 501, 505, 417) and the connection
// is closed after the answer; nothing else is read from it. Inbound ByteBuf -> HttpRequest;
// outbound HttpResponse -> ByteBuf. Loop thread only; one codec per channel.
//
// A response to HEAD is encoded with the headers, Content-Length included, of the response it is
// given and without its body: build the same response as for GET (the Router sends HEAD to the GET
// route) and the encoder drops the content.

#include <cstdint>
#include <ctime>
#include <string_view>
#include <memory>
#include <vector>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_message.h"
#include "weft/core/event_loop.h"
#include "weft/core/inline_ring.h"
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
  void emit_request(Context& ctx, HttpRequest& request);
  void fail(Context& ctx, int status, std::string_view reason);
  void encode(Context& ctx, HttpResponse& response);
  void write_interim_continue(Context& ctx);
  void arm_request_timer(Context& ctx);
  void cancel_request_timer(Context& ctx);

  // What each request touches first, the parsed head last: a server with many connections finds
  // most of them out of cache, so the hot fields share as few lines as they can.
  State state_ = State::head;
  bool close_after_flush_ = false;
  bool reading_paused_ = false;
  bool lending_ = false;  // a request emitted now borrows its head bytes from in_
  bool in_read_batch_ = false;  // from a read to its read_complete or a flush: batch_date_* hold
  TimerId request_timer_ = 0;
  ByteBuf in_;        // received bytes not yet decoded
  Limits limits_;
  ByteBuf out_;       // responses encoded since the last flush
  std::size_t out_size_hint_ = 2048;  // what the last flush wrote: the next batch's buffer size
  std::string_view batch_date_line_;  // one clock read per read batch, not one per response
  std::time_t batch_date_second_ = 0;
  // Keep-alive flags of the requests decoded but not answered yet, oldest first: inline for the
  // usual few (no heap line of its own per request), on the heap for a client that pipelines deeply.
  InlineRing<std::uint8_t, 16> pending_;
  detail::BodyDecoder body_decoder_;
  HttpRequest request_;  // a request whose body is still arriving
};

}  // namespace weft::http
