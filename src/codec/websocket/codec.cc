#include "weft/codec/websocket/codec.h"

#include <cstring>
#include <stdexcept>

#include "weft/channel/events.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/http1/body_decoder.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft::ws {

namespace {

// Below this, a data message's payload is copied behind its header (one buffer, one write); above
// it, the payload goes to the channel by reference.
constexpr std::size_t kCopyPayloadBelow = 1024;

// The bytes a compressed message may take on the wire: deflate grows incompressible data a little
// (stored blocks: 5 bytes in 64 KiB; fixed Huffman codes: at most 9 bits a byte).
std::size_t compressed_limit(std::size_t max_message_size) noexcept {
  const std::size_t extra = max_message_size / 8 + 64;
  return max_message_size > SIZE_MAX - extra ? SIZE_MAX : max_message_size + extra;
}

}  // namespace

Codec::Codec(Role role, Options options, ByteBuf received, std::optional<PerMessageDeflate::Config> deflate) noexcept
    : options_(options),
      role_(role),
      compressed_limit_(deflate ? compressed_limit(options.max_message_size) : options.max_message_size),
      in_(std::move(received)),
      decoder_(role == Role::client ? FrameDecoder::Role::client : FrameDecoder::Role::server, compressed_limit_),
      encoder_(role == Role::client) {
  if (deflate) {
    deflate_.emplace(*deflate);
    decoder_.allow_compressed(true);
  }
}

Codec::Codec(Options options, ByteBuf received) noexcept
    : Codec(Role::server, options, std::move(received), std::nullopt) {}

Codec::Codec(Options options, ByteBuf received, PerMessageDeflate::Config deflate) noexcept
    : Codec(Role::server, options, std::move(received), std::optional<PerMessageDeflate::Config>(deflate)) {}

Codec::~Codec() = default;

void Codec::handler_added(Context& ctx) {
  update_read_suspension(ctx);
  if (options_.ping_interval > Duration::zero()) {
    last_received_ = ctx.loop().turn_time();
    schedule_ping_timer(ctx, options_.ping_interval);
  }
}

void Codec::handler_removed(Context& ctx) {
  stop_close_timer(ctx);
  fail_overflowed_.cancel();
  if (ping_timer_ != 0) ctx.loop().cancel(ping_timer_);
  ping_timer_ = 0;
  reading_.release(ctx.channel());
}

void Codec::feed(Context& ctx) {
  in_read_batch_ = true;
  if (in_.is_readable()) {
    decode(ctx);
  } else {
    in_.release();  // an empty buffer from the handshake: an idle WebSocket holds no receive buffer
  }
  if (wrote_) channel_read_complete(ctx);
  in_read_batch_ = false;
}

void Codec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  ByteBuf& bytes = message.as<ByteBuf>();
  if (state_ == State::closed) return;  // the WebSocket has ended: what still arrives is dropped
  in_read_batch_ = true;
  if (ping_timer_ != 0) {
    last_received_ = ctx.loop().turn_time();
    ping_outstanding_ = false;
  }
  weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
  if (in_.is_read_only()) in_ = in_.copy();  // unmasking writes in place
  decode(ctx);
}

void Codec::decode(Context& ctx) {
  ByteBuf payload;
  bool go_on = true;
  while (go_on && state_ != State::closed) {
    switch (decoder_.next(in_, payload)) {
      case FrameDecoder::Status::need_more: go_on = false; break;
      case FrameDecoder::Status::error:
        fail(ctx, decoder_.error_code(), decoder_.error_reason());
        go_on = false;
        break;
      case FrameDecoder::Status::header: go_on = on_header(ctx); break;
      case FrameDecoder::Status::partial: go_on = on_fresh(ctx); break;
      case FrameDecoder::Status::payload: go_on = on_fresh(ctx) && on_frame(ctx, std::move(payload)); break;
    }
  }
  if (state_ == State::closed) {
    in_.release();
    return;
  }
  http::detail::keep_undecoded(in_);  // earlier frames' slices may share it
}

