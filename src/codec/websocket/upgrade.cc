#include "weft/codec/websocket/upgrade.h"

#include <openssl/evp.h>

#include <memory>
#include <utility>

#include "header_tokens.h"
#include "http2_stream.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/log.h"

namespace weft::ws {

namespace {

using detail::any_token;
using detail::iequals;
using detail::trim;
using http::HttpRequest;
using http::HttpResponse;

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool has_token(const HttpRequest& request, std::string_view header, std::string_view token) {
  const auto value = request.header(header);
  return value && detail::has_token(*value, token);
}

// A key is 16 bytes in base64: 22 characters of the alphabet and "==".
bool is_valid_key(std::string_view key) noexcept {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (char c : key.substr(0, 22)) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

HttpResponse refuse(int status, std::string_view why) {
  return std::move(HttpResponse(status).content_type("text/plain; charset=utf-8").body(std::string(why) + "\n"));
}

// The first of the server's subprotocols that the client offers; empty: none.
std::string_view subprotocol_for(const HttpRequest& request, const UpgradeOptions& options) {
  const auto offered = request.header("Sec-WebSocket-Protocol");
  if (!offered) return {};
  for (const std::string& mine : options.subprotocols) {
    if (any_token(*offered, [&](std::string_view t) { return t == mine; })) return mine;
  }
  return {};
}

// The client's permessage-deflate offer accepted, if any (all its Sec-WebSocket-Extensions fields).
std::optional<DeflateAgreement> deflate_for(const HttpRequest& request, const UpgradeOptions& options) {
  if (!options.deflate.enabled) return std::nullopt;
  std::vector<std::string_view> offers;
  for (const http::Header& field : request.head()) {
    if (iequals(field.name, "Sec-WebSocket-Extensions")) offers.push_back(field.value);
  }
  return negotiate_deflate(offers, options.deflate);
}

// The handshake's answer: 101, or the refusal (see upgrade.h).
HttpResponse answer(const HttpRequest& request, const UpgradeOptions& options,
                    const std::optional<DeflateAgreement>& deflate) {
  if (request.version() != http::Version::http11) {
    return refuse(400, "WebSocket needs HTTP/1.1, or over HTTP/2 an extended CONNECT (RFC 8441)");
  }
  if (request.method() != "GET") return refuse(400, "a WebSocket handshake is a GET");
  if (!has_token(request, "Upgrade", "websocket")) {
    return std::move(
        refuse(426, "this is a WebSocket endpoint: send Upgrade: websocket").header("Upgrade", "websocket"));
  }
  if (!has_token(request, "Connection", "upgrade")) return refuse(400, "Connection: upgrade is missing");
  const auto version = request.header("Sec-WebSocket-Version");
  if (!version || trim(*version) != "13") {
    return std::move(refuse(426, "only Sec-WebSocket-Version 13 is supported").header("Sec-WebSocket-Version", "13"));
  }
  const auto key = request.header("Sec-WebSocket-Key");
  if (!key || !is_valid_key(trim(*key))) return refuse(400, "Sec-WebSocket-Key must be 16 bytes in base64");
  HttpResponse response(101);
  response.header("Upgrade", "websocket").header("Connection", "Upgrade");
  response.header("Sec-WebSocket-Accept", accept_key(trim(*key)));
  const std::string_view chosen = subprotocol_for(request, options);
  if (!chosen.empty()) response.header("Sec-WebSocket-Protocol", chosen);
  if (deflate) response.header("Sec-WebSocket-Extensions", deflate->response);
  return response;
}

// Over HTTP/2 (RFC 8441 5): an extended CONNECT with :protocol websocket and version 13; no key, no
// accept. A refusal, or nullopt: accepted.
std::optional<HttpResponse> refusal_over_http2(const HttpRequest& request) {
  const auto protocol = request.header(":protocol");
  if (!protocol || *protocol != "websocket") {
    return refuse(400, "a WebSocket over HTTP/2 is an extended CONNECT with :protocol websocket");
  }
  const auto version = request.header("Sec-WebSocket-Version");
  if (!version || trim(*version) != "13") {
    return std::move(refuse(426, "only Sec-WebSocket-Version 13 is supported").header("Sec-WebSocket-Version", "13"));
  }
  return std::nullopt;
}

Handshake handshake_of(const HttpRequest& request, const UpgradeOptions& options,
                       const std::optional<DeflateAgreement>& deflate) {
  Handshake h;
  h.version = request.version();
  h.target = request.target();
  h.subprotocol = subprotocol_for(request, options);
  if (deflate) h.deflate = deflate->parameters;
  const http::RequestHead& head = request.head();
  h.headers.reserve(head.header_count);
  for (const http::Header& field : head) {
    if (!field.name.empty() && field.name[0] == ':') continue;  // (HTTP/2's :protocol)
    h.headers.emplace_back(field.name, field.value);
  }
  return h;
}

// The handler after the codec for the callback form.
class CallbackTail final : public InboundHandler<Message> {
 public:
  CallbackTail(std::shared_ptr<const Callbacks> callbacks, Handshake handshake) noexcept
      : callbacks_(std::move(callbacks)), handshake_(std::move(handshake)) {}
  void handler_added(Context& ctx) override {
    if (callbacks_->on_open) callbacks_->on_open(ctx, handshake_);
  }
  void channel_read(Context& ctx, Message&& message) override {
    if (message.is_close()) {
      if (callbacks_->on_close) callbacks_->on_close(ctx, message);
    } else if (callbacks_->on_message) {
      callbacks_->on_message(ctx, message);
    }
  }

 private:
  std::shared_ptr<const Callbacks> callbacks_;
  const Handshake handshake_;
};

// The coroutine that takes the handshake, with both kept in its frame for its whole run.
Task<> run_with_handshake(std::shared_ptr<const HandshakeCoroutineFn> fn, std::shared_ptr<const Handshake> handshake,
                          Connection<Message>& connection) {
  co_await (*fn)(connection, *handshake);
}

// The codec with what the handshake agreed, for a connection or a stream.
std::shared_ptr<Codec> make_codec(const UpgradeOptions& options, const Handshake& handshake, ByteBuf received) {
  return handshake.deflate
             ? std::make_shared<Codec>(options.connection, std::move(received),
                                       PerMessageDeflate::server_config(*handshake.deflate, options.deflate))
             : std::make_shared<Codec>(options.connection, std::move(received));
}

// Puts the WebSocket in HTTP's place: the codec after the transport (and TLS), then the handler.
// `add_handler(channel, handshake)` adds the handler at the pipeline's end.
template <class AddHandler>
void take_over(Channel& channel, const Handler& router, const UpgradeOptions& options, Handshake handshake,
               AddHandler add_handler) {
  Pipeline& pipeline = channel.pipeline();
  try {
    http::ServerCodec* http = nullptr;
    std::string http_name;
    for (const std::string& name : pipeline.names()) {
      if (auto* codec = pipeline.get_as<http::ServerCodec>(name)) {
        http = codec;
        http_name = name;
        break;
      }
    }
    if (http == nullptr) throw std::logic_error("no HTTP/1.1 codec in the pipeline");
    auto codec = make_codec(options, handshake, http->take_switched_input());
    pipeline.remove(router);
    pipeline.replace(http_name, "websocket", codec);
    add_handler(channel, std::move(handshake));
    if (Context* ctx = pipeline.context("websocket")) codec->feed(*ctx);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: websocket upgrade failed: {}", channel.id(), e.what());
    channel.close();
  }
}

http2::ServerCodec* http2_codec_of(Pipeline& pipeline) {
  for (const std::string& name : pipeline.names()) {
    if (auto* codec = pipeline.get_as<http2::ServerCodec>(name)) return codec;
  }
  return nullptr;
}

// RFC 8441: the extended CONNECT's stream becomes a channel of its own (http2::StreamChannel) with
// the bridge, the codec and the handler; its 200 is the bridge's first write.
template <class AddHandler>
void accept_over_http2(Context& ctx, HttpRequest& request, const std::shared_ptr<const UpgradeOptions>& options,
                       const AddHandler& add_handler) {
  if (std::optional<HttpResponse> refusal = refusal_over_http2(request)) {
    ctx.write(std::move(refusal->for_request(request)));
    ctx.flush();
    return;
  }
  const std::optional<DeflateAgreement> deflate = deflate_for(request, *options);
  Handshake handshake = handshake_of(request, *options, deflate);
  std::string extensions = deflate ? deflate->response : std::string();
  std::string subprotocol = handshake.subprotocol;
  auto init = [options, add_handler, handshake = std::move(handshake), subprotocol = std::move(subprotocol),
               extensions = std::move(extensions)](http2::StreamChannel& stream) {
    auto start = [options, add_handler, handshake](Channel& channel) mutable {
      channel.pipeline().add_last("websocket", make_codec(*options, handshake, ByteBuf()));
      add_handler(channel, std::move(handshake));
    };
    stream.pipeline().add_last("websocket-stream",
                               std::make_shared<detail::Http2StreamBridge>(subprotocol, extensions, std::move(start)));
  };
  // The stream is the codec's, on the connection's loop: a route offloaded to an executor (the
  // router added with an ExecutorGroup) hands the request back to the loop for it.
  auto serve = [init = std::move(init)](Channel& channel, HttpRequest& request) mutable {
    http2::ServerCodec* codec = http2_codec_of(channel.pipeline());
    if (codec != nullptr && codec->serve_as_channel(request, std::move(init))) return true;
    log(LogLevel::debug, "channel {}: websocket over HTTP/2: stream {} is gone or not an extended CONNECT",
        channel.id(), request.sequence());
    return false;
  };
  if (ctx.channel().loop().in_loop()) {
    if (!serve(ctx.channel(), request)) {
      ctx.write(std::move(refuse(400, "not an extended CONNECT").for_request(request)));
      ctx.flush();
    }
    return;
  }
  ctx.channel().loop().execute(
      [channel = ctx.channel().shared_from_this(), request = std::move(request), serve = std::move(serve)]() mutable {
        if (!serve(*channel, request)) {
          channel->write_and_flush(std::move(refuse(400, "not an extended CONNECT").for_request(request)));
        }
      });
}

template <class AddHandler>
http::Router::RouteFn make_route(UpgradeOptions options, AddHandler add_handler) {
  options.deflate.validate();
  return [options = std::make_shared<const UpgradeOptions>(std::move(options)), add_handler](Context& ctx,
                                                                                             HttpRequest& request) {
    if (request.version() == http::Version::http2 && request.method() == "CONNECT") {
      accept_over_http2(ctx, request, options, add_handler);
      return;
    }
    const std::optional<DeflateAgreement> deflate = deflate_for(request, *options);
    HttpResponse response = answer(request, *options, deflate);
    const bool switching = response.status() == 101;
    ctx.write(std::move(response.for_request(request)));
    ctx.flush();
    if (!switching) return;
    const Handler& router = ctx.handler();
    auto swap = [channel = ctx.channel().shared_from_this(), &router, options, add_handler,
                 handshake = handshake_of(request, *options, deflate)]() mutable {
      take_over(*channel, router, *options, std::move(handshake), add_handler);
    };
    // On the loop the swap happens at once (nothing else can read the connection meanwhile); a
    // router on an executor (offload) posts it after the 101 it wrote.
    if (ctx.loop().in_loop()) {
      swap();
    } else {
      ctx.loop().execute(std::move(swap));
    }
  };
}

}  // namespace

std::string accept_key(std::string_view key) {
  std::string input(key);
  input += kGuid;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digest_size, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("websocket: SHA-1 failed");
  }
  unsigned char encoded[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(encoded, digest, static_cast<int>(digest_size));
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<std::size_t>(n));
}

TailFn tail_for(Callbacks callbacks) {
  auto shared = std::make_shared<const Callbacks>(std::move(callbacks));
  return [shared](Channel& channel, Handshake handshake) {
    channel.pipeline().add_last("websocket-handler", std::make_shared<CallbackTail>(shared, std::move(handshake)));
  };
}

TailFn tail_for(CoroutineFn fn) {
  auto shared = std::make_shared<const CoroutineFn>(std::move(fn));
  return [shared](Channel& channel, Handshake) {
    serve<Message>(channel, [shared](Connection<Message>& c) { return (*shared)(c); });
  };
}

TailFn tail_for(HandshakeCoroutineFn fn) {
  auto shared = std::make_shared<const HandshakeCoroutineFn>(std::move(fn));
  return [shared](Channel& channel, Handshake handshake) {
    serve<Message>(channel, [shared, kept = std::make_shared<const Handshake>(std::move(handshake))](
                                Connection<Message>& c) { return run_with_handshake(shared, kept, c); });
  };
}

http::Router::RouteFn upgrade(Callbacks callbacks, UpgradeOptions options) {
  return make_route(std::move(options), tail_for(std::move(callbacks)));
}

http::Router::RouteFn upgrade(CoroutineFn fn, UpgradeOptions options) {
  return make_route(std::move(options), tail_for(std::move(fn)));
}

http::Router::RouteFn upgrade(HandshakeCoroutineFn fn, UpgradeOptions options) {
  return make_route(std::move(options), tail_for(std::move(fn)));
}

std::optional<std::string_view> Handshake::header(std::string_view name) const noexcept {
  for (const auto& [field, value] : headers) {
    if (iequals(field, name)) return std::string_view(value);
  }
  return std::nullopt;
}

}  // namespace weft::ws
