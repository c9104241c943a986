#include "weft/codec/http1/client_codec.h"

#include "weft/codec/byte_to_message_decoder.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "char_scan.h"
#include "field_section.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"

namespace weft::http {

namespace {

// A request's header lines usually fit: reserved at the first, so that adding a few reallocates none.
constexpr std::size_t kTypicalHeaderBytes = 256;

void check_header_value(std::string_view name, std::string_view value) {
  if (detail::find_invalid_byte_in_value(value.data(), value.size()) != value.size()) {
    throw std::invalid_argument("HTTP header value of '" + std::string(name) + "' contains CR, LF, NUL or another control");
  }
}

// The authority of an absolute-form target ("http://user@host:port/path" -> "host:port"), or
// nullopt for an origin-form one ("/path").
std::optional<std::string_view> absolute_form_authority(std::string_view target) noexcept {
  if (!target.empty() && target.front() == '/') return std::nullopt;  // origin-form: the usual one, without a search
  std::size_t scheme_end = target.find("://");
  if (scheme_end == std::string_view::npos || target.substr(0, scheme_end).find('/') != std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view authority = target.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  return authority;
}

}  // namespace

HttpClientRequest& HttpClientRequest::header(std::string_view name, std::string_view value) & {
  if (!detail::all_tchar(name)) throw std::invalid_argument("HTTP header name is not a token: '" + std::string(name) + "'");
  check_header_value(name, value);
  if (headers_.empty()) headers_.reserve(kTypicalHeaderBytes);  // one allocation for the usual few lines
  // The line grown once and written in place: four appends checked the capacity four times.
  const std::size_t at = headers_.size();
  headers_.resize(at + name.size() + value.size() + 4);
  char* p = headers_.data() + at;
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  *p++ = ':';
  *p++ = ' ';
  if (!value.empty()) std::memcpy(p, value.data(), value.size());  // an empty one's data() may be null
  p += value.size();
  *p++ = '\r';
  *p = '\n';
  if (iequals(name, "Host")) has_host_ = true;
  return *this;
}

HttpClientRequest& HttpClientRequest::append_checked_lines(std::string_view lines) {
  headers_.append(lines);
  for (std::size_t at = 0; at < lines.size();) {
    const std::size_t end = std::min(lines.find("\r\n", at), lines.size());
    if (end - at > 5 && iequals(lines.substr(at, 5), "host:")) has_host_ = true;
    at = end + 2;
  }
  return *this;
}

ClientCodec::ClientCodec(Limits limits, std::string authority) : limits_(limits), authority_(std::move(authority)) {
  check_header_value("Host", authority_);
}

std::optional<std::string_view> ResponseHead::header(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < header_count; ++i) {
    if (iequals(inline_headers[i].name, name)) return inline_headers[i].value;
  }
  return std::nullopt;
}

ParseResult parse_response_head(std::string_view data, ResponseHead& out, const Limits& limits) noexcept {
  using detail::error;
  data = data.substr(0, std::numeric_limits<std::uint32_t>::max());  // so that `consumed` fits
  const std::size_t window = std::min(data.size(), limits.max_request_line + 2);
  const char* lf = static_cast<const char*>(std::memchr(data.data(), '\n', window));
  if (lf == nullptr) {
    if (data.size() > limits.max_request_line + 1) return error(400, "status line too long");
    return detail::incomplete();
  }
  const std::size_t line_end = static_cast<std::size_t>(lf - data.data());
  if (line_end == 0 || data[line_end - 1] != '\r') return error(400, "status line does not end with CRLF");
  std::string_view line = data.substr(0, line_end - 1);
  // HTTP/1.1 200 OK
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
      (line.size() > 12 && line[12] != ' ')) {
    return error(400, "malformed status line");
  }
  out.version = line[7] == '1' ? Version::http11 : Version::http10;
  // Three digits, the first not 0 (RFC 9112 4: status-code = 3DIGIT; 100-999 are the meaningful ones).
  const auto digit = [&line](std::size_t i) {
    return static_cast<unsigned>(static_cast<unsigned char>(line[i]) - '0');
  };
  const unsigned d0 = digit(9), d1 = digit(10), d2 = digit(11);
  if (d0 - 1 > 8 || d1 > 9 || d2 > 9) return error(400, "malformed status code");
  out.status = static_cast<int>(d0 * 100 + d1 * 10 + d2);
  out.reason = line.size() > 13 ? line.substr(13) : std::string_view();
  detail::FieldSection fields(out.inline_headers.data(), static_cast<std::uint32_t>(out.inline_headers.size()));
  ParseResult r = detail::parse_field_section(data, line_end + 1, fields, limits);
  out.header_count = fields.count;
  if (r.kind != ParseResult::Kind::complete) return r;
  if (fields.transfer_encoding && fields.has_content_length) return error(400, "both Content-Length and Transfer-Encoding");
  out.content_length = fields.declared_length();
  out.chunked = fields.chunked;
  out.keep_alive = fields.keeps_alive(out.version);
  return r;
}

