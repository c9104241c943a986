#pragma once
/// @file
/// BodyReader: a request's body read a chunk at a time by a streamed route (Router::StreamFn).
///
///   router->post("/upload", [](Request& request, BodyReader& body) -> Task<HttpResponse> {
///     body.limit(8ull << 30);                              // optional: 413 past 8 GiB
///     while (std::optional<ByteBuf> chunk = co_await body.next()) store(*chunk);
///     co_return HttpResponse(201);
///   });
///
/// Backpressure (HTTP/1.1): the codec hands chunks over as they arrive, and stops reading the
/// socket while kStreamBodyBufferBound bytes (or kStreamBodyMaxChunks chunks) wait for the reader; it
/// reads again once the reader has taken them down to half. A slow reader keeps the server's memory
/// bounded whatever the body's size: Limits::max_body does not apply to a streamed body.
///
/// Framing: Content-Length and chunked (the trailer section is trailer_block() after the end).
/// Expect: 100-continue is answered when the reader first calls next(), not before.
///
/// The end: next() gives nullopt once the whole body has arrived. A body that cannot end fails
/// next() with a typed error, never a truncated success: ChannelClosedError (the client closed or
/// reset the connection mid-body), HttpProtocolError (400: malformed chunked framing; 408: no byte
/// for Limits::request_timeout while bytes were owed; the router answers its status when it
/// escapes the route), BodyTooLargeError (past limit(); the router answers 413 when it escapes).
///
/// Letting go before the end (the route returns without reading all): the rest is read and
/// dropped, up to kStreamBodyDiscardBound bytes, as nginx does; a longer rest (a declared length
/// past it, or a chunked body that goes on past it), or a body whose 100 Continue was never sent,
/// closes the connection after the answer (`Connection: close`) instead.
///
/// HTTP/2 (weft's http2::ServerCodec): the request is handed over at its HEADERS and next() gives
/// its DATA as they arrive; the stream's flow-control window is returned only as the reader takes
/// (the connection's at once), so at most the stream's initial window (Settings::initial_window_size)
/// waits for a reader that does not read, and peak_buffered_bytes() stays within it. max_body does
/// not apply; limit() does. trailer_block() gives the trailing HEADERS as "name: value\r\n" lines.
/// A RST_STREAM from the client or the connection's end fails a waiting next() with
/// ChannelClosedError (as a reset connection does on HTTP/1.1). A client that owes bytes and sends
/// none for Settings::request_timeout (from the HEADERS, then from each take) fails it with
/// HttpProtocolError(408); the stream is then reset with CANCEL after the answer. Letting go before
/// the end drops the rest (its window returned); the stream is reset with NO_ERROR once the answer has ended.
///
/// A router behind neither codec: next() gives the body the request came with, in one chunk.
/// Loop thread of the request's channel only (a route's task runs there).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/core/error.h"
#include "weft/core/task.h"

namespace weft::http {

namespace detail {
class BodySource;
}

/// HTTP/1.1: bytes waiting for a streamed body's reader past which the socket is no longer read.
inline constexpr std::size_t kStreamBodyBufferBound = 256u << 10;
/// HTTP/1.1: chunks waiting for the reader past which the socket is no longer read (each chunk may
/// keep a whole read buffer alive).
inline constexpr std::size_t kStreamBodyMaxChunks = 64;
/// HTTP/1.1: what is read and dropped of a body its route let go of before the connection is
/// closed instead.
inline constexpr std::uint64_t kStreamBodyDiscardBound = 1u << 20;

/// A streamed body grew past BodyReader::limit(); the router answers 413 when it escapes a route.
class BodyTooLargeError : public Error {
 public:
  using Error::Error;
};

/// A request's body, chunk by chunk (see the file's description). Move-only; loop thread only.
class BodyReader {
 public:
  /// An empty handle (valid() is false).
  BodyReader() noexcept = default;
  /// For the router: the body's source.
  explicit BodyReader(std::shared_ptr<detail::BodySource> source) noexcept;
  /// Takes over another handle's body (the other is left empty).
  BodyReader(BodyReader&& other) noexcept;
  /// Lets go of the body this handle held first (as the destructor does).
  BodyReader& operator=(BodyReader&& other) noexcept;
  /// Lets go of the body: unless it has ended, the rest is dropped (see the file's description).
  ~BodyReader();

  /// Whether the handle holds a body.
  bool valid() const noexcept { return source_ != nullptr; }
  /// Loop thread only; one call at a time. The next chunk as it came, or nullopt at the end; fails
  /// as the file's description says (std::logic_error while another next() waits, or on an empty handle).
  Task<std::optional<ByteBuf>> next();
  /// Loop thread only. Caps the body's total length: a declared Content-Length past `max_bytes`
  /// fails the next next() at once, a body that grows past it fails it when it does
  /// (BodyTooLargeError), and the rest is not read (the connection closes after the answer).
  void limit(std::uint64_t max_bytes);
  /// The declared Content-Length; nullopt for a chunked body.
  std::optional<std::uint64_t> content_length() const noexcept;
  /// Loop thread only. Bytes handed out by next() so far.
  std::uint64_t received_bytes() const noexcept;
  /// Loop thread only. Bytes that arrived and wait for next() now.
  std::size_t buffered_bytes() const noexcept;
  /// Loop thread only. The most bytes that ever waited for next() at once (the backpressure's
  /// measure: at most kStreamBodyBufferBound and one socket read).
  std::size_t peak_buffered_bytes() const noexcept;
  /// Loop thread only. A chunked body's trailer lines ("Name: value\r\n" each), once next() gave
  /// nullopt; empty when none came.
  std::string_view trailer_block() const noexcept;

 private:
  std::shared_ptr<detail::BodySource> source_;
};

}  // namespace weft::http
