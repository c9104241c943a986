#pragma once
/// @file
/// HttpRequest (what the server codec emits) and HttpResponse (what it takes).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/file_region.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/core/task.h"

namespace weft::http2::detail {
struct RequestAccess;  // builds HttpRequests from HTTP/2 streams (src/codec/http2)
}  // namespace weft::http2::detail

namespace weft::http {

class BodyWriter;
namespace detail {
class BodySource;
}

/// A streamed response's producer (HttpResponse::stream): writes the body through the writer and
/// ends it with finish() (see body_writer.h).
using BodyProducer = std::function<Task<void>(BodyWriter& body)>;

/// A whole request: head and body (bodies are aggregated up to Limits::max_body). The views of the
/// head point into a buffer the request shares, so they stay valid as long as the request lives,
/// also when it is moved.
///
/// (Within the codec's channel_read call the head's bytes are only lent by the codec, which keeps
/// them; moving the request takes its own reference. So a handler that answers in place costs no
/// reference count traffic, and one that keeps the request -- it must move it -- is safe.)
class HttpRequest {
 public:
  HttpRequest() noexcept = default;
  /// Takes `other`'s head, body and sequence (the head's bytes with it: the views stay valid).
  HttpRequest(HttpRequest&& other) noexcept
      : head_bytes_(other.take_head_bytes()),
        body_(std::move(other.body_)),
        body_stream_(std::move(other.body_stream_)),
        sequence_(other.sequence_),
        head_(other.head_) {}
  /// Replaces this request with `other`'s head, body and sequence.
  HttpRequest& operator=(HttpRequest&& other) noexcept {
    if (this != &other) {
      head_bytes_ = other.take_head_bytes();
      lender_ = nullptr;
      body_ = std::move(other.body_);
      body_stream_ = std::move(other.body_stream_);
      sequence_ = other.sequence_;
      head_ = other.head_;
    }
    return *this;
  }
  /// This request's place on its connection: 1 for the first, then 2, 3... (0: not from a codec).
  /// Responses leave in this order, whichever thread makes them (see HttpResponse::for_request).
  /// On HTTP/2 it is the request's stream id (1, 3, 5...), which names it the same way.
  std::uint64_t sequence() const noexcept { return sequence_; }
  /// The memory this request holds, for bounds that count bytes (the executor offload queue).
  std::size_t message_size() const noexcept {
    return sizeof(HttpRequest) + body_.readable_bytes() + (lender_ != nullptr ? lent_length_ : head_bytes_.readable_bytes());
  }
  /// The parsed head.
  const RequestHead& head() const noexcept { return head_; }
  /// The method, as sent ("GET").
  std::string_view method() const noexcept { return head_.method; }
  /// The request target, as sent (see RequestHead::target).
  std::string_view target() const noexcept { return head_.target; }
  /// The target's path (see RequestHead::path).
  std::string_view path() const noexcept { return head_.path; }
  /// The target's query, after '?' (see RequestHead::query).
  std::string_view query() const noexcept { return head_.query; }
  /// HTTP/1.0, HTTP/1.1 or HTTP/2.
  Version version() const noexcept { return head_.version; }
  /// Whether the connection stays open after the answer (the version and the Connection header).
  bool keep_alive() const noexcept { return head_.keep_alive; }
  /// The first header named `name` (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept { return head_.header(name); }
  /// The body (empty when there is none).
  const ByteBuf& body() const noexcept { return body_; }
  /// The body (empty when there is none); a handler may take it.
  ByteBuf& body() noexcept { return body_; }
  /// The body's bytes as a view.
  std::string_view body_view() const noexcept { return body_.view(); }
  /// For the router: the body as the codec streams it, for a streamed route (see body_reader.h);
  /// null when the body came whole.
  std::shared_ptr<detail::BodySource>& body_stream() noexcept { return body_stream_; }

 private:
  friend class ServerCodec;
  friend struct weft::http2::detail::RequestAccess;
  // The bytes [index, index + length) of `lender` hold the head; it keeps them while lending.
  void lend_head_bytes(const ByteBuf& lender, std::size_t index, std::size_t length) noexcept {
    lender_ = &lender;
    lent_index_ = static_cast<std::uint32_t>(index);
    lent_length_ = static_cast<std::uint32_t>(length);
  }
  ByteBuf take_head_bytes() noexcept {
    if (lender_ == nullptr) return std::move(head_bytes_);
    const ByteBuf* lender = lender_;
    lender_ = nullptr;
    return lender->slice(lent_index_, lent_length_);
  }

