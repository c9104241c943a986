#include "weft/codec/websocket/client_upgrade.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <charconv>
#include <memory>
#include <stdexcept>

#include "header_tokens.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/core/log.h"

namespace weft::ws {

namespace {

using detail::has_token;
using detail::iequals;
using detail::trim;

constexpr std::size_t kMaxAnswerHead = 16 * 1024;

bool breaks_request(std::string_view s) noexcept { return s.find_first_of(std::string_view("\r\n\0", 3)) != s.npos; }

std::string fresh_key() {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof(raw)) != 1) throw std::runtime_error("websocket: RAND_bytes failed");
  unsigned char encoded[25];
  const int n = EVP_EncodeBlock(encoded, raw, sizeof(raw));
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<std::size_t>(n));
}

// The values of every field named `name`, joined with ", " (RFC 9110 5.3); nullopt: none.
std::optional<std::string> joined(const Handshake& h, std::string_view name) {
  std::optional<std::string> out;
  for (const auto& [field, value] : h.headers) {
    if (!iequals(field, name)) continue;
    if (out) {
      *out += ", ";
      *out += value;
    } else {
      out = value;
    }
  }
  return out;
}

// The answer's status and header fields (into `h.headers`); throws HandshakeError.
int parse_head(std::string_view head, Handshake& h) {
  const std::size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  int status = 0;
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
      std::from_chars(status_line.data() + 9, status_line.data() + 12, status).ptr != status_line.data() + 12) {
    throw HandshakeError(0, "the answer is not HTTP/1.1");
  }
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    if (line.empty()) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || line[0] == ' ' || line[0] == '\t') {
      throw HandshakeError(status, "a malformed header field in the answer");
    }
    h.headers.emplace_back(std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))));
  }
  return status;
}

}  // namespace

HandshakeError::HandshakeError(int status, std::string reason)
    : Error("websocket handshake failed" + (status != 0 ? " (HTTP " + std::to_string(status) + ")" : std::string()) +
            ": " + reason),
      status_(status),
      reason_(std::move(reason)) {}

void validate(const ClientHandshakeRequest& request) {
  request.deflate.validate();
  if (breaks_request(request.host) || breaks_request(request.target)) {
    throw std::invalid_argument("ws::ClientUpgrade: CR, LF or NUL in the host or target");
  }
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || breaks_request(name) || name.find(':') != std::string::npos || breaks_request(value)) {
      throw std::invalid_argument("ws::ClientUpgrade: a header field that would break the request: " + name);
    }
  }
  for (const std::string& p : request.subprotocols) {
    if (p.empty() || breaks_request(p) || p.find(',') != std::string::npos) {
      throw std::invalid_argument("ws::ClientUpgrade: a subprotocol must be a token: " + p);
    }
  }
}

std::optional<DeflateParameters> check_negotiation(const ClientHandshakeRequest& request, int status, Handshake& h) {
  if (const auto protocol = joined(h, "Sec-WebSocket-Protocol")) {
    bool offered = false;
    for (const std::string& p : request.subprotocols) offered = offered || p == *protocol;
    if (!offered) throw HandshakeError(status, "a subprotocol not offered: " + *protocol);
    h.subprotocol = *protocol;
  }
  std::optional<DeflateParameters> deflate;
  if (const auto extensions = joined(h, "Sec-WebSocket-Extensions")) {
    if (!request.deflate.enabled) throw HandshakeError(status, "an extension not offered: " + *extensions);
    std::string why;
    deflate = check_deflate_answer(*extensions, request.deflate, why);
    if (!deflate) throw HandshakeError(status, "permessage-deflate: " + why);
    h.deflate = deflate;
  }
  return deflate;
}

ClientUpgrade::ClientUpgrade(ClientHandshakeRequest request, Promise<Handshake> done, TailFn add_tail)
    : request_(std::move(request)), done_(std::move(done)), add_tail_(std::move(add_tail)), key_(fresh_key()) {
  validate(request_);
}

ClientUpgrade::~ClientUpgrade() = default;

void ClientUpgrade::handler_added(Context& ctx) {
  if (request_.timeout > Duration::zero()) {
    timer_ = ctx.loop().schedule(request_.timeout, [this, &ctx] {
      timer_ = 0;
      fail(ctx, std::make_exception_ptr(HandshakeError(0, "no answer within the handshake timeout")));
    });
  }
  if (ctx.channel().is_active()) send_request(ctx);
}

void ClientUpgrade::handler_removed(Context& ctx) {
  if (timer_ != 0) ctx.loop().cancel(timer_);
  timer_ = 0;
}

void ClientUpgrade::channel_active(Context& ctx) {
  send_request(ctx);
  ctx.fire_channel_active();
}