void ClientCodec::write_message(Context& ctx, MessageRef message) {
  // A request, the usual message, is known at once (its type's address); the others by name.
  const bool is_request = message.is<HttpClientRequest>();
  if (!is_request && upload_ != Upload::none && message.is<ByteBuf>()) {
    ByteBuf& bytes = message.as<ByteBuf>();
    if (!bytes.is_readable()) return;  // chunked: an empty chunk would end the body
    if (upload_ == Upload::chunked) {
      // The previous chunk's CRLF goes with this chunk's size line: one small buffer per chunk,
      // the data itself by reference.
      char line[24];
      char* at = line;
      if (upload_chunk_open_) {
        *at++ = '\r';
        *at++ = '\n';
      }
      at = std::to_chars(at, line + sizeof line - 2, bytes.readable_bytes(), 16).ptr;
      *at++ = '\r';
      *at++ = '\n';
      ByteBuf size = ctx.allocator().buffer(static_cast<std::size_t>(at - line));
      size.write_bytes(std::string_view(line, static_cast<std::size_t>(at - line)));
      ctx.write(std::move(size));
      upload_chunk_open_ = true;
    } else {
      // The declared length's last byte ends the body: the connection may carry the next request.
      const std::uint64_t n = bytes.readable_bytes();
      upload_left_ = n >= upload_left_ ? 0 : upload_left_ - n;
      if (upload_left_ == 0) upload_ = Upload::none;
    }
    ctx.write(std::move(bytes));
    return;
  }
  if (!is_request && message.is<RequestBodyEnd>()) {
    if (upload_ == Upload::chunked) {
      const std::string_view last = upload_chunk_open_ ? std::string_view("\r\n0\r\n\r\n") : "0\r\n\r\n";
      ByteBuf end = ctx.allocator().buffer(last.size());
      end.write_bytes(last);
      ctx.write(std::move(end));
    }
    upload_ = Upload::none;
    upload_chunk_open_ = false;
    return;
  }
  if (!is_request) throw_type_mismatch(ctx, "outbound", typeid(HttpClientRequest), message.type());
  if (upload_ != Upload::none)
    throw std::logic_error("http::ClientCodec: a request written before the streamed body's end");
  HttpClientRequest& request = message.as<HttpClientRequest>();
  const std::string_view method = request.method();  // compared as a view: the length first, no call
  ByteBuf& body = request.owned_body();
  const std::size_t body_size = body.readable_bytes();
  const std::string_view host = request.has_host() ? std::string_view() : host_for(ctx, request.target());
  // The framing line, if any: Content-Length or chunked.
  char length_line[48];
  std::size_t length_line_size = 0;
  auto content_length = [&](std::uint64_t n) {
    constexpr std::string_view kName = "Content-Length: ";
    std::memcpy(length_line, kName.data(), kName.size());
    char* end = std::to_chars(length_line + kName.size(), length_line + sizeof length_line - 2, n).ptr;
    *end++ = '\r';
    *end++ = '\n';
    length_line_size = static_cast<std::size_t>(end - length_line);
  };
  if (request.body_streamed()) {
    if (auto length = request.streamed_length()) {
      content_length(*length);
      upload_ = *length > 0 ? Upload::sized : Upload::none;
      upload_left_ = *length;
    } else {
      constexpr std::string_view kChunked = "Transfer-Encoding: chunked\r\n";
      std::memcpy(length_line, kChunked.data(), kChunked.size());
      length_line_size = kChunked.size();
      upload_ = Upload::chunked;
    }
  } else if (body_size > 0 || method == "POST" || method == "PUT") {
    content_length(body_size);
  }
  // The head is written in one pass into a buffer of its exact size (plus the body's).
  constexpr std::string_view kVersion = " HTTP/1.1\r\n", kHost = "Host: ", kCrlf = "\r\n";
  const std::size_t head_size = request.method().size() + 1 + request.target().size() + kVersion.size() +
                                (request.has_host() ? 0 : kHost.size() + host.size() + kCrlf.size()) +
                                request.header_block().size() + length_line_size + kCrlf.size();
  ByteBuf out = ctx.allocator().buffer(head_size + body_size);
  out.ensure_writable(head_size);
  char* at = reinterpret_cast<char*>(out.write_ptr());
  auto put = [&at](std::string_view s) {
    if (s.empty()) return;  // its data() may be null
    std::memcpy(at, s.data(), s.size());
    at += s.size();
  };
  put(request.method());
  *at++ = ' ';
  put(request.target());
  put(kVersion);
  if (!request.has_host()) {
    put(kHost);
    put(host);
    put(kCrlf);
  }
  put(request.header_block());
  put(std::string_view(length_line, length_line_size));
  put(kCrlf);
  out.advance_writer(head_size);
  if (body_size > 0) out.write_bytes(body);
  pending_head_requests_.push_back({method == "HEAD", request.body_sink()});
  ctx.write(std::move(out));
}