  ByteBuf head_bytes_;  // keeps the bytes the head's views point into (unless lent)
  const ByteBuf* lender_ = nullptr;
  std::uint32_t lent_index_ = 0;
  std::uint32_t lent_length_ = 0;
  ByteBuf body_;
  std::shared_ptr<detail::BodySource> body_stream_;
  std::uint64_t sequence_ = 0;
  RequestHead head_;    // last: its fields first, then the inline header array
};

/// Header lines validated once and attached to many responses without copying or checking them
/// again: build it at startup for the headers every response of a route carries.
///   static const HeaderBlock kText = HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");
class HeaderBlock {
 public:
  HeaderBlock() = default;
  /// A copy with the same lines and id.
  HeaderBlock(const HeaderBlock&) = default;
  /// Copies the lines and the id.
  HeaderBlock& operator=(const HeaderBlock&) = default;
  /// The moved-from block is left empty.
  HeaderBlock(HeaderBlock&& other) noexcept;
  /// Takes `other`'s lines and id; `other` is left empty.
  HeaderBlock& operator=(HeaderBlock&& other) noexcept;

  /// Throws std::invalid_argument like HttpResponse::header. Not thread-safe.
  HeaderBlock& add(std::string_view name, std::string_view value) &;
  /// As the `&` overload, for an rvalue (returned as one).
  HeaderBlock&& add(std::string_view name, std::string_view value) && { return std::move(add(name, value)); }
  /// The header lines as they are written ("Name: value\r\n" each).
  std::string_view bytes() const noexcept { return bytes_; }
  /// Names the content: equal ids, equal bytes (0 for an empty block). Every add() draws a new id,
  /// so the encoder can reuse a head it built from this block without comparing its bytes.
  std::uint64_t id() const noexcept { return id_; }

 private:
  std::string bytes_;
  std::uint64_t id_ = 0;
};

/// A response. Headers are validated as they are added: a name that is not a token, or a value with
/// CR, LF or NUL, throws std::invalid_argument (no response splitting). The encoder adds Date,
/// Content-Length and, where the connection ends, Connection: close.
///
/// Which request it answers: the one named with for_request(); else, when it is written while the
/// codec hands a request to the pipeline (a handler that answers at once), that request; else the
/// oldest request of the connection that has no answer yet. Pipelined answers leave in request
/// order whatever thread or coroutine makes them and whenever: one that is ready early waits,
/// encoded, for those before it.
///
/// Borrowed parts (body_view(), headers()) must outlive the encoding, which happens inside
/// ctx.write() on the loop. A response that crosses threads (written from an executor, or through
/// Channel::write from another thread) takes its own copy of them first (own_borrowed()).
class HttpResponse {
 public:
  /// A response with status code `status`, no header and no body.
  explicit HttpResponse(int status = 200) noexcept : status_(status) {}
  /// Moves copy only the used part of the inline header space, not all of it.
  HttpResponse(HttpResponse&& other) noexcept;
  /// Replaces this response with `other`.
  HttpResponse& operator=(HttpResponse&& other) noexcept;

