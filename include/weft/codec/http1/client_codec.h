#pragma once
/// @file
/// The HTTP/1.1 client codec: encodes requests and decodes their responses, pipelined (responses
/// are matched to requests in order, which is how a HEAD response is known to have no body).
/// Outbound HttpClientRequest -> ByteBuf; inbound ByteBuf -> HttpClientResponse. A malformed or
/// oversized response, or one that answers no request sent through this codec, fires
/// HttpProtocolError and closes the connection. Loop thread only.

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/body_decoder.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/core/clock.h"
#include "weft/core/error.h"

namespace weft::http2 {
class ClientCodec;
}

namespace weft::http {

/// A response that could not be parsed, or broke a limit.
class HttpProtocolError : public Error {
 public:
  /// `status`: the HTTP status that classifies the error (e.g. 400, 413); `reason` says what was wrong.
  HttpProtocolError(int status, std::string_view reason)
      : Error("HTTP protocol error (" + std::to_string(status) + "): " + std::string(reason)), status_(status) {}
  /// The HTTP status that classifies the error.
  int status() const noexcept { return status_; }

 private:
  int status_;
};

/// Where a streamed response's body goes as it is decoded (HttpClientRequest::stream_body_to): the
/// codec emits the response's head (an HttpClientResponse with an empty body), then hands the body
/// here a piece at a time, without a bound (Limits::max_body does not apply: the receiver bounds
/// what it keeps, e.g. by suspending the channel's reading). Loop thread only (the codec's).
class ResponseBodySink {
 public:
  virtual ~ResponseBodySink() = default;
  /// Body bytes as they came: a slice of what was read, no copy. May suspend the channel's reading;
  /// must not close it from here (post the close).
  virtual void body_data(ByteBuf bytes) = 0;
  /// The body ended (a close ends a body without framing). `trailer_block`: a chunked body's trailer
  /// lines ("Name: value\r\n" each, checked), empty when none came.
  virtual void body_end(std::string_view trailer_block) = 0;
  /// The body cannot end: a malformed body (HttpProtocolError) or the connection closed under it
  /// (ChannelClosedError).
  virtual void body_failed(std::exception_ptr error) = 0;
};

/// The end of a streamed request body (HttpClientRequest::stream_body): written after its last bytes
/// (a body of declared length has ended with its last byte already; its end is then taken and ignored).
struct RequestBodyEnd {};

}  // namespace weft::http
namespace weft::client {
class HttpClient;
namespace detail {
struct Exchange;
}
}  // namespace weft::client
namespace weft::http {

/// A request to send. Header rules as HttpResponse (no CR/LF in values). The encoder adds
/// Content-Length when there is a body, and Host when the request has none (see ClientCodec).
class HttpClientRequest {
 public:
  /// A request for `target` (origin-form "/path?q" or absolute-form) with `method`.
  HttpClientRequest(std::string method, std::string target) : method_(std::move(method)), target_(std::move(target)) {}
  /// Adds a header line; throws std::invalid_argument when the name is not a token or the value holds
  /// CR, LF or NUL.
  HttpClientRequest& header(std::string_view name, std::string_view value) &;
  /// As the `&` overload, for an rvalue (returned as one).
  HttpClientRequest&& header(std::string_view name, std::string_view value) && { return std::move(header(name, value)); }
  /// The body, owned.
  HttpClientRequest& body(ByteBuf bytes) & noexcept {
    body_ = std::move(bytes);
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpClientRequest&& body(ByteBuf bytes) && noexcept { return std::move(body(std::move(bytes))); }
  /// Streams the response's body to `sink` instead of aggregating it (see ResponseBodySink).
  HttpClientRequest& stream_body_to(std::shared_ptr<ResponseBodySink> sink) & noexcept {
    sink_ = std::move(sink);
    return *this;
  }
  /// Streams the request's body: the head goes alone, with `Content-Length: length` when given, else
  /// `Transfer-Encoding: chunked`; the body follows as ByteBuf writes (framed as chunks when chunked;
  /// the writer keeps a declared length), then a RequestBodyEnd. Requests written meanwhile are refused.
  HttpClientRequest& stream_body(std::optional<std::uint64_t> length) & noexcept {
    streamed_body_ = true;
    streamed_length_ = length;
    return *this;
  }
  /// For client::HttpClient: this request's request timeout, in place of
  /// ClientOptions::request_timeout (zero: none); the codecs do not time requests. Not thread-safe
  /// (set it before the request is handed over).
  HttpClientRequest& timeout(Duration limit) & noexcept {
    timeout_ = limit;
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpClientRequest&& timeout(Duration limit) && noexcept { return std::move(timeout(limit)); }
  /// The timeout set by timeout(Duration); nullopt: the client's own applies.
  std::optional<Duration> timeout() const noexcept { return timeout_; }
  /// For the encoder: whether the body is streamed (stream_body), and its declared length.
  bool body_streamed() const noexcept { return streamed_body_; }
  /// For the encoder: the streamed body's declared length (nullopt: chunked).
  std::optional<std::uint64_t> streamed_length() const noexcept { return streamed_length_; }
  /// For the encoder: where the response's body goes (null: aggregated into the response).
  const std::shared_ptr<ResponseBodySink>& body_sink() const noexcept { return sink_; }

  /// The method.
  const std::string& method() const noexcept { return method_; }
  /// The request target.
  const std::string& target() const noexcept { return target_; }
  /// For the encoder: the header lines added ("Name: value\r\n" each).
  std::string_view header_block() const noexcept { return headers_; }
  /// Whether a Host header was added.
  bool has_host() const noexcept { return has_host_; }
  /// For the encoder: the body.
  ByteBuf& owned_body() noexcept { return body_; }

 private:
  friend struct client::detail::Exchange;
  friend class client::HttpClient;
  // The HTTP client's copy of a request it was given: `lines` were that request's header_block(),
  // checked as they were added there, so they are appended whole, unchecked.
  HttpClientRequest& append_checked_lines(std::string_view lines);
  // The HTTP client takes the header lines of a request handed to it, without a copy.
  std::string take_header_block() noexcept { return std::move(headers_); }

  std::string method_;
  std::string target_;
  std::string headers_;
  ByteBuf body_;
  std::shared_ptr<ResponseBodySink> sink_;
  std::optional<std::uint64_t> streamed_length_;
  std::optional<Duration> timeout_;
  bool has_host_ = false;
  bool streamed_body_ = false;
};

/// A parsed response head: views into the bytes it was parsed from.
struct ResponseHead {
  static constexpr std::size_t kInlineHeaders = 64;  ///< Limits::max_headers is capped at this
  Version version = Version::http11;                 ///< HTTP/1.0 or HTTP/1.1
  int status = 0;                                    ///< the status code
  std::string_view reason;                           ///< the reason phrase, as sent
  InlineHeaders<kInlineHeaders> inline_headers;      ///< the header lines; only the first header_count are used
  std::size_t header_count = 0;                      ///< header lines in inline_headers
  std::optional<std::uint64_t> content_length;       ///< Content-Length, when sent
  bool chunked = false;                              ///< Transfer-Encoding: chunked
  bool keep_alive = true;                            ///< the connection stays open (version and Connection)

  ResponseHead() noexcept = default;
  /// Copies the head (the views still point into `other`'s bytes).
  ResponseHead(const ResponseHead& other) noexcept { *this = other; }
  /// Copies the head (the views still point into `other`'s bytes).
  ResponseHead& operator=(const ResponseHead& other) noexcept {
    if (this == &other) return *this;
    version = other.version;
    status = other.status;
    reason = other.reason;
    inline_headers.copy_prefix(other.inline_headers, other.header_count);
    header_count = other.header_count;
    content_length = other.content_length;
    chunked = other.chunked;
    keep_alive = other.keep_alive;
    return *this;
  }

  /// The first header with this name (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept;
};

/// Parses a response head at the start of `data`, like parse_request_head.
ParseResult parse_response_head(std::string_view data, ResponseHead& out, const Limits& limits) noexcept;

/// A whole response: head and body, as the client codec emits it.
class HttpClientResponse {
 public:
  /// The status code.
  int status() const noexcept { return head_.status; }
  /// HTTP/1.0 or HTTP/1.1.
  Version version() const noexcept { return head_.version; }
  /// Whether the connection stays open after this response.
  bool keep_alive() const noexcept { return head_.keep_alive; }
  /// The first header named `name` (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept { return head_.header(name); }
  /// The parsed head.
  const ResponseHead& head() const noexcept { return head_; }
  /// The body (empty when there is none).
  const ByteBuf& body() const noexcept { return body_; }
  /// The body's bytes as a view.
  std::string_view body_view() const noexcept { return body_.view(); }

 private:
  friend class ClientCodec;
  friend class http2::ClientCodec;  // builds responses from HTTP/2 streams
  ResponseHead head_;
  ByteBuf head_bytes_;
  ByteBuf body_;
};

/// Host (required in HTTP/1.1) is added to a request that has none, first of: the authority of an
/// absolute-form target ("http://example.com:8080/x" -> example.com:8080), the configured
/// `authority`, the address the channel is connected to ("127.0.0.1:8080", "[::1]:8080"), or empty
/// when none is known, as on an EmbeddedChannel (RFC 9110 7.2 asks for an empty Host then).
class ClientCodec final : public Handler {
 public:
  /// Throws std::invalid_argument when `authority` holds CR, LF, NUL or another control.
  explicit ClientCodec(Limits limits = {}, std::string authority = {});

  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(HttpClientResponse), &typeid(HttpClientRequest), &typeid(ByteBuf)};
  }
  void read_message(Context& ctx, MessageRef message) override;
  void write_message(Context& ctx, MessageRef message) override;
  void channel_inactive(Context& ctx) override;