// What spans frames, checked from the header, before the payload is buffered.
bool Codec::on_header(Context& ctx) {
  const FrameHeader& h = decoder_.header();
  frame_is_data_ = !is_control(h.opcode);
  if (!frame_is_data_) return true;
  if (h.opcode == Opcode::continuation) {
    if (!in_message_) {
      fail(ctx, close_code::protocol_error, "continuation frame without a message");
      return false;
    }
  } else {
    if (in_message_) {
      fail(ctx, close_code::protocol_error, "new message inside a fragmented one");
      return false;
    }
    in_message_ = true;
    message_text_ = h.opcode == Opcode::text;
    message_compressed_ = h.rsv1;  // the decoder allows it only when permessage-deflate was agreed
    if (message_compressed_) deflate_->begin_message();
    fragments_ = 0;
    message_bytes_ = 0;
    utf8_.reset();
  }
  if (++fragments_ > options_.max_fragments) {
    fail(ctx, close_code::too_big, "too many fragments in one message");
    return false;
  }
  // A compressed message's inflated size is checked as it is inflated (inflate()). Streamed
  // fragments: the bound is each frame's, not the message's.
  const std::size_t limit = message_compressed_ ? compressed_limit_ : options_.max_message_size;
  if (options_.stream_fragments) message_bytes_ = 0;
  if (h.length > limit - message_bytes_) {
    fail(ctx, close_code::too_big,
         options_.stream_fragments ? "frame over max_message_size" : "message over max_message_size");
    return false;
  }
  message_bytes_ += static_cast<std::size_t>(h.length);
  return true;
}

// Payload bytes as they arrive: text is validated at once, so it fails at the first bad byte.
bool Codec::on_fresh(Context& ctx) {
  if (!frame_is_data_ || !message_text_ || message_compressed_ || decoder_.fresh().empty()) return true;
  if (utf8_.feed(decoder_.fresh())) return true;
  fail(ctx, close_code::invalid_payload, "text is not UTF-8");
  return false;
}

bool Codec::on_frame(Context& ctx, ByteBuf payload) {
  switch (decoder_.header().opcode) {
    case Opcode::ping:
      if (state_ == State::open) send_control(ctx, Opcode::pong, payload.view());
      return true;
    case Opcode::pong: return true;
    case Opcode::close: return on_peer_close(ctx, payload);
    default: return on_data(ctx, std::move(payload));
  }
}

bool Codec::on_data(Context& ctx, ByteBuf payload) {
  const bool fin = decoder_.header().fin;
  if (options_.stream_fragments) return on_fragment(ctx, std::move(payload), fin);
  if (message_compressed_) {
    // Inflated frame by frame into one buffer; the compressed frame is let go at once.
    const bool inflated = inflate(ctx, payload.view(), fin);
    payload.release();
    if (!inflated) return false;
    if (!fin) return true;
    payload = std::move(assembled_);
  } else if (!fin || assembled_.has_storage()) {
    // A fragmented message: gathered into one buffer (its size is bounded by on_header's checks).
    if (!assembled_.has_storage())
      assembled_ = ctx.allocator().buffer(std::max<std::size_t>(payload.readable_bytes(), 256));
    assembled_.write_bytes(payload);
    payload.release();
    if (!fin) return true;
    payload = std::move(assembled_);
  }
  in_message_ = false;
  if (message_text_ && !utf8_.complete()) {
    fail(ctx, close_code::invalid_payload, "text ends inside a UTF-8 character");
    return false;
  }
  if (state_ != State::open) return true;  // closing: data is no longer delivered
  ctx.fire_read(message_text_ ? Message::text(std::move(payload)) : Message::binary(std::move(payload)));
  return state_ != State::closed;
}

// Options::stream_fragments: the frame is handed on as it is (compressed: once inflated, bounded by
// max_message_size on its own).
bool Codec::on_fragment(Context& ctx, ByteBuf payload, bool fin) {
  if (message_compressed_) {
    assembled_.release();  // each frame inflates into a buffer of its own
    const bool inflated = inflate(ctx, payload.view(), fin);
    payload.release();
    if (!inflated) return false;
    payload = std::move(assembled_);
  }
  if (fin) {
    in_message_ = false;
    if (message_text_ && !utf8_.complete()) {
      fail(ctx, close_code::invalid_payload, "text ends inside a UTF-8 character");
      return false;
    }
  }
  if (state_ != State::open) return true;  // closing: data is no longer delivered
  ctx.fire_read(Message::fragment(message_text_ ? Message::Kind::text : Message::Kind::binary, std::move(payload),
                                  fragments_ == 1, fin));
  return state_ != State::closed;
}

