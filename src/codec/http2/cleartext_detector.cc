#include "weft/codec/http2/cleartext_detector.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/channel/pipeline.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/log.h"

namespace weft::http2 {

namespace {

// Whether the comma-separated list `value` has `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (http::iequals(item, token)) return true;
  }
  return false;
}

// base64url without padding (RFC 4648 5), as HTTP2-Settings is sent; nullopt when malformed.
std::optional<std::string> base64url_decode(std::string_view text) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '-') v = 62;
    else if (c == '_') v = 63;
    else if (c == '=') break;
    else return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

// The HTTP2-Settings of a request that asks to switch to h2c (RFC 7540 3.2), decoded; nullopt when
// it does not ask, or asks with a body (then it is served as HTTP/1.1).
std::optional<std::string> h2c_upgrade_settings(const http::RequestHead& head) {
  const auto upgrade = head.header("Upgrade");
  const auto settings = head.header("HTTP2-Settings");
  if (!upgrade || !settings || !has_token(*upgrade, "h2c")) return std::nullopt;
  if (head.chunked || head.content_length.value_or(0) != 0 || head.version != http::Version::http11) {
    return std::nullopt;
  }
  auto decoded = base64url_decode(*settings);
  if (decoded && decoded->size() % 6 != 0) return std::nullopt;  // SETTINGS entries are 6 bytes each
  return decoded;
}

}  // namespace

namespace {
// The preface's first line: what no HTTP/1.1 request may start with (PRI is reserved for it).
constexpr std::string_view kPrefaceRequestLine = kClientPreface.substr(0, 16);  // "PRI * HTTP/2.0\r\n"
}  // namespace

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
  if (seen.substr(0, n) == kClientPreface.substr(0, n)) {
    if (n == kClientPreface.size()) choose(ctx, true);
    return;  // else: a prefix of the preface; wait for more
  }
  // HTTP/2's request line with the rest of the preface wrong: a connection error the HTTP/2 codec
  // answers with GOAWAY(PROTOCOL_ERROR) (RFC 9113 3.4), not an HTTP/1.1 request with method PRI.
  if (seen.size() >= kPrefaceRequestLine.size() && seen.substr(0, kPrefaceRequestLine.size()) == kPrefaceRequestLine) {
    choose(ctx, true);
    return;
  }
  // HTTP/1.1: the first request's head decides whether it asks to switch to h2c.
  http::RequestHead head;
  const http::ParseResult r = http::parse_request_head(seen, head, http1_limits_);
  if (r.kind == http::ParseResult::Kind::incomplete) return;  // bounded by the limits: then an error
  if (r.kind == http::ParseResult::Kind::complete) {
    if (auto settings = h2c_upgrade_settings(head)) {
      upgrade(ctx, *settings, head, r.consumed);
      return;
    }
  }
  choose(ctx, false);  // the HTTP/1.1 codec parses the head again (once per connection) and answers
}

// Answers 101, puts an HTTP/2 codec in place whose stream 1 is the request, and hands it what
// followed the request (the client's preface).
void CleartextDetector::upgrade(Context& ctx, const std::string& settings, const http::RequestHead& head,
                                std::size_t head_size) {
  chosen_ = true;
  Pipeline& pipeline = ctx.pipeline();
  constexpr std::string_view k101 = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  ByteBuf answer = ctx.allocator().buffer(k101.size());
  answer.write_bytes(k101.data(), k101.size());
  ctx.write(std::move(answer));
  auto codec = std::make_shared<ServerCodec>(http2_settings_);
  pipeline.add_after(ctx.name(), "http2", codec);
  Context* codec_ctx = pipeline.context("http2");
  if (codec_ctx == nullptr || !codec->upgrade(*codec_ctx, settings, head)) {
    log(LogLevel::debug, "channel {}: malformed HTTP2-Settings; closing", ctx.channel().id());
    buffered_.release();
    pipeline.remove(*this);
    ctx.flush();
    ctx.close();
    return;
  }
  buffered_.skip_bytes(head_size);
  ByteBuf rest = std::move(buffered_);
  pipeline.remove(*this);
  if (rest.is_readable()) ctx.fire_read(std::move(rest));
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
