#include "weft/codec/http1/server_codec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "date_cache.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft::http {
namespace {

constexpr std::size_t kCopyBodyBelow = 8192;  // larger owned bodies are written without copying
constexpr std::size_t kMaxOutSizeHint = 64 * 1024;
constexpr std::uint8_t kKeepAlive = 1, kHttp10 = 2, kHeadRequest = 4;

void put(ByteBuf& out, std::string_view s) { out.write_bytes(s.data(), s.size()); }

// "HTTP/1.1 200 OK\r\n" into `out` (64 bytes); returns its length.
std::size_t format_status_line(char* out, int status) {
  if (status == 200) {
    std::memcpy(out, "HTTP/1.1 200 OK\r\n", 17);
    return 17;
  }
  std::string_view reason = reason_phrase(status);
  char* p = out;
  std::memcpy(p, "HTTP/1.1 ", 9);
  p += 9;
  p = std::to_chars(p, p + 8, status).ptr;
  *p++ = ' ';
  std::memcpy(p, reason.data(), reason.size());  // reason phrases are at most 31 bytes
  p += reason.size();
  *p++ = '\r';
  *p++ = '\n';
  return static_cast<std::size_t>(p - out);
}

// "Content-Length: N\r\n" into `out` (48 bytes); returns its length.
std::size_t format_content_length(char* out, std::size_t n) {
  std::memcpy(out, "Content-Length: ", 16);
  char* p = std::to_chars(out + 16, out + 40, n).ptr;
  *p++ = '\r';
  *p++ = '\n';
  return static_cast<std::size_t>(p - out);
}

enum class ConnectionLine : std::uint8_t { none, close, keep_alive };

std::string_view connection_line_text(ConnectionLine line) {
  switch (line) {
    case ConnectionLine::close:
      return "Connection: close\r\n";
    case ConnectionLine::keep_alive:
      return "Connection: keep-alive\r\n";
    case ConnectionLine::none:
      break;
  }
  return {};
}

// What a response head without per-response headers is made of. Equal keys, equal heads.
struct HeadKey {
  int status = -1;
  std::uint64_t shared_block = 0;  // HeaderBlock::id()
  std::time_t date_second = -1;
  std::size_t body_size = 0;
  ConnectionLine connection = ConnectionLine::none;
  bool operator==(const HeadKey&) const = default;
};

// Heads encoded on this thread (each loop is a thread), a few slots chosen by key, so that routes
// served in turn keep theirs. The responses of a route are alike, so most heads become one copy
// instead of formatting and six small copies.
struct CachedHead {
  HeadKey key;
  std::size_t size = 0;  // 0: empty
  char bytes[512];
};
thread_local std::array<CachedHead, 4> t_heads;

CachedHead& cached_head_slot(const HeadKey& key) noexcept {
  const auto hash = key.shared_block * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(key.status) ^ key.body_size;
  return t_heads[(hash >> 32) % t_heads.size()];
}

struct HeadParts {
  int status;
  std::string_view date_line, shared, headers, body;
  std::size_t body_copy;  // bytes of `body` to copy after the head
  std::string_view connection_line;
};

// Formats a head that is not cached (and caches it when `cache` is given), then the copied body.
// Out of line: its buffers would otherwise cost every cached response a larger frame.
[[gnu::noinline]] void write_new_head(ByteBuf& out, Context& ctx, std::size_t size_hint, const HeadParts& parts,
                                     CachedHead* cache, const HeadKey& key) {
  char status_line[64];
  const std::size_t status_size = format_status_line(status_line, parts.status);
  char length_line[48];
  std::size_t length_size = 0;
  const bool interim = parts.status >= 100 && parts.status < 200;
  if (!interim && parts.status != 204 && parts.status != 304) {
    length_size = format_content_length(length_line, parts.body.size());
  }
  const std::size_t head_size = status_size + parts.date_line.size() + parts.shared.size() + parts.headers.size() +
                                length_size + parts.connection_line.size() + 2;
  const std::size_t body_copy = parts.body_copy;
  if (!out.has_storage()) out = ctx.allocator().buffer(std::max(size_hint, head_size + body_copy));
  out.ensure_writable(head_size + body_copy);
  char* const head = reinterpret_cast<char*>(out.write_ptr());
  char* w = head;
  auto put_raw = [&w](const char* p, std::size_t n) {
    if (n == 0) return;  // empty views may have a null data pointer
    std::memcpy(w, p, n);
    w += n;
  };
  put_raw(status_line, status_size);
  put_raw(parts.date_line.data(), parts.date_line.size());
  put_raw(parts.shared.data(), parts.shared.size());
  put_raw(parts.headers.data(), parts.headers.size());
  put_raw(length_line, length_size);
  put_raw(parts.connection_line.data(), parts.connection_line.size());
  put_raw("\r\n", 2);
  put_raw(parts.body.data(), body_copy);
  out.advance_writer(head_size + body_copy);
  if (cache != nullptr && head_size <= sizeof cache->bytes) {
    std::memcpy(cache->bytes, head, head_size);
    cache->size = head_size;
    cache->key = key;
  }
}

void put_status_line(ByteBuf& out, int status) {
  char line[64];
  out.write_bytes(line, format_status_line(line, status));
}

}  // namespace