// The next bytes of a compressed message, inflated into assembled_ (at most max_message_size bytes)
// and validated as UTF-8 if text; `last`: the message ends with them.
bool Codec::inflate(Context& ctx, std::string_view compressed, bool last) {
  const std::size_t before = assembled_.readable_bytes();
  using Status = PerMessageDeflate::InflateStatus;
  Status status = deflate_->inflate(compressed, assembled_, options_.max_message_size, ctx.allocator());
  if (status == Status::ok && last)
    status = deflate_->end_message(assembled_, options_.max_message_size, ctx.allocator());
  if (status == Status::too_big) {
    fail(ctx, close_code::too_big, "message over max_message_size once inflated");
    return false;
  }
  if (status == Status::bad_data) {
    fail(ctx, close_code::invalid_payload, "compressed message is not valid DEFLATE data");
    return false;
  }
  if (message_text_ && !utf8_.feed(assembled_.view().substr(before))) {
    fail(ctx, close_code::invalid_payload, "text is not UTF-8");
    return false;
  }
  return true;
}

bool Codec::on_peer_close(Context& ctx, const ByteBuf& payload) {
  std::uint16_t code = close_code::no_status;
  std::string_view reason;
  if (payload.readable_bytes() == 1) {
    fail(ctx, close_code::protocol_error, "close frame with a 1-byte payload");
    return false;
  }
  if (payload.readable_bytes() >= 2) {
    code = payload.get_u16(payload.reader_index());
    reason = payload.view().substr(2);
    if (!is_valid_close_code(code)) {
      fail(ctx, close_code::protocol_error, "invalid close code");
      return false;
    }
    if (!is_valid_utf8(reason)) {
      fail(ctx, close_code::invalid_payload, "close reason is not UTF-8");
      return false;
    }
  }
  if (state_ == State::open) {
    // Echo the peer's code (RFC 6455 5.5.1), none if it sent none.
    if (code == close_code::no_status) {
      send_control(ctx, Opcode::close, {});
    } else {
      send_close(ctx, code, {});
    }
  }
  end(ctx, code, reason);
  return false;
}

void Codec::fail(Context& ctx, std::uint16_t code, std::string_view reason) {
  log(LogLevel::debug, "channel {}: websocket: {}; closing with {}", ctx.channel().id(), reason, code);
  if (state_ == State::open) send_close(ctx, code, {});
  end(ctx, code, reason);
}

// The WebSocket is over: the next handler learns how, and the connection ends gracefully once what
// was written has left (the server closes the TCP connection first, RFC 6455 7.1.1; a client
// waits for that, close_timeout at most).
void Codec::end(Context& ctx, std::uint16_t code, std::string_view reason) {
  if (state_ == State::closed) return;
  state_ = State::closed;
  stop_close_timer(ctx);
  reading_.release(ctx.channel());
  in_message_ = false;
  assembled_.release();
  wrote_ = false;
  ctx.flush();
  graceful_ = true;
  if (ping_timer_ != 0) ctx.loop().cancel(ping_timer_);
  ping_timer_ = 0;
  // The application hears how the WebSocket ended before the connection closes: a channel that
  // closes at once (its input had ended, or the shutdown failed) would otherwise tell it 1006 first.
  if (!ended_) {
    ended_ = true;
    ctx.fire_read(Message::close(code, reason));
  }
  if (!ctx.channel().is_open()) return;
  if (role_ == Role::client) {
    // RFC 6455 7.1.1: the server closes TCP first; a client that waits in vain closes it itself.
    close_timer_ = ctx.loop().schedule(options_.close_timeout, [this, &ctx] {
      close_timer_ = 0;
      log(LogLevel::debug, "channel {}: websocket: the server kept TCP open after the close; closing",
          ctx.channel().id());
      ctx.close();
    });
  } else {
    ctx.channel().close_gracefully(options_.close_timeout, options_.close_timeout);
  }
}

void Codec::send_control(Context& ctx, Opcode opcode, std::string_view payload) {
  ByteBuf out = ctx.allocator().buffer(2 + payload.size());
  encoder_.encode(out, opcode, true, payload);
  ctx.write(std::move(out));
  wrote_ = true;
}

