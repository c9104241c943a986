#pragma once
// A stream's streamed bodies for the router (server_codec_route.cc): the request's body handed to
// a StreamFn route's BodyReader as DATA arrives, its window returned as the reader takes it; and a
// response's body (HttpResponse::stream) sent as DATA frames as its producer writes. Made for a
// stream that has either; dropped with the stream (its reader and writer are told: ChannelClosedError).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "../http1/body_sink.h"
#include "../http1/body_source.h"
#include "weft/buffer/byte_buf.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/clock.h"
#include "weft/core/inline_ring.h"

namespace weft::http2 {

namespace detail {
// A streamed response's bytes written and not yet framed past which its producer's write() waits
// (the server holds at most this and one chunk per stream, beside the channel's queue).
inline constexpr std::size_t kRouteOutBound = 64 * 1024;
// The first size of a buffer that gathers a streamed request's small DATA payloads.
inline constexpr std::size_t kRouteInChunk = 16 * 1024;
}  // namespace detail

struct ServerCodec::RouteBody final : http::detail::BodySourceLink, http::detail::BodySinkLink {
  RouteBody(ServerCodec& c, std::int32_t stream_id) noexcept : codec(c), id(stream_id) {}
  RouteBody(const RouteBody&) = delete;
  RouteBody& operator=(const RouteBody&) = delete;
  ~RouteBody() { close(); }

  // ---- BodySourceLink (the route's reader)
  void body_taken(http::detail::BodySource& source, std::size_t n) override;
  void body_abandoned(http::detail::BodySource& source, std::size_t dropped) override;
  // ---- BodySinkLink (the response's producer)
  bool sink_write(ByteBuf chunk) override;
  bool sink_writable() const noexcept override;
  void sink_finish(const http::HeaderBlock& trailers) override;
  void sink_ended(bool finished) override;

  // The stream is gone (closed, reset, or the connection ended): a reader still waiting and a
  // writer fail with ChannelClosedError.
  void close() noexcept;

  ServerCodec& codec;
  std::int32_t id;
  // The request's body: fed by DATA until END_STREAM (then detached).
  std::shared_ptr<http::detail::BodySource> in;
  std::size_t in_retained = 0;  // capacity of the read buffers its slices keep alive
  std::string in_trailers;      // "name: value\r\n" each, handed over at the end
  // Since when the client owes body bytes (its HEADERS, then the reader's last take): with nothing
  // waiting unread, Settings::request_timeout after it the body fails with 408 (time_out_requests).
  TimePoint in_owed_since{};
  // The response's body: chunks written and not yet framed (out_bytes of them), out_promised of
  // those handed to the session's data source.
  std::shared_ptr<http::detail::BodySink> out;
  bool streaming = false;  // the response's DATA come from out_data (read_route)
  InlineRing<ByteBuf, 8> out_data;
  std::size_t out_bytes = 0;
  std::size_t out_promised = 0;
  bool out_ended = false;  // finish() was called: END_STREAM (or the trailers) once all has left
  bool deferred = false;   // the data source waits for more (resume_data)
  std::optional<Fields> out_trailers;
};

}  // namespace weft::http2