std::string_view ClientCodec::host_for(Context& ctx, std::string_view target) {
  if (auto authority = absolute_form_authority(target)) return *authority;
  if (!authority_.empty()) return authority_;
  if (connect_authority_.empty()) {
    const SocketAddress remote = ctx.channel().remote_address();
    if (remote.is_valid() && remote.port() != 0) connect_authority_ = remote.to_string();  // port 0: no peer
  }
  return connect_authority_;
}

void ClientCodec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  if (state_ == State::failed) return;
  ByteBuf& bytes = message.as<ByteBuf>();
  weft::detail::cumulate(ctx.allocator(), in_, std::move(bytes));
  decode(ctx);
}

void ClientCodec::decode(Context& ctx) {
  bool progressed = true;
  while (progressed && state_ != State::failed && in_.is_readable()) {
    progressed = state_ == State::head   ? decode_head(ctx)
                 : state_ == State::body ? decode_body(ctx)
                                         : decode_streamed(ctx);
  }
  if (state_ == State::failed) in_.release();
  detail::keep_undecoded(in_);
}

bool ClientCodec::decode_head(Context& ctx) {
  ResponseHead& head = response_.head_;
  ParseResult r = parse_response_head(in_.view(), head, limits_);
  if (r.kind == ParseResult::Kind::incomplete) return false;
  if (r.kind == ParseResult::Kind::error) {
    fail(ctx, r.status, r.reason);
    return false;
  }
  if (pending_head_requests_.empty()) {
    // More responses than requests: the server is out of step (or smuggling one in); nothing after
    // this can be matched to a request.
    fail(ctx, 502, "a response with no request outstanding");
    return false;
  }
  if (head.status >= 100 && head.status < 200 && head.status != 101) {
    in_.skip_bytes(r.consumed);  // interim response: the final one follows
    return true;
  }
  response_.head_bytes_ = in_.read_slice(r.consumed);
  response_.body_ = ByteBuf();
  const bool head_request = pending_head_requests_.front().head;
  const bool streamed = pending_head_requests_.front().sink != nullptr;
  if (head_request || head.status == 204 || head.status == 304 || head.status == 101) {
    if (streamed) {
      head_chunked_ = false;
      emit_streamed_head(ctx);
      end_streamed();
    } else {
      emit(ctx);
    }
    return true;
  }
  if (streamed) {
    head_chunked_ = head.chunked;
    if (head.chunked) {
      body_decoder_.start_chunked();
    } else if (head.content_length) {
      body_decoder_.start_fixed(*head.content_length);
    } else {
      body_decoder_.start_until_close();
    }
    emit_streamed_head(ctx);
    if (body_decoder_.finished()) end_streamed();  // Content-Length: 0
    return true;
  }
  if (head.chunked) {
    body_decoder_.start_chunked();
  } else if (head.content_length) {
    if (*head.content_length > limits_.max_body) {
      fail(ctx, 413, "response body too large");
      return false;
    }
    if (in_.readable_bytes() >= *head.content_length) {
      if (*head.content_length > 0) response_.body_ = in_.read_slice(static_cast<std::size_t>(*head.content_length));
      emit(ctx);
      return true;
    }
    body_decoder_.start_fixed(*head.content_length);
  } else {
    body_decoder_.start_until_close();  // no framing: the body ends with the connection
  }
  state_ = State::body;
  return true;
}