void Codec::send_close(Context& ctx, std::uint16_t code, std::string_view reason) {
  char payload[125];
  payload[0] = static_cast<char>(code >> 8);
  payload[1] = static_cast<char>(code & 0xFF);
  const std::size_t n = std::min<std::size_t>(reason.size(), 123);
  if (n != 0) std::memcpy(payload + 2, reason.data(), n);
  send_control(ctx, Opcode::close, std::string_view(payload, 2 + n));
}

void Codec::write_message(Context& ctx, MessageRef message) {
  if (!message.is<Message>()) throw_type_mismatch(ctx, "outbound", typeid(Message), message.type());
  encode(ctx, message.as<Message>());
}

void Codec::encode(Context& ctx, Message& message) {
  if (state_ != State::open) {
    log(LogLevel::debug, "channel {}: websocket: a message written after the close; dropped", ctx.channel().id());
    return;
  }
  if (message.is_close()) {
    const std::uint16_t code = message.close_code();
    if (!is_valid_close_code(code)) throw std::invalid_argument("ws::Message::close: not a close code one may send");
    if (message.reason().size() > 123) throw std::invalid_argument("ws::Message::close: reason over 123 bytes");
    send_close(ctx, code, message.reason());
    state_ = State::closing;
    start_close_timer(ctx);
    return;
  }
  Opcode opcode = message.is_text() ? Opcode::text : Opcode::binary;
  const bool fin = message.is_last();
  if (message.is_fragment() || sending_fragments_) {
    // A message written as fragments: a first, then continuations; never compressed.
    if (message.is_first() == sending_fragments_)
      throw std::logic_error(sending_fragments_ ? "ws::Message: a new message while a fragmented one is being written"
                                                : "ws::Message::fragment: a continuation without a first fragment");
    if (!message.is_first()) opcode = Opcode::continuation;
    sending_fragments_ = !fin;
  }
  ByteBuf& payload = message.data();
  const std::size_t n = payload.readable_bytes();
  if (overflow_ctx_ != nullptr) return;  // over max_queued_bytes: failing on the next turn
  if (n > options_.max_queued_bytes - std::min(options_.max_queued_bytes, ctx.channel().pending_write_bytes()))
      [[unlikely]] {
    // The message is dropped and the connection fails, on the loop's next turn: the writer may be
    // another channel's handler, which must not run this one's events nested in its own.
    overflow_ctx_ = &ctx;
    if (!fail_overflowed_.schedule(ctx.loop())) fail_overflowed();
    return;
  }
  if (deflate_ && !message.is_fragment() && deflate_->compresses(n)) {
    // Compressed into one buffer, the header in front; sent as it is if it would not shrink.
    ByteBuf frame = deflate_->deflate(payload.view(), kMaxHeaderSize, ctx.allocator());
    if (frame.has_storage()) {
      encoder_.prepend_header(frame, opcode, true, true);
      ctx.write(std::move(frame));
      return;
    }
  }
  if (n < kCopyPayloadBelow || encoder_.masked()) {
    // A client's payload is masked as it is copied behind the header (the caller's bytes stay as
    // they are).
    ByteBuf out = ctx.allocator().buffer(kMaxHeaderSize + n);
    encoder_.encode(out, opcode, fin, payload.view());
    ctx.write(std::move(out));
    return;
  }
  ByteBuf header = ctx.allocator().buffer(10);
  encoder_.encode_header(header, opcode, fin, n);
  ctx.write(std::move(header));
  ctx.write(std::move(payload));
}

void Codec::fail_overflowed() {
  if (state_ == State::open) fail(*overflow_ctx_, close_code::policy, "the peer is not reading: over max_queued_bytes");
}

void Codec::start_close_timer(Context& ctx) {
  close_timer_ = ctx.loop().schedule(options_.close_timeout, [this, &ctx] {
    close_timer_ = 0;
    log(LogLevel::debug, "channel {}: websocket: no close from the peer in time; closing", ctx.channel().id());
    state_ = State::closed;
    ctx.close();
  });
}

void Codec::schedule_ping_timer(Context& ctx, Duration after) {
  ping_timer_ = ctx.loop().schedule(after, [this, &ctx] {
    ping_timer_ = 0;
    on_ping_timer(ctx);
  });
}

