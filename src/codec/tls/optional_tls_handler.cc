#include "weft/codec/tls/optional_tls_handler.h"

#include <memory>
#include <utility>

#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/core/log.h"

namespace weft {

namespace {
constexpr std::uint8_t kHandshakeRecord = 0x16;  // TLS ContentType handshake
constexpr std::uint8_t kTlsMajorVersion = 0x03;  // SSL 3.0 .. TLS 1.3 records all start 0x03
}  // namespace

OptionalTlsHandler::OptionalTlsHandler(TlsContextPtr context, Configure configure, TlsHandlerOptions options,
                                       Duration decide_timeout)
    : context_(std::move(context)),
      configure_(std::move(configure)),
      options_(std::move(options)),
      decide_timeout_(decide_timeout) {}

void OptionalTlsHandler::handler_added(Context& ctx) {
  ctx.channel().config().allow_half_closure = true;  // a FIN before the choice is an event we answer
  if (ctx.channel().is_active()) arm_timer(ctx);
}

void OptionalTlsHandler::channel_active(Context& ctx) {
  arm_timer(ctx);
  ctx.fire_channel_active();
}

void OptionalTlsHandler::arm_timer(Context& ctx) {
  if (timer_ != 0 || chosen_) return;
  timer_ = ctx.loop().schedule(decide_timeout_, [this, &ctx] {
    timer_ = 0;
    if (chosen_) return;
    log(LogLevel::debug, "channel {}: nothing received to choose TLS or cleartext; closing", ctx.channel().id());
    ctx.close();
  });
}

void OptionalTlsHandler::handler_removed(Context& ctx) {
  if (timer_ != 0) ctx.loop().cancel(timer_);
  timer_ = 0;
}

void OptionalTlsHandler::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  if (chosen_) {  // removed already, but still reached: pass it on
    ctx.fire_read(std::move(message.as<ByteBuf>()));
    return;
  }
  detail::cumulate(ctx.allocator(), buffered_, std::move(message.as<ByteBuf>()));
  const std::size_t n = buffered_.readable_bytes();
  if (n == 0) return;
  const std::uint8_t* bytes = buffered_.read_ptr();
  if (bytes[0] != kHandshakeRecord) {
    choose(ctx, false);
  } else if (n >= 2) {
    choose(ctx, bytes[1] == kTlsMajorVersion);
  }  // else: one byte that may start a handshake record; wait for the next
}

// Lets `configure` add the handlers, puts the TlsHandler before them when encrypted, leaves the
// pipeline and hands on the bytes seen so far (the removed context still leads to the next handler).
void OptionalTlsHandler::choose(Context& ctx, bool encrypted) {
  chosen_ = true;
  Pipeline& pipeline = ctx.pipeline();
  try {
    configure_(ctx, encrypted);
    if (encrypted) pipeline.add_after(ctx.name(), "tls", std::make_shared<TlsHandler>(context_, options_));
  } catch (...) {
    buffered_.release();
    pipeline.remove(*this);
    ctx.fire_exception(std::current_exception());
    ctx.close();
    return;
  }
  ByteBuf bytes = std::move(buffered_);
  pipeline.remove(*this);
  ctx.fire_read(std::move(bytes));
}

void OptionalTlsHandler::user_event(Context& ctx, const std::any& event) {
  if (!chosen_ && std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    buffered_.release();
    ctx.close();
    return;
  }
  ctx.fire_user_event(event);
}

}  // namespace weft
