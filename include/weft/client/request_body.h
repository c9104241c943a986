#pragma once
/// @file
/// client::RequestBody: a request's body written a chunk at a time, with backpressure, as
/// HttpClient::upload() gives it; client::Upload: that body and the future of the answer.
///
///   weft::client::Upload up = client.upload("PUT", "http://127.0.0.1:8080/file");   // chunked
///   for (weft::ByteBuf& chunk : chunks) co_await up.body.write(std::move(chunk));  // waits while the connection is
///   full co_await up.body.finish(); weft::client::StreamedResponse r = co_await up.response;                      //
///   its body as stream() gives it
///
/// Backpressure: write() completes when the connection can take more. HTTP/1.1: once the chunk is
/// in the channel's write queue and the channel is writable (below its high water mark); HTTP/2:
/// once the stream's and the connection's flow-control windows have let the bytes queued on the
/// stream leave down to http2::ClientSettings::max_buffered_upload. A server that never reads keeps
/// the client's memory bounded by those bounds and the socket's buffers, whatever the caller writes.
///
/// Framing: HTTP/1.1 sends `Transfer-Encoding: chunked`, or exactly `content_length` bytes when the
/// caller declares it (writing more fails that write, finishing short fails finish(), each with
/// RequestBodyError too_long / too_short; the request fails with it and its connection is closed).
/// HTTP/2 sends DATA frames, with `content-length` when declared (checked the same way).
///
/// The answer: Upload::response completes with the response's head (its body read as it comes,
/// ResponseBody) once it arrives, which may be before the upload's end. A final status >= 300
/// before the end stops the upload: write()/finish() fail with RequestBodyError answered; the
/// HTTP/1.1 connection is then not reused; the HTTP/2 stream is reset with NO_ERROR once its
/// response has ended (RFC 9113 8.1), its connection serving on. A 2xx answer lets the upload go on
/// (full duplex); on HTTP/1.1 an answer that ends before the body does stops it the same way (on
/// HTTP/2 the server ending the stream fails the waiting write with http2::ClientStreamError).
///
/// Letting go before finish() (abandon(), or destroying the last handle): the request fails with
/// RequestBodyError abandoned; the HTTP/1.1 connection is closed, the HTTP/2 stream is reset
/// (RST_STREAM CANCEL) and its connection goes on serving other streams. A request whose body is
/// streamed is never sent twice (it cannot be replayed): no retry, whatever failed.
///
/// Timeouts: request_timeout covers the whole upload until the response's head (set it to zero for
/// long uploads); idle_timeout fires (TimeoutError idle) when the connection could take no more of
/// the body for that long (a server that stopped reading), never while the caller is slow to write.

#include <memory>

#include "weft/buffer/byte_buf.h"
#include "weft/client/response_body.h"
#include "weft/core/future.h"

namespace weft::client {

namespace detail {
class UploadStream;
}

/// A streamed request's body (see the file's description). A move-only handle; let go of it before
/// the client's EventLoopGroup is destroyed (it lives on one of its loops).
class RequestBody {
 public:
  /// An empty handle (valid() is false).
  RequestBody() noexcept = default;
  /// For the client: the body's stream.
  explicit RequestBody(std::shared_ptr<detail::UploadStream> stream) noexcept : stream_(std::move(stream)) {}
  /// Takes over another handle's body (the other is left empty).
  RequestBody(RequestBody&&) noexcept = default;
  /// Lets go of the body this handle held first (as the destructor does).
  RequestBody& operator=(RequestBody&& other) noexcept;
  /// Abandons the body unless finish() was called (see abandon()).
  ~RequestBody();

  /// Whether the handle holds a body.
  bool valid() const noexcept { return stream_ != nullptr; }
  /// Thread-safe; one call at a time (write() or finish() once this one's future completed).
  /// Sends `chunk` (an empty one is skipped); completes when the connection can take more, its
  /// listeners (a co_await's resumption) on the caller's loop when the caller is on one. Fails with
  /// RequestBodyError (too_long, answered), the request's own failure (TimeoutError, ChannelClosedError,
  /// http2::ClientStreamError...), std::logic_error while another call waits or after finish().
  Future<void> write(ByteBuf chunk);
  /// Thread-safe; one call at a time. Ends the body; completes once its last bytes were handed to
  /// the connection. Fails as write() does (RequestBodyError too_short for a declared length not reached).
  Future<void> finish();
  /// Thread-safe. Gives the body up before its end (see the file's description); a write() waiting
  /// fails with RequestBodyError abandoned. Does nothing after finish().
  void abandon();

 private:
  std::shared_ptr<detail::UploadStream> stream_;
};

/// A request whose body is written as it goes (HttpClient::upload).
struct Upload {
  RequestBody body;                   ///< where the body is written
  Future<StreamedResponse> response;  ///< the response's head and body, once its head arrives
};

}  // namespace weft::client
