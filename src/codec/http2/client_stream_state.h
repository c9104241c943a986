#pragma once
// What a streamed request shares between its handle (http2::ClientStream) and the codec that
// carries it (http2::ClientCodec). Loop thread only.

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/clock.h"
#include "weft/core/inline_ring.h"

namespace weft::http2 {

// What a write() throws when the stream closed cleanly (the server's response had ended, then its
// RST_STREAM(NO_ERROR)) before the bytes it waited for were sent (State::upload_error).
class UploadDroppedError final : public ClientStreamError {
 public:
  using ClientStreamError::ClientStreamError;
};

struct ClientStream::State {
  ClientCodec* codec = nullptr;  // null once the connection has ended
  std::int32_t id = 0;

  // Outbound: the chunks queued, their bytes, and whether END_STREAM follows them.
  InlineRing<ByteBuf, 4> upload;
  std::size_t queued = 0;
  bool end_requested = false;
  bool data_deferred = false;  // the session waits for resume_data
  TimePoint headers_sent_at{};  // when the HEADERS left; zero while they wait for the server's limit
  std::coroutine_handle<> writer;

  // Inbound.
  bool head_done = false;
  bool head_ended = false;  // the head came with END_STREAM
  http::HttpClientResponse head;
  InlineRing<ByteBuf, 8> chunks;
  bool ended = false;  // END_STREAM received: chunks and trailers are all here
  Fields trailers;
  std::coroutine_handle<> reader;

  std::exception_ptr error;  // the stream failed: reset, refused, the connection closed
  // The stream closed without an error while request bytes were still queued (dropped then):
  // what a write() waiting for them throws.
  std::exception_ptr upload_error;
  bool closed = false;       // the session closed the stream, or it failed
  bool wake_queued = false;  // in the codec's list of streams to resume
};

}  // namespace weft::http2

#include <vector>

#include "frame.h"

namespace weft::http2 {

// The fields of ClientCodec::open (the session copies those of a request that must wait).
struct ClientCodec::FieldRefs {
  std::vector<detail::HeaderField> nv;
};

}  // namespace weft::http2
