#include "weft/codec/http2/cleartext_detector.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/log.h"

namespace weft::http2 {

void CleartextDetector::handler_added(Context& ctx) {
  ctx.channel().config().allow_half_closure = true;  // as the codecs: a FIN is an event, not a reset
  if (ctx.channel().is_active()) arm_idle_timer(ctx);
}

void CleartextDetector::channel_active(Context& ctx) {
  arm_idle_timer(ctx);
  ctx.fire_channel_active();
}

void CleartextDetector::arm_idle_timer(Context& ctx) {
  if (idle_timer_ != 0) return;
  idle_timer_ = ctx.loop().schedule(http1_limits_.idle_timeout, [this, &ctx] {
    idle_timer_ = 0;
    if (chosen_) return;
    log(LogLevel::debug, "channel {}: nothing received; closing", ctx.channel().id());
    ctx.close();
  });
}

void CleartextDetector::handler_removed(Context& ctx) {
  if (idle_timer_ != 0) ctx.loop().cancel(idle_timer_);
  idle_timer_ = 0;
}

void CleartextDetector::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  if (chosen_) {  // removed already, but still reached: pass it on
    ctx.fire_read(std::move(message.as<ByteBuf>()));
    return;
  }
  weft::detail::cumulate(ctx.allocator(), buffered_, std::move(message.as<ByteBuf>()));
  const std::string_view seen = buffered_.view();
  const std::size_t n = std::min(seen.size(), kClientPreface.size());
  if (seen.substr(0, n) != kClientPreface.substr(0, n)) {
    choose(ctx, false);
  } else if (n == kClientPreface.size()) {
    choose(ctx, true);
  }  // else: a prefix of the preface; wait for more
}

// Puts the chosen codec after this handler, leaves the pipeline, and hands the codec the bytes
// seen so far (the removed context still leads to the codec).
void CleartextDetector::choose(Context& ctx, bool http2) {
  chosen_ = true;
  Pipeline& pipeline = ctx.pipeline();
  if (http2) {
    pipeline.add_after(ctx.name(), "http2", std::make_shared<ServerCodec>(http2_settings_));
  } else {
    pipeline.add_after(ctx.name(), "http1", std::make_shared<http::ServerCodec>(http1_limits_));
  }
  ByteBuf bytes = std::move(buffered_);
  pipeline.remove(*this);
  ctx.fire_read(std::move(bytes));
}

void CleartextDetector::user_event(Context& ctx, const std::any& event) {
  if (!chosen_ && std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    buffered_.release();
    ctx.close();
    return;
  }
  ctx.fire_user_event(event);
}

}  // namespace weft::http2
