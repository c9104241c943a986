#pragma once
/// @file
/// BodyWriter: a response's body produced chunk by chunk (HttpResponse::stream).
///
///   co_return HttpResponse(200).content_type("text/plain").stream(
///       [](BodyWriter& body) -> Task<void> {
///         for (int i = 0; i < 1000; ++i) co_await body.write(ByteBuf::copy_of("line\n"));
///         co_await body.finish();
///       });
///
/// The producer starts once the response's turn has come (pipelined HTTP/1.1 answers still leave
/// in request order; those behind a streamed one wait for its end) and runs as a task of its own
/// on the channel's loop. It owns what its lambda captured until it ends, so a proxy route can
/// move a client::ResponseBody into it and pipe chunk by chunk, without copying.
///
/// Backpressure: write() hands the chunk to the channel and completes once the channel is
/// writable (below its write queue's high water mark); a client that reads slowly suspends the
/// producer, so the server buffers at most the channel's high water mark and one chunk.
///
/// Framing (HTTP/1.1): `Transfer-Encoding: chunked`, each write() one chunk, finish() the last
/// chunk with the trailers; with a content length given to stream(), `Content-Length` and the bytes
/// as they are (writing past it throws std::length_error; ending short is a failure, below). An
/// HTTP/1.0 client gets the bytes as they are and the connection closes after them. HEAD, 204 and
/// 304 get the head only; the producer is not run.
///
/// Failures, never a truncated success: once the connection is gone, write() and finish() throw
/// ChannelClosedError. A producer that ends without finish() (it returned or threw) leaves the body
/// unfinished: the connection is closed without the last chunk, so the client sees a failed body.
///
/// HTTP/2: each write() leaves as DATA frames as the stream's and the connection's send windows let
/// it; write() completes while fewer than 64 KiB of the stream's wait unframed and the channel is
/// writable (so a slow client holds at most that, one chunk and the channel's high water mark per
/// stream). finish(trailers) sends them as trailing HEADERS; a length given to stream() is sent as
/// content-length. A RST_STREAM from the client or the connection's end fails write() and finish()
/// with ChannelClosedError; a producer that ends without finish() resets the stream
/// (RST_STREAM(INTERNAL_ERROR)). Loop thread of the channel only.

#include <cstdint>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http1/http_message.h"
#include "weft/core/task.h"

namespace weft::http {

namespace detail {
class BodySink;
}

/// Writes a streamed response's body (see the file's description). Move-only; loop thread only.
class BodyWriter {
 public:
  /// For the codec: the body's sink.
  explicit BodyWriter(std::shared_ptr<detail::BodySink> sink) noexcept;
  /// Takes over another handle's body.
  BodyWriter(BodyWriter&&) noexcept;
  /// Takes over another handle's body.
  BodyWriter& operator=(BodyWriter&&) noexcept;
  ~BodyWriter();

  /// Loop thread only; one call at a time. Sends `chunk` (an empty one is skipped) and completes
  /// once the channel can take more. Throws ChannelClosedError when the connection is gone,
  /// std::length_error past the declared content length, std::logic_error after finish().
  Task<void> write(ByteBuf chunk);
  /// Loop thread only. Ends the body, with `trailers` when chunked (ignored otherwise). Throws
  /// ChannelClosedError when the connection is gone, std::length_error short of the declared length.
  Task<void> finish(const HeaderBlock& trailers = HeaderBlock());
  /// The length given to HttpResponse::stream, if any.
  std::optional<std::uint64_t> content_length() const noexcept;
  /// Bytes written so far.
  std::uint64_t written_bytes() const noexcept;

 private:
  std::shared_ptr<detail::BodySink> sink_;
};

}  // namespace weft::http