ServerCodec::ServerCodec(Limits limits) : limits_(limits) {}

void ServerCodec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  ByteBuf& bytes = message.as<ByteBuf>();
  if (state_ == State::closed) return;  // answered with an error or Connection: close; the rest is dropped
  if (!in_read_batch_) {
    const DateLine date = current_date_line();
    batch_date_line_ = date.line;
    batch_date_second_ = date.second;
    in_read_batch_ = true;
  }
  detail::append_input(in_, std::move(bytes));
  decode(ctx);
}

void ServerCodec::decode(Context& ctx) {
  bool progressed = true;
  while (progressed && state_ != State::closed && in_.is_readable()) {
    progressed = state_ == State::head ? decode_head(ctx) : decode_body(ctx);
  }
  if (state_ == State::closed) in_.release();
  detail::keep_undecoded(in_);
  if (state_ == State::closed) return;
  if (state_ != State::head || in_.is_readable()) {
    arm_request_timer(ctx);
  } else {
    cancel_request_timer(ctx);
  }
}

bool ServerCodec::decode_head(Context& ctx) {
  // Parsed on this thread's stack, which is in cache; the codec's own request_ is not when the
  // connection is one of many. request_ keeps the head only while a body is still arriving.
  HttpRequest request;
  RequestHead& head = request.head_;
  ParseResult r = parse_request_head(in_.view(), head, limits_);
  if (r.kind == ParseResult::Kind::incomplete) return false;
  if (r.kind == ParseResult::Kind::error) {
    fail(ctx, r.status, r.reason);
    return false;
  }
  // The head's views point into in_, which lends its bytes until the request is emitted (see HttpRequest).
  request.lend_head_bytes(in_, in_.reader_index(), r.consumed);
  in_.skip_bytes(r.consumed);
  if (head.chunked) {
    if (head.expect_continue) write_interim_continue(ctx);
    body_decoder_.start_chunked();
    request_ = std::move(request);
    state_ = State::body;
    return true;
  }
  const std::uint64_t length = head.content_length.value_or(0);
  if (length > limits_.max_body) {
    fail(ctx, 413, "declared body too large");
    return false;
  }
  if (in_.readable_bytes() >= length) {
    if (length > 0) request.body_ = in_.read_slice(static_cast<std::size_t>(length));  // no copy
    emit_request(ctx, request);
    return true;
  }
  if (head.expect_continue) write_interim_continue(ctx);
  request.body_ = ctx.allocator().buffer(static_cast<std::size_t>(length), static_cast<std::size_t>(length));
  body_decoder_.start_fixed(length);
  request_ = std::move(request);
  state_ = State::body;
  return true;
}

bool ServerCodec::decode_body(Context& ctx) {
  const std::size_t before = in_.readable_bytes();
  auto r = body_decoder_.decode(in_, request_.body_, ctx.allocator(), limits_);
  if (r.status == detail::BodyDecoder::Status::error) {
    fail(ctx, r.http_status, r.reason);
    return false;
  }
  if (r.status == detail::BodyDecoder::Status::done) {
    emit_request(ctx, request_);
    request_.head_bytes_.release();
    request_.body_.release();
    return true;
  }
  return in_.readable_bytes() != before;
}

void ServerCodec::emit_request(Context& ctx, HttpRequest& request) {
  const RequestHead& head = request.head_;
  std::uint8_t flags = static_cast<std::uint8_t>((head.keep_alive ? kKeepAlive : 0) |
                                                 (head.version == Version::http10 ? kHttp10 : 0) |
                                                 (head.method == "HEAD" ? kHeadRequest : 0));
  pending_.push_back(flags);
  state_ = head.keep_alive ? State::head : State::closed;
  if (pending_.size() >= limits_.max_pipelined && !reading_paused_) {
    reading_paused_ = true;  // the client runs far ahead of the responses: stop reading
    ctx.channel().set_auto_read(false);
  }
  lending_ = true;  // in_ must keep the lent head bytes until fire_read returns
  ctx.fire_read(std::move(request));
  lending_ = false;
}

void ServerCodec::fail(Context& ctx, int status, std::string_view reason) {
  log(LogLevel::debug, "channel {}: HTTP {} ({}); closing", ctx.channel().id(), status, reason);
  state_ = State::closed;
  cancel_request_timer(ctx);
  if (!out_.has_storage()) out_ = ctx.allocator().buffer(256);
  put_status_line(out_, status);
  put(out_, date_header_line());
  put(out_, "Content-Length: 0\r\nConnection: close\r\n\r\n");
  close_after_flush_ = true;
  flush(ctx);
}

void ServerCodec::write_interim_continue(Context& ctx) {
  if (!out_.has_storage()) out_ = ctx.allocator().buffer(64);
  put(out_, "HTTP/1.1 100 Continue\r\n\r\n");
  flush(ctx);
}

