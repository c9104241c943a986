// ServerCodec's streamed bodies: a request body handed on as it arrives (BodySource, read with a
// BodyReader) and an answer's body produced chunk by chunk (BodySink, written with a BodyWriter).

#include <charconv>
#include <utility>

#include "body_sink.h"
#include "body_source.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/core/log.h"

namespace weft::http {

namespace {

constexpr std::uint8_t kStreamKeepAlive = 1, kStreamAnswered = 8;  // ServerCodec's pending flags
constexpr std::string_view kStreamContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

// ---- the request's body

// The first Router after the codec with StreamFn routes decides which bodies stream.
void ServerCodec::find_stream_body_test(Context& ctx) {
  stream_body_test_found_ = true;
  Pipeline& pipeline = ctx.pipeline();
  for (const std::string& name : pipeline.names()) {
    auto* router = dynamic_cast<Router*>(pipeline.get(name));
    if (router == nullptr || !router->has_streamed_routes()) continue;
    stream_body_test_ = [router = std::static_pointer_cast<const Router>(router->shared_from_this())](
                            std::string_view method, std::string_view path) {
      return router->streams_body(method, path);
    };
    return;
  }
}

// The head has arrived: the request is handed on now, its body following through `source`.
bool ServerCodec::start_body_stream(Context& ctx, HttpRequest& request, bool send_continue) {
  const RequestHead& head = request.head_;
  const std::optional<std::uint64_t> length =
      head.chunked ? std::nullopt : std::optional<std::uint64_t>(head.content_length.value_or(0));
  auto source = detail::make_body_source(ctx.loop(), length);
  source->attach(*this, front_sequence_ + pending_.size(), send_continue);
  if (length) {
    body_decoder_.start_fixed(*length);
  } else {
    body_decoder_.start_chunked();
  }
  body_in_ = source;
  body_keep_alive_ = head.keep_alive;
  discarded_ = 0;
  request.body_stream_ = std::move(source);
  emit_request(ctx, request, true);
  return true;
}

// One step of a streamed body: a piece handed to the reader (or dropped, once it let go), the end,
// or a stop (the reader is full, more bytes are needed, bad framing).
bool ServerCodec::decode_body_stream(Context& ctx) {
  detail::BodySource& source = *body_in_;
  const bool dropping = source.abandoned() || source.ended();
  if (!dropping && source.full()) {
    body_reading_.hold(ctx.channel());
    return false;
  }
  ByteBuf piece;
  const detail::BodyDecoder::Result r = body_decoder_.decode_piece(in_, piece, limits_);
  switch (r.status) {
    case detail::BodyDecoder::Status::error:
      fail(ctx, r.http_status, r.reason);  // fails the reader too
      return false;
    case detail::BodyDecoder::Status::need_more: return false;
    case detail::BodyDecoder::Status::piece:
      if (dropping) {
        discarded_ += piece.readable_bytes();
        if (discarded_ > kStreamBodyDiscardBound) {
          log(LogLevel::debug, "channel {}: an unread request body goes past {} bytes; closing after the answer",
              ctx.channel().id(), kStreamBodyDiscardBound);
          end_after_owed(ctx);
          return false;
        }
      } else {
        source.push(std::move(piece));
        if (source.ended()) {  // past the route's limit: the rest is not read
          end_after_owed(ctx);
          return false;
        }
      }
      // The last piece of a fixed-length body ends it now: no further byte may come to say so.
      if (!body_decoder_.finished()) return true;
      break;
    case detail::BodyDecoder::Status::done: break;
  }
  body_in_->end(body_decoder_.trailer_block());
  body_in_->detach();
  body_in_.reset();
  body_reading_.release(ctx.channel());
  request_started_ = {};
  state_ = body_keep_alive_ ? State::head : State::closed;
  return true;
}

// The body will not arrive whole: its reader gets `error`.
void ServerCodec::end_body_stream(std::exception_ptr error) {
  std::shared_ptr<detail::BodySource> source = std::exchange(body_in_, nullptr);
  source->fail(std::move(error));
  source->detach();
  if (ctx_ != nullptr) body_reading_.release(ctx_->channel());
}

// The reader has taken chunks down to half the bound: reading goes on.
void ServerCodec::body_taken(detail::BodySource& source) {
  if (&source != body_in_.get() || !body_reading_.held() || ctx_ == nullptr) return;
  Context& ctx = *ctx_;
  body_reading_.release(ctx.channel());
  request_started_ = ctx.loop().now();  // bytes are owed again
  want_deadline(ctx, request_started_ + limits_.request_timeout);
  if (in_.is_readable()) resume_decoding_later(ctx);
}

// The reader asks for the body for the first time: the client that waits for 100 Continue gets it,
// in its turn.
void ServerCodec::body_wanted(detail::BodySource& source, std::uint64_t sequence) {
  if (&source != body_in_.get() || finished_ || ctx_ == nullptr || sequence < front_sequence_) return;
  const std::uint64_t index = sequence - front_sequence_;
  if (index >= pending_.size() || (pending_[static_cast<std::size_t>(index)] & kStreamAnswered)) return;
  Context& ctx = *ctx_;
  if (index == 0) {
    if (!out_.has_storage()) out_ = ctx.allocator().buffer(64);
    out_.write_bytes(kStreamContinue.data(), kStreamContinue.size());
    flush(ctx);
    return;
  }
  early_.push_back({sequence, ByteBuf::copy_of(kStreamContinue), ByteBuf(), false, false, FileRegion(), nullptr});
  early_bytes_ += kStreamContinue.size();
}

// The reader let go before the end: the rest is read and dropped up to kStreamBodyDiscardBound;
// past that (or when the client still waits for 100 Continue) the connection ends after the answer.
void ServerCodec::body_abandoned(detail::BodySource& source) {
  if (&source != body_in_.get() || ctx_ == nullptr) return;
  Context& ctx = *ctx_;
  const std::optional<std::uint64_t> length = source.content_length();
  const bool too_long = length && *length - source.arrived_bytes() > kStreamBodyDiscardBound;
  if (source.continue_owed() || too_long || source.failed()) {
    end_after_owed(ctx);
    return;
  }
  body_reading_.release(ctx.channel());
  if (in_.is_readable()) resume_decoding_later(ctx);
}

// Nothing more is read: the connection ends once the answers owed have gone, the last of them with
// Connection: close.
void ServerCodec::end_after_owed(Context& ctx) {
  if (body_in_ != nullptr) {
    body_in_->detach();
    body_in_.reset();
  }
  body_reading_.release(ctx.channel());
  state_ = State::closed;
  request_started_ = {};
  if (!lending_) in_.release();  // else decode() releases it once the handler has returned
  if (finished_) return;
  if (!pending_.empty()) {
    const std::size_t last = pending_.size() - 1;
    pending_[last] = static_cast<std::uint8_t>(pending_[last] & ~kStreamKeepAlive);
    if (pending_[last] & kStreamAnswered) {
      const std::uint64_t sequence = front_sequence_ + last;
      for (EarlyAnswer& early : early_) {
        if (early.sequence == sequence && early.final && !early.last) make_last(ctx, early);
      }
    }
    return;  // a streamed answer in progress for it ends the connection when it finishes
  }
  finished_ = true;
  close_after_flush_ = true;
  flush(ctx);
}

// ---- the answer's body

// The answer's turn has come (its head is in out_): the head leaves and the producer starts.
void ServerCodec::start_stream(Context& ctx, std::shared_ptr<detail::BodySink> sink) {
  body_out_ = sink;
  flush(ctx);
  std::shared_ptr<const BodyProducer> producer = std::move(sink->producer_);
  detail::start_producer(ctx.loop(), std::move(producer), sink, [sink](bool finished) {
    if (sink->codec_ != nullptr) sink->codec_->stream_ended(*sink, finished);
  });
}

// A chunk of the streamed answer, framed, into the channel; whether the channel can take more.
bool ServerCodec::stream_write(ByteBuf chunk) {
  Context& ctx = *ctx_;
  if (out_.is_readable()) ctx.write(std::move(out_));
  if (body_out_->chunked_) {
    ByteBuf line = ctx.allocator().buffer(24);
    char text[24];
    char* p = text;
    if (body_out_->chunk_written_) {
      *p++ = '\r';
      *p++ = '\n';
    }
    p = std::to_chars(p, text + 20, chunk.readable_bytes(), 16).ptr;
    *p++ = '\r';
    *p++ = '\n';
    line.write_bytes(text, static_cast<std::size_t>(p - text));
    ctx.write(std::move(line));
    body_out_->chunk_written_ = true;
  }
  ctx.write(std::move(chunk));
  ctx.flush();
  update_read_suspension(ctx);
  return ctx.channel().is_writable();
}

bool ServerCodec::stream_writable() const noexcept { return ctx_ != nullptr && ctx_->channel().is_writable(); }

// finish(): the last chunk and the trailers, then the answer is done and those behind it may leave.
void ServerCodec::stream_finish(std::string_view trailer_block) {
  Context& ctx = *ctx_;
  std::shared_ptr<detail::BodySink> sink = std::exchange(body_out_, nullptr);
  sink->codec_ = nullptr;
  if (sink->chunked_) {
    ByteBuf end = ctx.allocator().buffer(trailer_block.size() + 8);
    if (sink->chunk_written_) end.write_bytes("\r\n", 2);
    end.write_bytes("0\r\n", 3);
    end.write_bytes(trailer_block.data(), trailer_block.size());
    end.write_bytes("\r\n", 2);
    if (out_.is_readable()) ctx.write(std::move(out_));
    ctx.write(std::move(end));
  }
  const std::uint8_t flags = pending_.pop_front();
  ++front_sequence_;
  answer_sent(ctx, !(flags & kStreamKeepAlive));
  if (!early_.empty()) send_early_answers(ctx);
  flush(ctx);
}

// The producer ended without finishing its body: the client must not take what it got for the
// whole answer, so the connection closes without the last chunk.
void ServerCodec::stream_ended(detail::BodySink& sink, bool finished) {
  if (&sink != body_out_.get() || finished || ctx_ == nullptr) return;
  log(LogLevel::debug, "channel {}: a streamed answer ended without finish(); closing", ctx_->channel().id());
  std::exchange(body_out_, nullptr)->detach();
  finished_ = true;
  ctx_->close();
}

}  // namespace weft::http
