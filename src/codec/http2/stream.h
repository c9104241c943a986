#pragma once
// One HTTP/2 stream as the server codec keeps it: the request while it arrives (its header fields
// as records in one pooled buffer, its body), then the response body while it leaves; or, for a
// stream served as a channel, the child that holds both. Stream objects are reused: a connection
// makes at most as many as it has streams open at once.

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "route_body.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/file_region.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/metrics/http_server_metrics.h"

namespace weft::http2 {

struct ServerCodec::Stream {
  std::int32_t id = 0;
  bool live = false;          // between the request's first HEADERS and the stream's close
  bool complete = false;      // the request is whole (END_STREAM received)
  bool dispatched = false;    // handed to the pipeline (or answered by the codec)
  bool answered = false;      // a final response was submitted
  bool head_request = false;  // :method HEAD: the response has no DATA
  // metrics::MethodClass of :method, for the answer's metrics (other until the head is read)
  std::uint8_t method_class = kUnknownMethod;
  static constexpr auto kUnknownMethod = static_cast<std::uint8_t>(metrics::MethodClass::other);
  int error_status = 0;       // 431 / 413 / 503 / 408: answered by the codec, never handed to the pipeline
  TimePoint began{};          // when its HEADERS were read (the request timeout counts from it)
  std::uint32_t header_list_size = 0;  // RFC 9113 6.5.2: names, values, 32 bytes each
  std::uint32_t header_count = 0;      // regular fields (no pseudo-headers)
  std::optional<std::uint64_t> content_length;

  // Every field received, in order, as [u32 name size][u32 value size][name][value]; views into
  // it are made once the head is whole (the buffer may move while it grows).
  ByteBuf fields;
  ByteBuf body;

  // The response body: owned (its reader index is what was sent), or borrowed for the length of
  // the write that submitted it (then copied if it could not all leave at once).
  ByteBuf out_body;
  std::string_view out_view;
  std::size_t out_view_sent = 0;
  std::size_t out_promised = 0;  // handed to the session by the data source, not yet serialised
  FileRegion out_file;           // a file body: read into each DATA frame as it is serialised

  // A stream served as a channel (Settings::stream_initializer): its child, which holds the
  // body's chunks both ways. Null for a stream served whole.
  std::shared_ptr<StreamChannel> child;
  bool cancelled = false;  // reset by the server for its child's close or a body timeout (not a glitch)
  // An extended CONNECT (RFC 8441, :protocol): dispatched at its HEADERS; its DATA is kept (body)
  // until the route serves it as a channel (serve_as_channel) or answers it (then it is dropped).
  bool tunnel = false;
  // A Router's streamed route's request body (dispatched at its HEADERS), or a streamed response
  // body (HttpResponse::stream): null for a stream served whole.
  std::unique_ptr<RouteBody> route;

  std::size_t out_remaining() const noexcept {
    if (out_file) return static_cast<std::size_t>(out_file.length());
    return out_body.has_storage() ? out_body.readable_bytes() : out_view.size() - out_view_sent;
  }

  void append_field(ByteBufAllocator& allocator, std::string_view name, std::string_view value) {
    const std::size_t need = 8 + name.size() + value.size();
    if (!fields.has_storage()) fields = allocator.buffer(need > 512 ? need : 512);
    fields.ensure_writable(need);
    std::uint8_t* w = fields.write_ptr();
    store_u32_le(w, static_cast<std::uint32_t>(name.size()));
    store_u32_le(w + 4, static_cast<std::uint32_t>(value.size()));
    if (!name.empty()) std::memcpy(w + 8, name.data(), name.size());
    if (!value.empty()) std::memcpy(w + 8 + name.size(), value.data(), value.size());
    fields.advance_writer(need);
  }

  static void store_u32_le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
  }

  // Calls f(name, value) for each field recorded, in order; the views point into `fields`.
  template <class F>
  void for_each_field(F&& f) const {
    const std::uint8_t* p = fields.read_ptr();
    const std::uint8_t* const end = p + fields.readable_bytes();
    while (p + 8 <= end) {
      const std::uint32_t name_size = load_u32_le(p);
      const std::uint32_t value_size = load_u32_le(p + 4);
      p += 8;
      const std::string_view name(reinterpret_cast<const char*>(p), name_size);
      const std::string_view value(reinterpret_cast<const char*>(p + name_size), value_size);
      p += name_size + value_size;
      f(name, value);
    }
  }

  static std::uint32_t load_u32_le(const std::uint8_t* p) noexcept {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
  }

  // Back to the state of a new stream; keeps nothing of the old one.
  void reset() noexcept {
    id = 0;
    live = complete = dispatched = answered = head_request = false;
    error_status = 0;
    method_class = kUnknownMethod;
    header_list_size = header_count = 0;
    content_length.reset();
    fields.release();
    body.release();
    out_body.release();
    out_view = {};
    out_view_sent = out_promised = 0;
    out_file = FileRegion();
    if (child) child.reset();
    if (route) route.reset();
    cancelled = false;
    tunnel = false;
  }
};

}  // namespace weft::http2
