#pragma once
/// @file
/// http2::ClientStream: one request of the HTTP/2 client streamed both ways, for coroutines on the
/// connection's loop (ClientCodec::open, client::Http2Connection::open).
///
///   http::Header fields[] = {{"content-type", "application/grpc"}, {"te", "trailers"}};
///   http2::ClientStream s = client->open("POST", "/pkg.Service/Method", fields);  // on the client's loop
///   co_await s.write(std::move(chunk));          // waits while ClientSettings::max_buffered_upload is queued
///   s.end();                                     // END_STREAM after what is queued
///   int status = co_await s.response();          // the response's head: s.head()
///   while (std::optional<ByteBuf> data = co_await s.read()) use(*data);   // DATA as it comes
///   for (const auto& f : s.trailers()) ...;      // once read() gave nullopt
///
/// Backpressure both ways. Outbound, write() queues the chunk and returns at once while the bytes
/// queued on the stream are within ClientSettings::max_buffered_upload; past it, it waits until the
/// peer's flow-control windows have let them leave down to the bound (the chunk itself is held by
/// reference; nothing else is buffered). Inbound, the stream's receive window is returned to the
/// server only as read() hands chunks out: a stream nobody reads holds at most
/// ClientSettings::initial_window_size bytes, and its server stops sending (the connection's window
/// is returned on receipt, so one slow stream does not stall the others).
///
/// A reset (the server's RST_STREAM, or reset() here), the connection's end and a GOAWAY that
/// drops the stream make the waiting and later write()/response()/read() throw (ClientStreamError,
/// ChannelClosedError). Dropping the last handle of a stream still receiving resets it (CANCEL);
/// of one whose response has ended, ends its request (END_STREAM) if that was not done.
///
/// Threads: everything is loop thread only (the connection's loop): open the stream and run the
/// coroutines that use it there (spawn(client->channel().loop(), ...)). One coroutine may wait in
/// write()/end() while another waits in response()/read().

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/clock.h"
#include "weft/core/inline_ring.h"
#include "weft/core/task.h"

namespace weft::http2 {

class ClientCodec;

/// One streamed request and its response (see the file's description). A move-only handle; loop thread only.
class ClientStream {
 public:
  struct State;  // shared with the codec (client_stream.cc)

  /// An empty handle (valid() is false).
  ClientStream() noexcept = default;
  /// Loop thread only. Takes `state` (ClientCodec::open makes it).
  explicit ClientStream(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  /// Moves the stream: the moved-from handle holds none.
  ClientStream(ClientStream&&) noexcept = default;
  /// Loop thread only. Lets go of the stream this handle held, as the destructor does.
  ClientStream& operator=(ClientStream&& other) noexcept;
  /// Loop thread only. Resets the stream (CANCEL) if its response has not ended; ends the request
  /// (END_STREAM) if the response has ended and the request had not.
  ~ClientStream();

  /// Whether the handle holds a stream.
  bool valid() const noexcept { return state_ != nullptr; }
  /// Loop thread only. The stream id, given when the stream is opened (ClientCodec::open) even while
  /// its HEADERS wait for the server's concurrency limit; 0 for a stream that could not open.
  std::int32_t id() const noexcept;

  /// Loop thread only. Queues `chunk` as request body; waits while more than the bound is queued
  /// (see the file's description). Throws std::logic_error after end(); the stream's failure once it
  /// is reset or its connection closed.
  Task<> write(ByteBuf chunk);
  /// Loop thread only. As write(chunk), for a chunk in two parts queued as one unit: nothing written
  /// or ended after it (end(), a reset aside) comes between `prefix` and `chunk` (a gRPC message's
  /// prefix and its bytes, the bytes by reference).
  Task<> write(ByteBuf prefix, ByteBuf chunk);
  /// Loop thread only. Ends the request (END_STREAM after the queued chunks); returns at once. Does
  /// nothing after end() or once the stream is closed.
  void end();
  /// Loop thread only. Waits for the response's head (1xx skipped) and returns its status; throws
  /// the stream's failure when it ends without one.
  Task<int> response();
  /// Loop thread only. The response's head (status, header fields, lowercase), once response() returned.
  const http::HttpClientResponse& head() const noexcept;
  /// Loop thread only. Moves the response's head out, once response() returned (head() is then empty).
  http::HttpClientResponse take_head() noexcept;
  /// Loop thread only. Whether the head came with END_STREAM (no body, no trailers; gRPC's Trailers-Only).
  bool head_ended() const noexcept;
  /// Loop thread only. The next chunk of the response body as it came (one DATA frame's payload or
  /// less); nullopt once the response has ended (trailers() are then known). Waits for the head
  /// first. Throws the stream's failure.
  Task<std::optional<ByteBuf>> read();
  /// Loop thread only. The trailers, once read() gave nullopt (empty when none came).
  const Fields& trailers() const noexcept;
  /// Loop thread only. Whether the response has ended (its END_STREAM received) or the stream failed.
  bool response_ended() const noexcept;
  /// Loop thread only. When the request's HEADERS left; TimePoint{} while they wait for the
  /// server's SETTINGS_MAX_CONCURRENT_STREAMS (the stream is not open on the wire yet, so a
  /// write() waiting then waits for the server's other streams, not for this one's window).
  TimePoint headers_sent_at() const noexcept;
  /// Loop thread only. Resets the stream with `error_code` (RST_STREAM) unless it is closed
  /// already; waiting and later calls throw ClientStreamError (`error_code`, not refused).
  void reset(std::uint32_t error_code = 0x8 /* CANCEL */);

 private:
  std::shared_ptr<State> state_;
};

}  // namespace weft::http2