void ServerCodec::write_message(Context& ctx, MessageRef message) {
  if (message.is<HttpResponse>()) {
    encode(ctx, message.as<HttpResponse>());
    return;
  }
  if (message.is<ByteBuf>()) {  // raw bytes keep their place after what was encoded so far
    if (out_.is_readable()) ctx.write(std::move(out_));
    ctx.write(std::move(message.as<ByteBuf>()));
    return;
  }
  throw_type_mismatch(ctx, "outbound", typeid(HttpResponse), message.type());
}

void ServerCodec::encode(Context& ctx, HttpResponse& response) {
  const int status = response.status();
  const bool interim = status >= 100 && status < 200;
  bool last = response.closes_connection();
  std::uint8_t flags = kKeepAlive;
  if (!interim && pending_.size() > 0) flags = pending_.pop_front();
  if (!(flags & kKeepAlive)) last = true;

  std::string_view shared = response.shared_header_block();
  std::string_view headers = response.header_block();
  // A response to HEAD has the headers a GET would get, Content-Length included, and no content.
  const bool omit_body = (flags & kHeadRequest) != 0;
  std::string_view body = response.body_bytes();
  const bool body_by_reference = !omit_body && body.size() >= kCopyBodyBelow && response.owned_body().has_storage();
  const std::size_t body_copy = omit_body || body_by_reference ? 0 : body.size();
  const ConnectionLine connection = last ? ConnectionLine::close
                                         : (flags & kHttp10) ? ConnectionLine::keep_alive : ConnectionLine::none;
  const DateLine date = in_read_batch_ ? DateLine{batch_date_line_, batch_date_second_} : current_date_line();
  const HeadKey key{status, response.shared_header_block_id(), date.second, body.size(), connection};
  CachedHead& cache = cached_head_slot(key);
  const bool cacheable = headers.empty();  // per-response headers are not worth remembering
  if (cacheable && cache.size != 0 && cache.key == key) {
    if (!out_.has_storage()) out_ = ctx.allocator().buffer(std::max(out_size_hint_, cache.size + body_copy));
    out_.ensure_writable(cache.size + body_copy);
    char* w = reinterpret_cast<char*>(out_.write_ptr());
    std::memcpy(w, cache.bytes, cache.size);
    if (body_copy != 0) std::memcpy(w + cache.size, body.data(), body_copy);
    out_.advance_writer(cache.size + body_copy);
  } else {
    write_new_head(out_, ctx, out_size_hint_,
                   {status, date.line, shared, headers, body, body_copy, connection_line_text(connection)},
                   cacheable ? &cache : nullptr, key);
  }
  if (body_by_reference) {
    ctx.write(std::move(out_));
    ctx.write(std::move(response.owned_body()));
  }
  if (last) {
    close_after_flush_ = true;
    state_ = State::closed;
  }
  if (reading_paused_ && pending_.size() < limits_.max_pipelined / 2) {
    reading_paused_ = false;
    ctx.channel().set_auto_read(true);
  }
}

void ServerCodec::flush(Context& ctx) {
  if (out_.is_readable()) {
    // The next batch is likely alike: start its buffer at this one's size (bounded), not grow it.
    out_size_hint_ = std::clamp<std::size_t>(out_.readable_bytes(), 2048, kMaxOutSizeHint);
    ctx.write(std::move(out_));
  }
  in_read_batch_ = false;  // a later response reads the clock again, whatever else the pipeline does
  ctx.flush();
  if (close_after_flush_) {
    close_after_flush_ = false;
    ctx.channel().close_after_flush();
  }
}

void ServerCodec::channel_read_complete(Context& ctx) {
  in_read_batch_ = false;
  ctx.fire_read_complete();
}

void ServerCodec::arm_request_timer(Context& ctx) {
  if (request_timer_ != 0) return;
  request_timer_ = ctx.loop().schedule(limits_.request_timeout, [this, &ctx] {
    request_timer_ = 0;
    if (state_ != State::closed && (state_ != State::head || in_.is_readable())) fail(ctx, 408, "request timeout");
  });
}

void ServerCodec::cancel_request_timer(Context& ctx) {
  if (request_timer_ == 0) return;
  ctx.loop().cancel(request_timer_);
  request_timer_ = 0;
}

void ServerCodec::channel_inactive(Context& ctx) {
  cancel_request_timer(ctx);
  state_ = State::closed;
  if (!lending_) in_.release();  // else decode() releases it once the handler has returned
  out_.release();
  ctx.fire_channel_inactive();
}

void ServerCodec::exception_caught(Context& ctx, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError& e) {
    log(LogLevel::debug, "channel {}: {}", ctx.channel().id(), e.what());
    ctx.close();
  } catch (...) {
    ctx.fire_exception(std::current_exception());
  }
}

void ServerCodec::handler_removed(Context& ctx) {
  cancel_request_timer(ctx);
  if (in_.is_readable() && !ctx.channel().is_open() && !lending_) in_.release();
}

}  // namespace weft::http