bool ClientCodec::decode_body(Context& ctx) {
  const std::size_t before = in_.readable_bytes();
  auto r = body_decoder_.decode(in_, response_.body_, ctx.allocator(), limits_);
  if (r.status == detail::BodyDecoder::Status::error) {
    fail(ctx, r.http_status, r.reason);
    return false;
  }
  if (r.status == detail::BodyDecoder::Status::done) {
    emit(ctx);
    return true;
  }
  return in_.readable_bytes() != before;
}

bool ClientCodec::decode_streamed(Context& ctx) {
  ByteBuf piece;
  auto r = body_decoder_.decode_piece(in_, piece, limits_);
  switch (r.status) {
    case detail::BodyDecoder::Status::piece: {
      std::shared_ptr<ResponseBodySink> sink = streaming_;  // kept: the sink may let go of the channel
      sink->body_data(std::move(piece));
      if (state_ == State::streamed && body_decoder_.finished()) end_streamed();
      return true;
    }
    case detail::BodyDecoder::Status::done: end_streamed(); return true;
    case detail::BodyDecoder::Status::error: fail(ctx, r.http_status, r.reason); return false;
    case detail::BodyDecoder::Status::need_more: break;
  }
  return false;
}

void ClientCodec::emit_streamed_head(Context& ctx) {
  streaming_ = std::move(pending_head_requests_.front().sink);
  pending_head_requests_.pop_front();
  state_ = State::streamed;
  ctx.fire_read(std::move(response_));
  response_.head_bytes_.release();
  response_.body_.release();
}

void ClientCodec::end_streamed() {
  state_ = State::head;
  std::shared_ptr<ResponseBodySink> sink = std::move(streaming_);
  sink->body_end(head_chunked_ ? std::string_view(body_decoder_.trailer_block()) : std::string_view());
}

void ClientCodec::emit(Context& ctx) {
  if (!pending_head_requests_.empty()) pending_head_requests_.pop_front();
  state_ = State::head;
  ctx.fire_read(std::move(response_));
  response_.head_bytes_.release();
  response_.body_.release();
}

void ClientCodec::fail(Context& ctx, int status, std::string_view reason) {
  state_ = State::failed;
  auto error = std::make_exception_ptr(HttpProtocolError(status, reason));
  if (std::shared_ptr<ResponseBodySink> sink = std::move(streaming_)) sink->body_failed(error);
  ctx.fire_exception(error);
  ctx.close();
}

void ClientCodec::channel_inactive(Context& ctx) {
  if (state_ == State::body && body_decoder_.until_close()) emit(ctx);  // the close ends the body
  if (state_ == State::streamed) {
    if (body_decoder_.until_close()) {
      end_streamed();
    } else {
      state_ = State::failed;
      std::shared_ptr<ResponseBodySink> sink = std::move(streaming_);
      sink->body_failed(
          std::make_exception_ptr(ChannelClosedError("the connection closed in the middle of the response body")));
    }
  }
  in_.release();
  ctx.fire_channel_inactive();
}

}  // namespace weft::http