  /// The status code.
  int status() const noexcept { return status_; }
  /// Builder methods return the response as the same kind of reference they were called on, so that
  /// ctx.write(HttpResponse(200).content_type("text/plain").body_view(text)) passes an rvalue.
  HttpResponse& header(std::string_view name, std::string_view value) &;
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& header(std::string_view name, std::string_view value) && { return std::move(header(name, value)); }
  /// header("Content-Type", value).
  HttpResponse& content_type(std::string_view value) & { return header("Content-Type", value); }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& content_type(std::string_view value) && { return std::move(header("Content-Type", value)); }
  /// Attaches a shared block of headers (written before those added with header()). The block must
  /// outlive the encoding of the response, like body_view().
  HttpResponse& headers(const HeaderBlock& block) & noexcept {
    shared_headers_ = &block;
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& headers(const HeaderBlock& block) && noexcept { return std::move(headers(block)); }
  /// The body, owned.
  HttpResponse& body(ByteBuf bytes) & noexcept;
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body(ByteBuf bytes) && noexcept { return std::move(body(std::move(bytes))); }
  /// The body, owned: the string's bytes are copied into a buffer (for a body made per request).
  HttpResponse& body(std::string_view bytes) & { return body(ByteBuf::copy_of(bytes)); }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body(std::string_view bytes) && { return std::move(body(bytes)); }
  /// The body, owned: the string's bytes are copied into a buffer.
  HttpResponse& body(const std::string& bytes) & { return body(std::string_view(bytes)); }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body(const std::string& bytes) && { return std::move(body(std::string_view(bytes))); }
  /// The body, owned: the C string's bytes are copied into a buffer.
  HttpResponse& body(const char* bytes) & { return body(std::string_view(bytes)); }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body(const char* bytes) && { return std::move(body(std::string_view(bytes))); }
  /// The body is the bytes of `file` (see FileRegion), sent without reading the file into memory:
  /// in bounded chunks as the channel is writable (HTTP/1.1) or as the stream's window allows
  /// (HTTP/2). Content-Length is the region's length. Replaces any other body. See file_response.h
  /// for responses built from a path, with ranges and validators.
  HttpResponse& body(FileRegion file) & noexcept;
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body(FileRegion file) && noexcept { return std::move(body(std::move(file))); }
  /// The body is produced chunk by chunk by `producer`, with backpressure, once the answer's turn
  /// has come (see body_writer.h): HTTP/1.1 chunked, or `Content-Length: content_length` when one
  /// is given. Replaces any other body.
  HttpResponse& stream(BodyProducer producer, std::optional<std::uint64_t> content_length = std::nullopt) &;
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& stream(BodyProducer producer, std::optional<std::uint64_t> content_length = std::nullopt) && {
    return std::move(stream(std::move(producer), content_length));
  }
  /// Names the request this response answers (see the class comment).
  HttpResponse& for_request(const HttpRequest& request) & noexcept {
    request_sequence_ = request.sequence();
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& for_request(const HttpRequest& request) && noexcept { return std::move(for_request(request)); }
  /// The same, by the request's sequence(): for an answer made where the request is gone.
  HttpResponse& for_request(std::uint64_t request_sequence) & noexcept {
    request_sequence_ = request_sequence;
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& for_request(std::uint64_t request_sequence) && noexcept { return std::move(for_request(request_sequence)); }
  /// The sequence of the request named with for_request(); 0 when none was.
  std::uint64_t request_sequence() const noexcept { return request_sequence_; }
  /// Copies what the response borrows (the body view, the shared header block) into the response.
  void own_borrowed();
  /// The memory this response holds, for bounds that count bytes.
  std::size_t message_size() const noexcept {
    return sizeof(HttpResponse) + overflow_.capacity() + body_bytes().size();
  }
  /// The body, borrowed: `bytes` must stay valid until the response has been encoded, which happens
  /// inside ctx.write() when the codec runs on the same loop (the common case). For static data.
  HttpResponse& body_view(std::string_view bytes) & noexcept {
    if (body_.has_storage()) body_.release();
    if (file_) file_ = FileRegion();
    if (producer_) drop_producer();
    body_view_ = bytes;
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& body_view(std::string_view bytes) && noexcept { return std::move(body_view(bytes)); }
  /// Close the connection after this response.
  HttpResponse& close_connection() & noexcept {
    close_ = true;
    return *this;
  }
  /// As the `&` overload, for an rvalue (returned as one).
  HttpResponse&& close_connection() && noexcept { return std::move(close_connection()); }

  /// For the encoder: the header lines added with header().
  std::string_view header_block() const noexcept {
    return overflow_.empty() ? std::string_view(inline_.data(), inline_size_) : std::string_view(overflow_);
  }
  /// For the encoder: the lines of the attached HeaderBlock (empty without one).
  std::string_view shared_header_block() const noexcept {
    return shared_headers_ != nullptr ? shared_headers_->bytes() : std::string_view();
  }
  /// For the encoder: the attached HeaderBlock's id (0 without one).
  std::uint64_t shared_header_block_id() const noexcept { return shared_headers_ != nullptr ? shared_headers_->id() : 0; }
  /// For the encoder: the body's bytes, owned or borrowed.
  [[gnu::always_inline]] std::string_view body_bytes() const noexcept {
    return body_.has_storage() ? body_.view() : body_view_;
  }
  /// For the encoder: the owned body (empty when the body is borrowed).
  ByteBuf& owned_body() noexcept { return body_; }
  /// For the encoder: the file body (empty unless body(FileRegion) set one).
  FileRegion& file_body() noexcept { return file_; }
  /// For the encoder: the body's length, a file body's included (a streamed body's declared one, or 0).
  std::size_t body_size() const noexcept {
    return file_ ? static_cast<std::size_t>(file_.length()) : body_bytes().size();
  }
  /// For the encoder: the producer of a streamed body (null unless stream() set one).
  const std::shared_ptr<const BodyProducer>& producer() const noexcept { return producer_; }
  /// For the encoder: a streamed body's declared length, if any.
  std::optional<std::uint64_t> stream_length() const noexcept { return stream_length_; }
  /// Whether close_connection() was asked for.
  bool closes_connection() const noexcept { return close_; }
  /// The value of the first header named `name` (case-insensitive), among the attached HeaderBlock's
  /// lines and those added with header(); nullopt when there is none. For middleware: it scans.
  std::optional<std::string_view> find_header(std::string_view name) const noexcept;

 private:
  void append(std::string_view a, std::string_view b, std::string_view c, std::string_view d);
  void drop_producer() noexcept {
    producer_.reset();
    stream_length_.reset();
  }

  int status_;
  bool close_ = false;
  std::uint64_t request_sequence_ = 0;
  const HeaderBlock* shared_headers_ = nullptr;
  std::size_t inline_size_ = 0;
  std::array<char, 256> inline_;
  std::string overflow_;  // used once the headers outgrow the inline space
  ByteBuf body_;
  std::string_view body_view_;
  FileRegion file_;
  std::shared_ptr<const BodyProducer> producer_;
  std::optional<std::uint64_t> stream_length_;
};

}  // namespace weft::http