void ClientUpgrade::send_request(Context& ctx) {
  if (sent_) return;
  sent_ = true;
  std::string head;
  head.reserve(256);
  head += "GET ";
  head += request_.target;
  head += " HTTP/1.1\r\nHost: ";
  head += request_.host;
  head += "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ";
  head += key_;
  head += "\r\nSec-WebSocket-Version: 13\r\n";
  if (!request_.subprotocols.empty()) {
    head += "Sec-WebSocket-Protocol: ";
    for (std::size_t i = 0; i < request_.subprotocols.size(); ++i) {
      if (i != 0) head += ", ";
      head += request_.subprotocols[i];
    }
    head += "\r\n";
  }
  if (request_.deflate.enabled) {
    head += "Sec-WebSocket-Extensions: ";
    head += deflate_offer(request_.deflate);
    head += "\r\n";
  }
  for (const auto& [name, value] : request_.headers) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += "\r\n";
  ctx.write_and_flush(ByteBuf::copy_of(head));
}

void ClientUpgrade::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  if (finished_) return;
  weft::detail::cumulate(ctx.allocator(), in_, std::move(message.as<ByteBuf>()));
  const std::string_view seen = in_.view();
  const std::size_t end = seen.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (seen.size() > kMaxAnswerHead) {
      fail(ctx, std::make_exception_ptr(HandshakeError(0, "the answer's head is over 16 KiB")));
    }
    return;
  }
  Handshake h;
  h.target = request_.target;
  std::optional<DeflateParameters> deflate;
  try {
    const int status = parse_head(seen.substr(0, end + 2), h);
    if (status != 101) throw HandshakeError(status, "the server answered " + std::to_string(status) + ", not 101");
    const auto upgrade = joined(h, "Upgrade");
    if (!upgrade || !has_token(*upgrade, "websocket")) throw HandshakeError(101, "no Upgrade: websocket");
    const auto connection = joined(h, "Connection");
    if (!connection || !has_token(*connection, "upgrade")) throw HandshakeError(101, "no Connection: upgrade");
    const auto accept = joined(h, "Sec-WebSocket-Accept");
    if (!accept || *accept != accept_key(key_)) throw HandshakeError(101, "a wrong Sec-WebSocket-Accept");
    deflate = check_negotiation(request_, 101, h);
  } catch (const HandshakeError&) {
    fail(ctx, std::current_exception());
    return;
  }
  in_.skip_bytes(end + 4);
  ByteBuf rest = in_.is_readable() ? ByteBuf::copy_of(in_.view()) : ByteBuf();
  in_.release();
  switch_over(ctx, std::move(h), deflate, std::move(rest));
}

// The answer was right: the codec and the application take the channel.
void ClientUpgrade::switch_over(Context& ctx, Handshake handshake, std::optional<DeflateParameters> deflate,
                                ByteBuf rest) {
  finished_ = true;
  if (timer_ != 0) ctx.loop().cancel(timer_);
  timer_ = 0;
  Channel& channel = ctx.channel();
  Pipeline& pipeline = channel.pipeline();
  Promise<Handshake> done = std::move(done_);
  TailFn add_tail = std::move(add_tail_);
  std::optional<PerMessageDeflate::Config> config;
  if (deflate) config = PerMessageDeflate::client_config(*deflate, request_.deflate);
  auto codec = std::make_shared<Codec>(Codec::Role::client, request_.connection, std::move(rest), config);
  try {
    // `self` keeps this handler (and `ctx`) alive to the end of this function.
    const std::shared_ptr<Handler> self = pipeline.replace(ctx.name(), "websocket", codec);
    add_tail(channel, handshake);
    done.set_value(std::move(handshake));
    if (Context* c = pipeline.context("websocket")) codec->feed(*c);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: websocket: the switch after the handshake failed: {}", channel.id(), e.what());
    done.set_error(std::current_exception());
    channel.close();
  }
}

void ClientUpgrade::fail(Context& ctx, std::exception_ptr error) {
  if (finished_) return;
  finished_ = true;
  if (timer_ != 0) ctx.loop().cancel(timer_);
  timer_ = 0;
  in_.release();
  done_.set_error(std::move(error));
  ctx.close();
}

void ClientUpgrade::channel_inactive(Context& ctx) {
  fail(ctx, std::make_exception_ptr(HandshakeError(0, "the connection closed before the server's answer")));
  ctx.fire_channel_inactive();
}

void ClientUpgrade::exception_caught(Context& ctx, std::exception_ptr error) {
  if (!finished_) {
    fail(ctx, std::move(error));
    return;
  }
  ctx.fire_exception(std::move(error));
}

}  // namespace weft::ws