// Idle keepalive (Options::ping_interval): a ping once nothing has arrived for ping_interval; the
// connection is cut when nothing arrives within ping_timeout after it.
void Codec::on_ping_timer(Context& ctx) {
  if (state_ == State::closed) return;
  const TimePoint now = ctx.loop().turn_time();
  if (ctx.channel().read_suspensions() > 0) {
    // Not reading (backpressure): the peer's answers would wait unread, so silence proves nothing.
    ping_outstanding_ = false;
    last_received_ = now;
    schedule_ping_timer(ctx, options_.ping_interval);
    return;
  }
  if (ping_outstanding_) {
    cut_for_silence(ctx);
    return;
  }
  const Duration idle = now - last_received_;
  if (idle < options_.ping_interval) {
    schedule_ping_timer(ctx, options_.ping_interval - idle);
    return;
  }
  send_control(ctx, Opcode::ping, {});
  wrote_ = false;
  ctx.flush();
  ping_outstanding_ = true;
  schedule_ping_timer(ctx, options_.ping_timeout);
}

void Codec::cut_for_silence(Context& ctx) {
  log(LogLevel::debug, "channel {}: websocket: no answer to a ping within ping_timeout; closing", ctx.channel().id());
  stop_close_timer(ctx);
  state_ = State::closed;
  reading_.release(ctx.channel());
  in_.release();
  assembled_.release();
  if (!ended_) {
    ended_ = true;
    ctx.fire_read(Message::close(close_code::abnormal, "no answer to a ping within ping_timeout"));
  }
  ctx.close();
}

void Codec::stop_close_timer(Context& ctx) {
  if (close_timer_ == 0) return;
  ctx.loop().cancel(close_timer_);
  close_timer_ = 0;
}

void Codec::channel_read_complete(Context& ctx) {
  in_read_batch_ = false;
  deferred_flushes_ = 0;
  if (wrote_) {
    wrote_ = false;
    ctx.flush();
  }
  ctx.fire_read_complete();
}

void Codec::flush(Context& ctx) {
  if (in_read_batch_ && state_ != State::closed && ++deferred_flushes_ < kFlushesPerWrite) {
    wrote_ = true;
    return;
  }
  deferred_flushes_ = 0;
  wrote_ = false;
  ctx.flush();
}

void Codec::channel_inactive(Context& ctx) {
  in_read_batch_ = false;
  stop_close_timer(ctx);
  if (ping_timer_ != 0) ctx.loop().cancel(ping_timer_);
  ping_timer_ = 0;
  in_.release();
  assembled_.release();
  if (!ended_) {
    ended_ = true;
    ctx.fire_read(Message::close(close_code::abnormal, {}));
  }
  state_ = State::closed;
  ctx.fire_channel_inactive();
}

void Codec::writability_changed(Context& ctx) {
  update_read_suspension(ctx);
  ctx.fire_writability_changed();
}

void Codec::update_read_suspension(Context& ctx) {
  if (state_ == State::closed) return;
  if (ctx.channel().is_writable()) {
    reading_.release(ctx.channel());
  } else {
    reading_.hold(ctx.channel());
  }
}

void Codec::user_event(Context& ctx, const std::any& event) {
  if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    if (state_ != State::closed) {
      log(LogLevel::debug, "channel {}: websocket: the peer ended its input without a close", ctx.channel().id());
      end(ctx, close_code::abnormal, {});
    }
    if (role_ == Role::client) ctx.close();  // the server's FIN after the close (RFC 6455 7.1.1)
  }
  ctx.fire_user_event(event);
}

void Codec::close(Context& ctx, Promise<void> promise) {
  if (state_ == State::open && ctx.channel().is_active()) {
    send_close(ctx, close_code::normal, {});
    end(ctx, close_code::normal, {});
  }
  // Our close is out: the peer's close (or close_timeout) ends the connection, not this.
  const bool ending = graceful_ || state_ == State::closing;
  if (!ending || !ctx.channel().is_open()) {
    ctx.close(std::move(promise));
    return;
  }
  ctx.channel().close_future().add_listener([promise](const Future<void>&) mutable { promise.set_value(); });
}

void Codec::exception_caught(Context& ctx, std::exception_ptr error) { close_on_io_error(ctx, std::move(error)); }

}  // namespace weft::ws
