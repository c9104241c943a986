#pragma once
/// @file
/// client::ResponseBody: a response's body read a chunk at a time, as HttpClient::stream() gives
/// it; client::StreamedResponse: the head and that body.
///
///   weft::client::StreamedResponse r = co_await client.stream("GET", "http://127.0.0.1:8080/big");
///   while (std::optional<weft::ByteBuf> chunk = co_await r.body.next()) consume(*chunk);
///   r.body.next().add_listener([](const auto& f) { ... });   // the callback form: one call at a time
///
/// Backpressure: the body is fetched as it is read. HTTP/1.1 reads the socket while fewer than
/// kBodyBufferBound (256 KiB) bytes wait for the reader, and suspends it past that; HTTP/2 returns the
/// stream's flow-control window (WINDOW_UPDATE) only as next() hands chunks out, so a stream nobody
/// reads holds at most the stream's window (1 MiB). A slow reader keeps the client's memory bounded
/// whatever the body's size (ClientOptions::max_response_body does not apply).
///
/// The end: next() gives nullopt; trailers() are then known (HTTP/2's trailing HEADERS, chunked
/// HTTP/1.1's trailer section). A body that cannot end fails next() with a typed error:
/// ChannelClosedError (the server closed or reset the connection mid-body),
/// http2::ClientStreamError (the stream was reset), http::HttpProtocolError (a malformed body),
/// TimeoutError with kind() idle (no byte for ClientOptions::idle_timeout while the body was owed
/// and the reader waiting or room left for it). Never a truncated success.
///
/// Letting go early (cancel(), or destroying the body before its end): the HTTP/1.1 connection,
/// whose unread bytes would be read as the next answer, is closed and never reused; the HTTP/2
/// stream is reset (RST_STREAM CANCEL) and its connection goes on serving other requests.

#include <cstddef>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/future.h"

namespace weft::client {

namespace detail {
class BodyStream;
}

/// HTTP/1.1: bytes waiting for the reader past which the socket is no longer read.
inline constexpr std::size_t kBodyBufferBound = 256u << 10;

/// A streamed response's body (see the file's description). A move-only handle; let go of it
/// before the client's EventLoopGroup is destroyed (it lives on one of its loops).
class ResponseBody {
 public:
  /// An empty handle (valid() is false).
  ResponseBody() noexcept = default;
  /// For the client: the body's stream.
  explicit ResponseBody(std::shared_ptr<detail::BodyStream> stream) noexcept : stream_(std::move(stream)) {}
  /// Takes over another handle's body (the other is left empty).
  ResponseBody(ResponseBody&&) noexcept = default;
  /// Lets go of the body this handle held first (as the destructor does).
  ResponseBody& operator=(ResponseBody&& other) noexcept;
  /// Cancels the body unless it has ended (see cancel()).
  ~ResponseBody();

  /// Whether the handle holds a body.
  bool valid() const noexcept { return stream_ != nullptr; }
  /// Thread-safe; one call at a time (the next once this one's future completes). The next chunk
  /// of the body as it came, or nullopt at its end; its listeners (a co_await's resumption) run on
  /// the caller's loop when the caller is on one. Fails as the file's description says;
  /// std::logic_error while another next() waits, ClientClosedError after cancel().
  Future<std::optional<ByteBuf>> next();
  /// Thread-safe. Stops the body (see the file's description); a next() waiting fails with
  /// ClientClosedError. Does nothing once the body has ended.
  void cancel();
  /// The trailers, once next() gave nullopt (empty when none came). Not thread-safe: read them
  /// after that next() completed.
  const http2::Fields& trailers() const noexcept;

 private:
  std::shared_ptr<detail::BodyStream> stream_;
};

/// A response whose body is read as it comes (HttpClient::stream).
struct StreamedResponse {
  http::HttpClientResponse head;  ///< status, version, headers; its body() is empty
  ResponseBody body;              ///< the body, chunk by chunk
};

}  // namespace weft::client
