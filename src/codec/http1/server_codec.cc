#include "weft/codec/http1/server_codec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <memory>

#include "body_sink.h"
#include "body_source.h"
#include "date_cache.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/channel/file_region_writer.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/core/error.h"
#include "weft/core/log.h"
#include "weft/metrics/http_server_metrics.h"

namespace weft::http {
namespace {

constexpr std::size_t kCopyBodyBelow = 8192;  // larger owned bodies are written without copying
constexpr std::size_t kMaxOutSizeHint = 64 * 1024;
// Flags of a pending request. kAnswered: its answer came early and waits in early_.
constexpr std::uint8_t kKeepAlive = 1, kHttp10 = 2, kHeadRequest = 4, kAnswered = 8;
// Bits 4..6: the request's metrics::MethodClass; kCounted: instrumentation was on when it was read.
constexpr int kMethodShift = 4;
constexpr std::uint8_t kMethodMask = 7, kCounted = 128;

// metrics::method_class of a parsed request's method, whose bytes are followed by the request
// line's SP: a 3-letter one is told by one 4-byte load.
metrics::MethodClass method_class_of(std::string_view method) noexcept {
  if (method.size() == 3) {
    std::uint32_t word;
    std::memcpy(&word, method.data(), 4);
    const auto word_of = [](const char(&s)[5]) {
      std::uint32_t w;
      std::memcpy(&w, s, 4);
      return w;
    };
    return word == word_of("GET ")   ? metrics::MethodClass::get
           : word == word_of("PUT ") ? metrics::MethodClass::put
                                     : metrics::MethodClass::other;
  }
  return metrics::method_class(method);
}

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
  std::size_t body_size;  // Content-Length: body's, or a file body's
  std::size_t body_copy;  // bytes of `body` to copy after the head
  std::string_view connection_line;
  bool streamed = false;               // a streamed body: framing_line instead of Content-Length
  std::string_view framing_line = {};  // (empty: none, the close ends the body)
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
  if (parts.streamed) {
    std::memcpy(length_line, parts.framing_line.data(), parts.framing_line.size());
    length_size = parts.framing_line.size();
  } else if (!interim && parts.status != 204 && parts.status != 304) {
    length_size = format_content_length(length_line, parts.body_size);
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
ServerCodec::~ServerCodec() {
  if (body_in_ != nullptr) body_in_->detach();
  if (body_out_ != nullptr) body_out_->detach();
}

void ServerCodec::handler_added(Context& ctx) {
  ctx_ = &ctx;
  // The end of the client's input is answered (every answer owed still goes out), not a reset.
  ChannelConfig& config = ctx.channel().config();
  config.allow_half_closure = true;
  // A transport that blocks in its sends (blocking) bounds them itself.
  if (config.send_timeout == Duration::zero()) config.send_timeout = limits_.send_timeout;
  if (ctx.channel().is_active()) {
    last_activity_ = ctx.loop().now();
    want_deadline(ctx, last_activity_ + limits_.idle_timeout);
  }
}

void ServerCodec::channel_active(Context& ctx) {
  last_activity_ = ctx.loop().now();
  want_deadline(ctx, last_activity_ + limits_.idle_timeout);
  ctx.fire_channel_active();
}

void ServerCodec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  ByteBuf& bytes = message.as<ByteBuf>();
  if (state_ == State::closed) return;  // the connection is ending: what still arrives is dropped
  if (state_ == State::switched) [[unlikely]] {
    // Another protocol's bytes: kept for the codec that takes over (take_switched_input).
    weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
    return;
  }
  if (!in_read_batch_) {
    const DateLine date = current_date_line();
    batch_date_line_ = date.line;
    batch_date_second_ = date.second;
    batch_now_ = ctx.loop().now();
    in_read_batch_ = true;
  }
  last_activity_ = batch_now_;
  weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
  decode(ctx);
}

void ServerCodec::decode(Context& ctx) {
  bool progressed = true;
  // Suspended reading also stops decoding what is buffered: the client is too far ahead.
  while (progressed && (state_ == State::head || state_ == State::body || state_ == State::body_stream) &&
         in_.is_readable() && !reading_.held()) {
    progressed = state_ == State::head          ? decode_head(ctx)
                 : state_ == State::body_stream ? decode_body_stream(ctx)
                                                : decode_body(ctx);
  }
  if (state_ == State::closed) in_.release();
  detail::keep_undecoded(in_);
  if (state_ == State::closed || state_ == State::switched || state_ == State::awaiting_switch) return;
  if (state_ == State::body_stream) [[unlikely]] {
    // A streamed body's time runs while bytes are owed, not while its reader holds the socket's reading.
    request_started_ = body_reading_.held() ? TimePoint{} : (in_read_batch_ ? batch_now_ : ctx.loop().now());
    if (request_started_ != TimePoint{}) want_deadline(ctx, request_started_ + limits_.request_timeout);
  } else if (state_ == State::head && !in_.is_readable()) {
    request_started_ = {};
  } else if (request_started_ == TimePoint{}) {
    request_started_ = in_read_batch_ ? batch_now_ : ctx.loop().now();
    want_deadline(ctx, request_started_ + limits_.request_timeout);
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
  // RFC 9110 10.1.1: no 100 Continue to an HTTP/1.0 client.
  const bool send_continue = head.expect_continue && head.version != Version::http10;
  const bool has_body = head.chunked || head.content_length.value_or(0) > 0;
  if (has_body && !stream_body_test_found_) [[unlikely]]
    find_stream_body_test(ctx);
  if (has_body && stream_body_test_ && !head.upgrade && stream_body_test_(head.method, head.path)) [[unlikely]] {
    return start_body_stream(ctx, request, send_continue);
  }
  if (head.chunked) {
    if (send_continue) write_interim_continue(ctx);
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
  if (send_continue) write_interim_continue(ctx);
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

void ServerCodec::emit_request(Context& ctx, HttpRequest& request, bool body_follows) {
  const RequestHead& head = request.head_;
  std::uint8_t flags =
      static_cast<std::uint8_t>((head.keep_alive ? kKeepAlive : 0) | (head.version == Version::http10 ? kHttp10 : 0));
  if (metrics::instrumentation_enabled()) {
    // One look at the method for both: HEAD's flag and the metrics' class.
    const metrics::MethodClass method = method_class_of(head.method);
    flags |= static_cast<std::uint8_t>(kCounted | (static_cast<unsigned>(method) << kMethodShift) |
                                       (method == metrics::MethodClass::head ? kHeadRequest : 0));
  } else {
    flags |= head.method == "HEAD" ? kHeadRequest : 0;
  }
  const std::uint64_t sequence = front_sequence_ + pending_.size();
  pending_.push_back(flags);
  request.sequence_ = sequence;
  request_started_ = {};  // the next request's time starts with its first byte
  state_ = body_follows ? State::body_stream : head.keep_alive ? State::head : State::closed;
  if (head.upgrade && head.keep_alive && !body_follows) [[unlikely]] {
    // Whatever follows may be another protocol's: held, undecoded, until this request's answer.
    state_ = State::awaiting_switch;
    reading_.hold(ctx.channel());
  }
  // Unwritability comes as an event, and the channel's queue is looked at when it is flushed: here
  // only what grows with each request.
  if (pending_.size() >= limits_.max_pipelined || out_.readable_bytes() + early_bytes_ >= limits_.max_unsent_bytes)
      [[unlikely]] {
    update_read_suspension(ctx);
  }
  const std::uint64_t outer = dispatching_;
  dispatching_ = sequence;
  lending_ = true;  // in_ must keep the lent head bytes until fire_read returns
  ctx.fire_read(std::move(request));
  lending_ = false;
  dispatching_ = outer;
}

// On every answer: kept short, and in line with its callers.
[[gnu::always_inline]] inline void ServerCodec::note_answer(Context& ctx, std::uint8_t flags, int status) noexcept {
  if (!(flags & kCounted)) return;
  // Alike answers (status, flags: the method) are counted here and observed together at the flush.
  const int kind = (status << 8) | flags;
  if (kind != answers_kind_) [[unlikely]] {
    record_answers(ctx);
    answers_kind_ = kind;
  }
  ++answers_;
}

[[gnu::noinline]] void ServerCodec::record_answers(Context& ctx) noexcept {
  if (answers_ == 0) return;
  // From the latest read (batch_now_, the clock read its batch made anyway) to now.
  metrics::record_http_server_request(metrics::HttpProtocol::http1,
                                      static_cast<metrics::MethodClass>((answers_kind_ >> kMethodShift) & kMethodMask),
                                      answers_kind_ >> 8, ctx.loop().now() - batch_now_, answers_);
  answers_ = 0;
}

void ServerCodec::fail(Context& ctx, int status, std::string_view reason) {
  if (body_in_ != nullptr) end_body_stream(std::make_exception_ptr(HttpProtocolError(status, reason)));
  log(LogLevel::debug, "channel {}: HTTP {} ({}); closing after the answers owed", ctx.channel().id(), status, reason);
  ctx.channel().note_close_reason(status == 408 ? CloseReason::timeout : CloseReason::protocol_error);
  state_ = State::closed;
  request_started_ = {};
  error_status_ = status;
  finish_if_done(ctx);
}

void ServerCodec::write_interim_continue(Context& ctx) {
  // For the request whose body is about to arrive: it takes the next sequence once it is whole.
  const std::uint64_t sequence = front_sequence_ + pending_.size();
  constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  if (!pending_.empty()) {
    early_.push_back({sequence, ByteBuf::copy_of(kContinue), ByteBuf(), false, false, FileRegion(), nullptr});
    early_bytes_ += kContinue.size();
    return;
  }
  if (!out_.has_storage()) out_ = ctx.allocator().buffer(64);
  put(out_, kContinue);
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

// A file body goes through a FileRegionWriter, added before the codec the first time one is sent.
[[gnu::noinline]] void ServerCodec::write_file(Context& ctx, FileRegion file) {
  Pipeline& pipeline = ctx.pipeline();
  if (pipeline.context(FileRegionWriter::kName) == nullptr) {
    pipeline.add_before(ctx.name(), FileRegionWriter::kName, std::make_shared<FileRegionWriter>());
  }
  ctx.write(std::move(file));
}

std::uint64_t ServerCodec::answered_sequence(const HttpResponse& response) const noexcept {
  if (response.request_sequence() != 0) return response.request_sequence();
  const std::size_t n = pending_.size();
  if (dispatching_ >= front_sequence_ && dispatching_ - front_sequence_ < n &&
      !(pending_[static_cast<std::size_t>(dispatching_ - front_sequence_)] & kAnswered)) {
    return dispatching_;  // a handler answering the request it is being handed
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!(pending_[i] & kAnswered)) return front_sequence_ + i;  // the oldest without an answer
  }
  return 0;
}

// Encodes `response` for a request with `flags` into `out`; a large owned body goes to *body_out
// when given, else straight after `out` into the channel.
[[gnu::always_inline]] inline void ServerCodec::encode_into(Context& ctx, ByteBuf& out, ByteBuf* body_out,
                                                            HttpResponse& response, std::uint8_t flags,
                                                            FileRegion* file_out,
                                                            std::shared_ptr<detail::BodySink>* stream_out) {
  if (response.producer()) [[unlikely]] {
    std::shared_ptr<detail::BodySink> sink = encode_stream_head(ctx, out, response, flags);
    if (stream_out != nullptr) *stream_out = std::move(sink);
    return;
  }
  const int status = response.status();
  const bool last = response.closes_connection() || !(flags & kKeepAlive);
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
  const std::size_t body_size = response.body_size();
  const HeadKey key{status, response.shared_header_block_id(), date.second, body_size, connection};
  CachedHead& cache = cached_head_slot(key);
  const bool cacheable = headers.empty();  // per-response headers are not worth remembering
  if (cacheable && cache.size != 0 && cache.key == key) {
    if (!out.has_storage()) out = ctx.allocator().buffer(std::max(out_size_hint_, cache.size + body_copy));
    out.ensure_writable(cache.size + body_copy);
    char* w = reinterpret_cast<char*>(out.write_ptr());
    std::memcpy(w, cache.bytes, cache.size);
    if (body_copy != 0) std::memcpy(w + cache.size, body.data(), body_copy);
    out.advance_writer(cache.size + body_copy);
  } else {
    write_new_head(out, ctx, out_size_hint_,
                   {status, date.line, shared, headers, body, body_size, body_copy, connection_line_text(connection)},
                   cacheable ? &cache : nullptr, key);
  }
  if (response.file_body()) [[unlikely]] {
    FileRegion file = std::move(response.file_body());
    if (omit_body) return;
    if (file_out != nullptr) {
      *file_out = std::move(file);
    } else {
      ctx.write(std::move(out));
      write_file(ctx, std::move(file));
    }
    return;
  }
  if (body_by_reference) {
    if (body_out != nullptr) {
      *body_out = std::move(response.owned_body());
    } else {
      ctx.write(std::move(out));
      ctx.write(std::move(response.owned_body()));
    }
  }
}

// The head of a streamed answer: chunked, or its declared Content-Length, or (HTTP/1.0 without a
// length) neither, the connection ending after the body. Returns the body's sink, or null when the
// answer has no body to produce (HEAD, 204, 304, an interim answer).
std::shared_ptr<detail::BodySink> ServerCodec::encode_stream_head(Context& ctx, ByteBuf& out, HttpResponse& response,
                                                                  std::uint8_t flags) {
  const int status = response.status();
  const std::optional<std::uint64_t> length = response.stream_length();
  const bool bodiless = status < 200 || status == 204 || status == 304;
  const bool chunked = !length && !(flags & kHttp10);
  if (!bodiless && !length && (flags & kHttp10)) response.close_connection();  // the close ends the body
  const bool last = response.closes_connection() || !(flags & kKeepAlive);
  const ConnectionLine connection = last                ? ConnectionLine::close
                                    : (flags & kHttp10) ? ConnectionLine::keep_alive
                                                        : ConnectionLine::none;
  char framing[48];
  std::string_view framing_line;  // none when bodiless, or when the close ends the body
  if (!bodiless && length) {
    framing_line = std::string_view(framing, format_content_length(framing, static_cast<std::size_t>(*length)));
  } else if (!bodiless && chunked) {
    framing_line = "Transfer-Encoding: chunked\r\n";
  }
  const DateLine date = in_read_batch_ ? DateLine{batch_date_line_, batch_date_second_} : current_date_line();
  const HeadParts parts{status,
                        date.line,
                        response.shared_header_block(),
                        response.header_block(),
                        {},
                        0,
                        0,
                        connection_line_text(connection),
                        true,
                        framing_line};
  write_new_head(out, ctx, out_size_hint_, parts, nullptr, HeadKey{});
  if (bodiless || (flags & kHeadRequest)) return nullptr;
  auto sink = std::make_shared<detail::BodySink>(ctx.loop(), this, length);
  sink->producer_ = response.producer();
  sink->chunked_ = chunked;
  return sink;
}

void ServerCodec::encode(Context& ctx, HttpResponse& response) {
  const int status = response.status();
  // The common case, kept short: the answer to the oldest request owed -- made while that request is
  // handed over, or later in turn -- on a connection that goes on.
  std::uint64_t sequence = response.request_sequence();
  if (sequence == 0) sequence = dispatching_ != 0 ? dispatching_ : front_sequence_;
  if (sequence == front_sequence_ && !pending_.empty() && status >= 200 && !finished_ && body_out_ == nullptr &&
      !response.producer()) [[likely]] {
    const std::uint8_t flags = pending_.pop_front();
    ++front_sequence_;
    note_answer(ctx, flags, status);
    encode_into(ctx, out_, nullptr, response, flags);
    const bool last = response.closes_connection() || !(flags & kKeepAlive);
    if (last || !early_.empty() || reading_.held()) [[unlikely]] {
      answer_sent(ctx, last);
      if (!early_.empty()) send_early_answers(ctx);
      return;
    }
    if (pending_.empty()) {
      last_activity_ = in_read_batch_ ? batch_now_ : ctx.loop().now();
      if (state_ == State::closed) finish_if_done(ctx);
    }
    return;
  }
  encode_out_of_turn(ctx, response);
}

void ServerCodec::encode_out_of_turn(Context& ctx, HttpResponse& response) {
  const int status = response.status();
  if (status == 101) {
    switch_protocols(ctx, response);
    return;
  }
  if (status >= 100 && status < 200) {
    // An interim answer goes with the request it precedes: the oldest one without an answer.
    std::uint64_t sequence = answered_sequence(response);
    if (sequence == 0) sequence = front_sequence_ + pending_.size();
    if (sequence == front_sequence_) {
      encode_into(ctx, out_, nullptr, response, kKeepAlive);
    } else {
      hold_early(ctx, response, sequence, kKeepAlive);
      early_.back().final = false;
    }
    return;
  }
  if (finished_ || (state_ == State::closed && pending_.empty())) {
    log(LogLevel::debug, "channel {}: response {} after the connection's last answer; dropped", ctx.channel().id(),
        status);
    return;
  }
  if (pending_.empty()) {
    // Not an answer to a request (none is waiting): written as it comes.
    encode_into(ctx, out_, nullptr, response, kKeepAlive);
    answer_sent(ctx, response.closes_connection());
    return;
  }
  const std::uint64_t sequence = answered_sequence(response);
  const std::uint64_t index = sequence - front_sequence_;
  if (sequence == 0 || sequence < front_sequence_ || index >= pending_.size() ||
      (pending_[static_cast<std::size_t>(index)] & kAnswered)) {
    log(LogLevel::warn, "channel {}: response {} answers request {}, which has its answer already or is unknown; dropped",
        ctx.channel().id(), status, sequence);
    return;
  }
  const std::uint8_t flags = pending_[static_cast<std::size_t>(index)];
  if (index != 0) {
    note_answer(ctx, flags, status);
    hold_early(ctx, response, sequence, flags);
    pending_[static_cast<std::size_t>(index)] = static_cast<std::uint8_t>(flags | kAnswered);
    return;
  }
  if (response.producer()) [[unlikely]] {
    note_answer(ctx, flags, status);
    std::shared_ptr<detail::BodySink> sink;
    encode_into(ctx, out_, nullptr, response, flags, nullptr, &sink);
    if (sink != nullptr) {
      // It stays the oldest request owed until its body has ended: the answers behind it wait.
      pending_[0] = static_cast<std::uint8_t>(flags | kAnswered);
      if (response.closes_connection()) pending_[0] = static_cast<std::uint8_t>(pending_[0] & ~kKeepAlive);
      start_stream(ctx, std::move(sink));
      return;
    }
    pending_.drop_front();  // HEAD, 204, 304: the head is the whole answer
    ++front_sequence_;
  } else {
    pending_.drop_front();
    ++front_sequence_;
    note_answer(ctx, flags, status);
    encode_into(ctx, out_, nullptr, response, flags);
  }
  answer_sent(ctx, response.closes_connection() || !(flags & kKeepAlive));
  if (!early_.empty()) send_early_answers(ctx);
}

// 101 Switching Protocols: the final answer to the oldest request, which must be the only one owed
// (a request pipelined behind an upgrade would be read by the wrong protocol). Nothing more is
// decoded; what arrives is kept for take_switched_input().
void ServerCodec::switch_protocols(Context& ctx, HttpResponse& response) {
  const std::uint64_t sequence = answered_sequence(response);
  if (finished_ || pending_.size() != 1 || (sequence != 0 && sequence != front_sequence_) ||
      (state_ != State::head && state_ != State::awaiting_switch)) {
    log(LogLevel::warn, "channel {}: 101 without a single request owed that it answers; closing", ctx.channel().id());
    finished_ = true;
    ctx.close();
    return;
  }
  const std::uint8_t flags = pending_.pop_front();
  ++front_sequence_;
  note_answer(ctx, flags, 101);
  encode_into(ctx, out_, nullptr, response, kKeepAlive);
  state_ = State::switched;
  request_started_ = {};
  unwritable_since_ = {};
  stop_deadline(ctx);
  reading_.release(ctx.channel());
}

ByteBuf ServerCodec::take_switched_input() noexcept {
  if (state_ != State::switched) return {};
  if (!in_.is_readable()) in_.release();  // not the upgrade request's buffer, held for nothing
  return std::move(in_);
}

void ServerCodec::hold_early(Context& ctx, HttpResponse& response, std::uint64_t sequence, std::uint8_t flags) {
  // Encoded now: what the response borrows (a body view) may not outlive this call.
  EarlyAnswer early{sequence, ByteBuf(), ByteBuf(), true, false, FileRegion(), nullptr};
  encode_into(ctx, early.bytes, &early.body, response, flags, &early.file, &early.stream);
  early.last = response.closes_connection() || !(flags & kKeepAlive);  // after: a streamed body may end it
  early_bytes_ += early.bytes.readable_bytes() + early.body.readable_bytes();
  early_.push_back(std::move(early));
  update_read_suspension(ctx);
}

// Sends the early answers whose turn has come, in order.
void ServerCodec::send_early_answers(Context& ctx) {
  for (;;) {
    auto it = std::find_if(early_.begin(), early_.end(),
                           [this](const EarlyAnswer& a) { return a.sequence == front_sequence_; });
    if (it == early_.end()) break;
    EarlyAnswer early = std::move(*it);
    early_.erase(it);
    early_bytes_ -= early.bytes.readable_bytes() + early.body.readable_bytes();
    if (out_.is_readable()) ctx.write(std::move(out_));
    ctx.write(std::move(early.bytes));
    if (early.body.is_readable()) ctx.write(std::move(early.body));
    if (early.file) write_file(ctx, std::move(early.file));
    if (!early.final) continue;  // 100 Continue: the final answer follows
    if (early.stream != nullptr) [[unlikely]] {
      if (early.last) pending_[0] = static_cast<std::uint8_t>(pending_[0] & ~kKeepAlive);
      start_stream(ctx, std::move(early.stream));
      break;  // the answers behind wait for its end
    }
    pending_.drop_front();
    ++front_sequence_;
    answer_sent(ctx, early.last);
    if (finished_ || close_after_flush_) break;
  }
  update_read_suspension(ctx);
}

// A final answer has gone into the output: the connection goes on, waits, or ends.
void ServerCodec::answer_sent(Context& ctx, bool last) {
  if (last) {
    state_ = State::closed;
    pending_.clear();  // requests after the last answer are never answered
    early_.clear();
    early_bytes_ = 0;
    error_status_ = 0;
    close_after_flush_ = true;
    finished_ = true;
    return;
  }
  if (pending_.empty()) {
    last_activity_ = in_read_batch_ ? batch_now_ : ctx.loop().now();
    // The request that asked to upgrade got another answer: what followed it is HTTP again.
    if (state_ == State::awaiting_switch) state_ = State::head;
    finish_if_done(ctx);
  }
  update_read_suspension(ctx);
}

// Once nothing is owed: an error answer waiting for its turn goes out, or the client's input has
// ended; then the connection ends gracefully.
void ServerCodec::finish_if_done(Context& ctx) {
  if (finished_ || !pending_.empty() || state_ != State::closed) return;
  if (error_status_ == 0 && !input_ended_) return;
  finished_ = true;
  if (!early_.empty()) send_early_answers(ctx);  // an interim answer of the failed request
  if (error_status_ != 0) {
    if (!out_.has_storage()) out_ = ctx.allocator().buffer(256);
    put_status_line(out_, error_status_);
    put(out_, date_header_line());
    put_error_body(ctx, error_status_);
    error_status_ = 0;
  }
  close_after_flush_ = true;
  reading_.release(ctx.channel());
  flush(ctx);
}

// The rest of an error answer's head, and its body (Limits::error_body).
void ServerCodec::put_error_body(Context& ctx, int status) {
  ErrorBody made;
  if (limits_.error_body) {
    try {
      made = limits_.error_body(status);
    } catch (const std::exception& e) {
      log(LogLevel::error, "channel {}: the error body for {} failed: {}", ctx.channel().id(), status, e.what());
      made = {};
    }
  }
  if (!made.content_type.empty() &&
      made.content_type.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos) {
    put(out_, "Content-Type: ");
    put(out_, made.content_type);
    put(out_, "\r\n");
  }
  put(out_, "Content-Length: ");
  put(out_, std::to_string(made.body.size()));
  put(out_, "\r\nConnection: close\r\n\r\n");
  put(out_, made.body);
}

void ServerCodec::flush(Context& ctx) {
  if (out_.is_readable()) {
    // The next batch is likely alike: start its buffer at this one's size (bounded), not grow it.
    out_size_hint_ = std::clamp<std::size_t>(out_.readable_bytes(), 2048, kMaxOutSizeHint);
    ctx.write(std::move(out_));
  }
  if (answers_ != 0) record_answers(ctx);
  in_read_batch_ = false;  // a later response reads the clock again, whatever else the pipeline does
  ctx.flush();
  update_read_suspension(ctx);  // what was unsent may have left
  if (close_after_flush_) {
    close_after_flush_ = false;
    finished_ = true;
    stop_deadline(ctx);
    // A file still being sent goes first: the graceful close starts once the writer has passed it on.
    Context* writer = ctx.pipeline().context(FileRegionWriter::kName);
    if (writer != nullptr) {
      static_cast<FileRegionWriter&>(writer->handler())
          .when_drained([channel = ctx.channel().shared_from_this(), linger = limits_.linger_timeout,
                         timeout = limits_.send_timeout] { channel->close_gracefully(linger, timeout); });
    } else {
      ctx.channel().close_gracefully(limits_.linger_timeout, limits_.send_timeout);
    }
  }
}

void ServerCodec::channel_read_complete(Context& ctx) {
  in_read_batch_ = false;
  ctx.fire_read_complete();
}

void ServerCodec::user_event(Context& ctx, const std::any& event) {
  if (state_ == State::switched) {
    ctx.fire_user_event(event);
    return;
  }
  if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    end_input(ctx);
  } else if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) {
    shutdown_requested(ctx);
  }
  ctx.fire_user_event(event);
}

// The loop shuts down gracefully. Nothing owed (an idle keep-alive connection, or one whose next
// request is still arriving): the channel closes right after the event. Answers owed: the requests
// handed over so far are still answered, the last of them with Connection: close, and then the
// connection ends; nothing more is decoded from it (what is buffered or still arrives is dropped).
void ServerCodec::shutdown_requested(Context& ctx) {
  if (finished_ || pending_.empty()) return;
  ctx.channel().end_for_shutdown_itself();
  if (state_ != State::closed) {
    state_ = State::closed;
    request_started_ = {};
    if (!lending_) in_.release();  // else decode() releases it once the handler has returned
  }
  error_status_ = 0;  // bad input after the requests owed: the close answers it
  const std::size_t last = pending_.size() - 1;
  pending_[last] = static_cast<std::uint8_t>(pending_[last] & ~kKeepAlive);
  if (pending_[last] & kAnswered) {
    // Its answer is encoded already (it waits for those before it): it becomes the last one.
    const std::uint64_t sequence = front_sequence_ + last;
    for (EarlyAnswer& early : early_) {
      if (early.sequence == sequence && early.final && !early.last) make_last(ctx, early);
    }
  }
}

// Rewrites an encoded answer's head to end the connection: its connection line (the head's last,
// as encode_into() writes it) becomes Connection: close, or that line is added.
void ServerCodec::make_last(Context& ctx, EarlyAnswer& early) {
  early.last = true;
  const std::string_view bytes(reinterpret_cast<const char*>(early.bytes.read_ptr()), early.bytes.readable_bytes());
  const std::size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return;  // not a head this codec wrote
  std::string_view head = bytes.substr(0, end + 2);  // through the last field line's CRLF
  constexpr std::string_view kKeepAlive = "Connection: keep-alive\r\n";
  if (head.ends_with(kKeepAlive)) head.remove_suffix(kKeepAlive.size());
  constexpr std::string_view kClose = "Connection: close\r\n";
  const std::string_view rest = bytes.substr(end + 2);  // the blank line, then the copied body
  ByteBuf rewritten = ctx.allocator().buffer(head.size() + kClose.size() + rest.size());
  put(rewritten, head);
  put(rewritten, kClose);
  put(rewritten, rest);
  early_bytes_ += rewritten.readable_bytes();
  early_bytes_ -= early.bytes.readable_bytes();
  early.bytes = std::move(rewritten);
}

// The client sent FIN: a request still incomplete will never be; every answer owed still goes out.
void ServerCodec::end_input(Context& ctx) {
  input_ended_ = true;
  if (state_ != State::closed) {
    if (state_ == State::body || in_.is_readable()) {
      log(LogLevel::debug, "channel {}: the client's input ended inside a request; it is dropped", ctx.channel().id());
    }
    if (body_in_ != nullptr)
      end_body_stream(std::make_exception_ptr(ChannelClosedError("the client's input ended mid-body")));
    state_ = State::closed;
    request_started_ = {};
    if (!lending_) in_.release();
  }
  if (finished_) return;
  if (pending_.empty() && error_status_ == 0) {
    finished_ = true;
    close_after_flush_ = true;
    flush(ctx);
    return;
  }
  finish_if_done(ctx);
}

void ServerCodec::writability_changed(Context& ctx) {
  if (state_ == State::switched) {
    ctx.fire_writability_changed();
    return;
  }
  if (!ctx.channel().is_writable()) {
    unwritable_since_ = ctx.loop().now();
    want_deadline(ctx, unwritable_since_ + limits_.send_timeout);
  } else {
    unwritable_since_ = {};
  }
  update_read_suspension(ctx);
  if (body_out_ != nullptr && ctx.channel().is_writable()) body_out_->writable();
  ctx.fire_writability_changed();
}

// Reading (and decoding what is buffered) pauses while the client is too far ahead of its answers;
// it resumes below half of each bound, once the channel is writable again.
void ServerCodec::update_read_suspension(Context& ctx) {
  if (finished_ || state_ == State::switched || state_ == State::awaiting_switch) return;
  Channel& channel = ctx.channel();
  const std::size_t unsent = out_.readable_bytes() + early_bytes_ + channel.pending_write_bytes();
  if (!reading_.held()) {
    if (pending_.size() >= limits_.max_pipelined || unsent >= limits_.max_unsent_bytes || !channel.is_writable()) {
      reading_.hold(channel);
    }
    return;
  }
  if (pending_.size() <= limits_.max_pipelined / 2 && unsent <= limits_.max_unsent_bytes / 2 && channel.is_writable()) {
    reading_.release(channel);
    if (in_.is_readable()) resume_decoding_later(ctx);
  }
}

// Decodes what was buffered while reading was suspended. From a loop callback, not here: the
// resume may come from inside a flush or an answer, where handing the pipeline new requests would
// nest. A terminated loop has no later turn: what is buffered is not served (a running loop closes
// the connection before it terminates; one a handler kept open is its owner's to close).
void ServerCodec::resume_decoding_later(Context& ctx) {
  resume_ctx_ = &ctx;
  if (!resume_decoding_.schedule(ctx.loop())) {
    log(LogLevel::debug, "channel {}: the loop has terminated; buffered requests are not served", ctx.channel().id());
  }
}

void ServerCodec::resume_decoding() {
  Context& ctx = *resume_ctx_;
  if (state_ == State::closed || reading_.held() || !in_.is_readable()) return;
  const std::uint64_t before = front_sequence_ + pending_.size();
  decode(ctx);
  if (front_sequence_ + pending_.size() != before) ctx.fire_read_complete();  // the batch's end: handlers flush
}

void ServerCodec::want_deadline(Context& ctx, TimePoint at) {
  if (deadline_timer_ != 0) {
    if (deadline_at_ <= at) return;  // the armed one comes first and re-arms for this one
    ctx.loop().cancel(deadline_timer_);
  }
  deadline_at_ = at;
  const TimePoint now = ctx.loop().now();
  deadline_timer_ = ctx.loop().schedule(at > now ? at - now : Duration::zero(), [this, &ctx] {
    deadline_timer_ = 0;
    on_deadline(ctx);
  });
}

// One timer per connection, armed at the earliest deadline that applies; when it fires it checks
// them all against the clock and re-arms for the next.
void ServerCodec::on_deadline(Context& ctx) {
  if (finished_ || state_ == State::switched) return;
  const TimePoint now = ctx.loop().now();
  if (unwritable_since_ != TimePoint{} && now - unwritable_since_ >= limits_.send_timeout) {
    log(LogLevel::debug, "channel {}: answers not taken for {} s; closing", ctx.channel().id(),
        std::chrono::duration_cast<std::chrono::seconds>(limits_.send_timeout).count());
    finished_ = true;
    ctx.channel().note_close_reason(CloseReason::timeout);
    ctx.close();
    return;
  }
  if (request_started_ != TimePoint{} && now - request_started_ >= limits_.request_timeout) {
    fail(ctx, 408, "request timeout");
    return;
  }
  const bool idle = pending_.empty() && request_started_ == TimePoint{} && state_ == State::head;
  if (idle && now - last_activity_ >= limits_.idle_timeout) {
    log(LogLevel::debug, "channel {}: idle for {} s; closing", ctx.channel().id(),
        std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count());
    finished_ = true;
    ctx.channel().note_close_reason(CloseReason::idle_timeout);
    // Nothing is owed and nothing unread: a plain close, at once (as nginx's keepalive_timeout). A
    // lingering close would keep the connection -- on the blocking transport, its thread -- for
    // linger_timeout more, waiting for a FIN that an idle client does not send.
    ctx.close();
    return;
  }
  if (state_ == State::closed) return;
  TimePoint next = (idle ? last_activity_ : now) + limits_.idle_timeout;  // also re-checks a wait for answers
  if (request_started_ != TimePoint{}) next = std::min(next, request_started_ + limits_.request_timeout);
  if (unwritable_since_ != TimePoint{}) next = std::min(next, unwritable_since_ + limits_.send_timeout);
  want_deadline(ctx, next);
}

void ServerCodec::stop_deadline(Context& ctx) {
  if (deadline_timer_ == 0) return;
  ctx.loop().cancel(deadline_timer_);
  deadline_timer_ = 0;
}

void ServerCodec::channel_inactive(Context& ctx) {
  record_answers(ctx);  // answers never flushed still count
  stop_deadline(ctx);
  state_ = State::closed;
  finished_ = true;
  if (!lending_) in_.release();  // else decode() releases it once the handler has returned
  out_.release();
  early_.clear();
  early_bytes_ = 0;
  if (body_in_ != nullptr)
    end_body_stream(std::make_exception_ptr(ChannelClosedError("the connection closed mid-body")));
  if (body_out_ != nullptr) std::exchange(body_out_, nullptr)->detach();
  ctx.fire_channel_inactive();
}

void ServerCodec::exception_caught(Context& ctx, std::exception_ptr error) { close_on_io_error(ctx, std::move(error)); }

void ServerCodec::handler_removed(Context& ctx) {
  record_answers(ctx);
  stop_deadline(ctx);
  resume_decoding_.cancel();
  reading_.release(ctx.channel());
  if (body_in_ != nullptr)
    end_body_stream(std::make_exception_ptr(ChannelClosedError("the HTTP/1.1 codec was removed")));
  body_reading_.release(ctx.channel());
  if (body_out_ != nullptr) std::exchange(body_out_, nullptr)->detach();
  if (in_.is_readable() && !ctx.channel().is_open() && !lending_) in_.release();
}

}  // namespace weft::http