  /// Outbound: an http::HttpClientRequest; while a streamed request body is being sent (see
  /// HttpClientRequest::stream_body), ByteBuf (its bytes) and RequestBodyEnd.
  /// Requests sent whose response has not arrived yet.
  std::size_t outstanding() const noexcept { return pending_head_requests_.size(); }

 private:
  void decode(Context& ctx);
  bool decode_head(Context& ctx);
  bool decode_body(Context& ctx);
  bool decode_streamed(Context& ctx);
  void emit(Context& ctx);
  void emit_streamed_head(Context& ctx);
  void end_streamed();
  void fail(Context& ctx, int status, std::string_view reason);
  std::string_view host_for(Context& ctx, std::string_view target);

  Limits limits_;
  std::string authority_;          // configured
  std::string connect_authority_;  // the remote address, formatted on first use
  enum class State : std::uint8_t { head, body, streamed, failed } state_ = State::head;
  ByteBuf in_;
  HttpClientResponse response_;
  detail::BodyDecoder body_decoder_;
  struct Outstanding {
    bool head = false;                       // a HEAD: the response has no body
    std::shared_ptr<ResponseBodySink> sink;  // streamed: where its body goes
  };
  std::deque<Outstanding> pending_head_requests_;  // per request sent and not answered
  std::shared_ptr<ResponseBodySink> streaming_;    // State::streamed: the body's receiver
  bool head_chunked_ = false;                      // State::streamed: the body is chunked (it may have trailers)
  enum class Upload : std::uint8_t { none, sized, chunked } upload_ = Upload::none;  // a streamed request body
  bool upload_chunk_open_ = false;  // Upload::chunked: a chunk was sent, its CRLF not yet
  std::uint64_t upload_left_ = 0;   // Upload::sized: bytes still to come (the body ends at zero)
};

}  // namespace weft::http
