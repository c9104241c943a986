#pragma once
/// @file
/// ByteToMessageDecoder<Out>: the base of decoders that turn a byte stream into messages (frames).
///
/// Bytes that arrive are kept in a cumulation buffer until decode() can make a message of them:
///   - a read that arrives while nothing is buffered becomes the cumulation as it is (no copy), so a
///     frame that arrives whole is decoded straight from the transport's buffer (frame decoders emit
///     slices of it: zero copy);
///   - only bytes left over from a previous read are appended to (copied), and the cumulation is
///     released as soon as it is fully consumed.
/// decode() is called until it neither emits a message nor consumes bytes. Each message is fired as
/// soon as it is decoded. A decode() that throws has its error fired as an exception event; decoding
/// continues if it consumed bytes (the bad frame was discarded), else stops until more bytes arrive.
///
/// End of input (channel_inactive, or ChannelInputShutdownEvent with half closure): decode_last()
/// runs until no progress; bytes still left then are a partial frame: they are discarded and a
/// TruncatedFrameError is fired.
///
/// Removal: when the decoder is removed from the pipeline (also from inside a downstream handler
/// while a message it emitted is being handled), the bytes it still buffers are fired on to the next
/// handler as one ByteBuf, followed by a read-complete: a protocol switch loses no byte.
///
/// Loop thread only, like every handler.

#include <any>
#include <cstddef>
#include <exception>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/events.h"
#include "weft/channel/handler.h"
#include "weft/codec/codec_error.h"

namespace weft {

namespace detail {

// Adds `in` to the bytes buffered in `into`: takes it as is when nothing is buffered, else appends it
// -- in place when `into` has room or can grow and no slice shares it, else by copying both into a
// new buffer (so a buffer at its maximum, like a transport's provided buffer, never refuses bytes).
// Every decoder that keeps input across reads cumulates with this.
void cumulate(ByteBufAllocator& allocator, ByteBuf& into, ByteBuf&& in);

// The non-template half of ByteToMessageDecoder: the cumulation buffer.
class Cumulation {
 public:
  // Adds `in` to the buffered bytes: takes it as is when nothing is buffered, else appends it
  // (growing in place when the buffer is not shared, else copying both into a new buffer).
  void append(ByteBufAllocator& allocator, ByteBuf&& in);
  // After a decode pass: releases a fully consumed buffer; reclaims consumed bytes at the front of
  // an unshared buffer once they are more than half of it.
  void compact() noexcept;
  ByteBuf& buffer() noexcept { return buf_; }
  std::size_t readable_bytes() const noexcept { return buf_.readable_bytes(); }
  ByteBuf take() noexcept { return std::move(buf_); }

 private:
  ByteBuf buf_;
};

}  // namespace detail

/// The base of decoders that turn a byte stream into messages of type Out: implement decode()
/// (and decode_last() where end of input matters). See the file's description. Loop thread only.
template <class Out>
class ByteToMessageDecoder : public InboundHandler<ByteBuf, Out> {
 public:
  /// Adds `in` to the buffered bytes and decodes as many messages as they hold, firing each.
  void channel_read(Context& ctx, ByteBuf&& in) final {
    cumulation_.append(ctx.allocator(), std::move(in));
    if (decoding_) return;  // re-entered from a downstream handler: the running loop picks it up
    decode_loop(ctx, false);
    if (!ctx.is_removed()) cumulation_.compact();
  }

  /// End of input: decodes what is left with decode_last(); a partial frame fires TruncatedFrameError.
  void channel_inactive(Context& ctx) override {
    input_closed(ctx);
    ctx.fire_channel_inactive();
  }

  /// A ChannelInputShutdownEvent is end of input, as channel_inactive(); every event is passed on.
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) input_closed(ctx);
    ctx.fire_user_event(event);
  }

  /// Passes the bytes still buffered on to the next handler (then a read-complete) and calls
  /// decoder_removed().
  void handler_removed(Context& ctx) final {
    if (decoding_) {
      removal_pending_ = true;  // decode_loop passes the leftover on once the current step returns
      return;
    }
    pass_on_leftover(ctx);
  }

  /// Bytes received and not decoded yet.
  std::size_t buffered_bytes() const noexcept { return cumulation_.readable_bytes(); }

 protected:
  /// Decodes at most one message from the readable bytes of `in`, consuming what it uses. Returns
  /// nullopt when more bytes are needed (consuming nothing) or when it only skipped bytes. Throws a
  /// DecoderError for bad input, after consuming (discarding) the bytes of the bad frame.
  virtual std::optional<Out> decode(Context& ctx, ByteBuf& in) = 0;
  /// At end of input, while bytes are left. Default: decode().
  virtual std::optional<Out> decode_last(Context& ctx, ByteBuf& in) { return decode(ctx, in); }
  /// Runs once when the decoder leaves the pipeline, after its leftover bytes were passed on.
  virtual void decoder_removed(Context& /*ctx*/) {}

 private:
  void decode_loop(Context& ctx, bool last) {
    decoding_ = true;
    ByteBuf& in = cumulation_.buffer();
    while (in.is_readable() && !removal_pending_ && !ctx.is_removed()) {
      const std::size_t before = in.readable_bytes();
      std::optional<Out> out;
      try {
        out = last ? decode_last(ctx, in) : decode(ctx, in);
      } catch (...) {
        const bool progress = in.readable_bytes() != before;
        ctx.fire_exception(std::current_exception());
        if (!progress) break;
        continue;
      }
      if (out) {
        const bool progress = in.readable_bytes() != before;
        ctx.fire_read(std::move(*out));
        if (!progress) {
          ctx.fire_exception(std::make_exception_ptr(
              DecoderError("decode() emitted a message without consuming any byte; decoding stopped")));
          break;
        }
        continue;
      }
      if (in.readable_bytes() == before) break;
    }
    decoding_ = false;
    if (removal_pending_) pass_on_leftover(ctx);
  }

  void input_closed(Context& ctx) {
    if (input_closed_ || decoding_) return;
    input_closed_ = true;
    decode_loop(ctx, true);
    if (ctx.is_removed()) return;
    ByteBuf& in = cumulation_.buffer();
    if (in.is_readable()) {
      const std::size_t left = in.readable_bytes();
      in.skip_bytes(left);
      ctx.fire_exception(std::make_exception_ptr(TruncatedFrameError(left)));
    }
    cumulation_.compact();
  }

  void pass_on_leftover(Context& ctx) {
    if (left_) return;
    left_ = true;
    ByteBuf rest = cumulation_.take();
    if (rest.is_readable()) {
      ctx.fire_read(std::move(rest));
      ctx.fire_read_complete();
    }
    decoder_removed(ctx);
  }

  detail::Cumulation cumulation_;
  bool decoding_ = false;
  bool removal_pending_ = false;
  bool input_closed_ = false;
  bool left_ = false;
};

}  // namespace weft
