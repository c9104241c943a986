#pragma once
/// @file
/// Message-to-message codecs and the byte encoder base.
///
///   MessageToMessageDecoder<In, Out>: inbound, one In becomes zero or more Out (decode()).
///   MessageToMessageEncoder<In, Out>: outbound, one In becomes zero or more Out (encode()).
///   MessageToByteEncoder<In>:         outbound, one In is written into a new ByteBuf (encode()).
///
/// Output<Out> is what decode()/encode() emit through: out(std::move(message)) passes the message on
/// at once (fire_read for decoders, write for encoders); nothing is collected or allocated.
/// Loop thread only, like every handler.

#include <cstddef>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"

namespace weft {

/// What decode()/encode() emit through: each call passes one message on at once.
template <class Out>
class Output {
 public:
  /// Where messages go: fire_read (decoders) or write (encoders).
  enum class Direction { inbound, outbound };
  /// Emits through `ctx` in `direction`.
  Output(Context& ctx, Direction direction) noexcept : ctx_(ctx), direction_(direction) {}
  /// Passes `message` on: to the next handler (decoders) or the previous one (encoders).
  void operator()(Out&& message) {
    ++count_;
    if (direction_ == Direction::inbound) {
      ctx_.fire_read(std::move(message));
    } else {
      ctx_.write(std::move(message));
    }
  }
  /// Messages emitted so far.
  std::size_t count() const noexcept { return count_; }

 private:
  Context& ctx_;
  Direction direction_;
  std::size_t count_ = 0;
};

/// Inbound: one In becomes zero or more Out (implement decode()). Loop thread only.
template <class In, class Out>
class MessageToMessageDecoder : public InboundHandler<In, Out> {
 public:
  /// Calls decode() with an Output that fires each Out on.
  void channel_read(Context& ctx, In&& message) final {
    Output<Out> out(ctx, Output<Out>::Direction::inbound);
    decode(ctx, std::move(message), out);
  }

 protected:
  /// Emits the decoded form of `message` through out(...). Throw a DecoderError for bad input.
  virtual void decode(Context& ctx, In&& message, Output<Out>& out) = 0;
};

/// Outbound: one In becomes zero or more Out (implement encode()). Loop thread only.
template <class In, class Out>
class MessageToMessageEncoder : public OutboundHandler<In, Out> {
 public:
  /// Calls encode() with an Output that writes each Out on.
  void write(Context& ctx, In&& message) final {
    Output<Out> out(ctx, Output<Out>::Direction::outbound);
    encode(ctx, std::move(message), out);
  }

 protected:
  /// Emits the encoded form of `message` through out(...). Throw an EncoderError when it cannot be encoded.
  virtual void encode(Context& ctx, In&& message, Output<Out>& out) = 0;
};

/// Outbound: one In is written into a new ByteBuf (implement encode()). Loop thread only.
template <class In>
class MessageToByteEncoder : public OutboundHandler<In, ByteBuf> {
 public:
  /// Calls encode() with a new buffer of size_hint() bytes and writes it on unless it stayed empty.
  void write(Context& ctx, In&& message) final {
    ByteBuf buf = ctx.allocator().buffer(size_hint(message));
    encode(ctx, std::move(message), buf);
    if (buf.is_readable()) ctx.write(std::move(buf));
  }

 protected:
  /// Appends the encoding of `message` to `out` (an empty buffer of at least size_hint() bytes).
  /// Nothing is written when `out` stays empty.
  virtual void encode(Context& ctx, In&& message, ByteBuf& out) = 0;
  /// The initial capacity of the buffer given to encode().
  virtual std::size_t size_hint(const In& /*message*/) const { return kDefaultInitialCapacity; }
};

}  // namespace weft
