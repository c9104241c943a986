// ServerCodec's streamed bodies for a Router (route_body.h): a StreamFn route's request body handed
// over as its DATA arrive, the stream's window returned as the route reads; a response's body
// (HttpResponse::stream) sent as DATA frames as its producer writes, as the windows allow.

#include <memory>
#include <string>
#include <utility>

#include "route_body.h"
#include "session.h"
#include "stream.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/channel/pipeline.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft::http2 {

namespace {

constexpr std::size_t kSliceAt = 8192;  // a DATA payload this large is a slice of the input

}  // namespace

// ---- the request's body

// Whether the stream's request goes to a StreamFn route (the first Router in the pipeline with
// such routes decides, as for HTTP/1.1).
bool ServerCodec::wants_streamed_body(const Stream& s) {
  if (!router_looked_) {
    router_looked_ = true;
    Pipeline& pipeline = ctx_->pipeline();
    for (const std::string& name : pipeline.names()) {
      auto* router = dynamic_cast<http::Router*>(pipeline.get(name));
      if (router == nullptr || !router->has_streamed_routes()) continue;
      router_ = std::static_pointer_cast<const http::Router>(router->shared_from_this());
      break;
    }
  }
  if (router_ == nullptr) return false;
  std::string_view method, path;
  s.for_each_field([&](std::string_view name, std::string_view value) {
    if (name == ":method")
      method = value;
    else if (name == ":path")
      path = value.substr(0, value.find('?'));
  });
  return router_->streams_body(method, path);
}

// HEADERS without END_STREAM for a streamed route: the request is dispatched now; its DATA go to
// the route's reader, the stream's window returned only as it reads.
int ServerCodec::open_route_body(Stream& s) {
  try {
    auto body = std::make_unique<RouteBody>(*this, s.id);
    body->in = http::detail::make_body_source(ctx_->loop(), s.content_length);
    body->in->attach(static_cast<http::detail::BodySourceLink&>(*body));
    body->in_owed_since = s.began;  // (acquire_stream armed the deadline for it)
    s.route = std::move(body);
    ready_.push_back(s.id);
  } catch (const std::exception&) {
    s.route.reset();
    return detail::Result::reset_stream;
  }
  session_->manual_window_for(s.id);
  s.header_list_size = s.header_count = 0;  // trailers are counted on their own
  return 0;
}

// A DATA payload of a streamed route's body: the connection's window is returned now, the
// stream's as the route reads. Large payloads are slices of the input while the buffers they keep
// alive stay within the stream's window; others are gathered by copy.
int ServerCodec::route_data(Stream& s, const std::uint8_t* data, std::size_t len) {
  session_->consume_connection(len);
  RouteBody& r = *s.route;
  if (r.in->abandoned() || r.in->ended()) {  // nobody will read it
    consume_stream(s.id, len);
    return 0;
  }
  try {
    const std::uint8_t* base = receiving_ != nullptr ? receiving_->read_ptr() : nullptr;
    if (len >= kSliceAt && base != nullptr && data >= base && data + len <= base + receiving_->readable_bytes() &&
        r.in_retained < settings_.initial_window_size) {
      const std::size_t at = receiving_->reader_index() + static_cast<std::size_t>(data - base);
      r.in_retained += receiving_->capacity();
      r.in->push(receiving_->slice(at, len));
    } else {
      r.in->push_copy(data, len, ctx_->allocator(), detail::kRouteInChunk);
    }
  } catch (const std::exception&) {
    return detail::Result::reset_stream;
  }
  return 0;
}

// A trailer field of a streamed route's body, within the same bounds as the head's.
int ServerCodec::route_trailer(Stream& s, std::string_view name, std::string_view value) {
  s.header_list_size += static_cast<std::uint32_t>(name.size() + value.size() + 32);
  if (s.header_list_size > settings_.max_header_list_size || ++s.header_count > settings_.max_headers) {
    glitch("trailers too large");
    return calm_requested_ ? detail::Result::end_session : 0;
  }
  std::string& block = s.route->in_trailers;
  block.append(name).append(": ").append(value).append("\r\n");
  return 0;
}

// END_STREAM: the body has arrived whole.
void ServerCodec::end_route_body(Stream& s) {
  RouteBody& r = *s.route;
  r.in->end(std::move(r.in_trailers));
  r.in->detach();  // nothing more comes: its window need not be returned
}

void ServerCodec::RouteBody::body_taken(http::detail::BodySource& source, std::size_t n) {
  if (source.buffered_bytes() == 0) in_retained = 0;
  codec.consume_stream(id, n);
  if (codec.ctx_ != nullptr && codec.settings_.request_timeout > Duration::zero()) {
    in_owed_since = codec.ctx_->loop().turn_time();  // the window is back: bytes are owed again
    codec.want_deadline(*codec.ctx_, in_owed_since + codec.settings_.request_timeout);
  }
  if (codec.session_ != nullptr && !codec.finished_ && codec.session_->want_write()) codec.post_flush();
}

// The route let go before the end: what waited is dropped, and so is the rest as it comes (its
// window returned), until the response has ended and the stream is reset (RST_STREAM(NO_ERROR)).
void ServerCodec::RouteBody::body_abandoned(http::detail::BodySource&, std::size_t dropped) {
  in_retained = 0;
  codec.consume_stream(id, dropped);
  if (codec.session_ != nullptr && !codec.finished_ && codec.session_->want_write()) codec.post_flush();
}

// ---- the response's body (submit_streamed and its data source are in server_codec.cc)

bool ServerCodec::RouteBody::sink_write(ByteBuf chunk) {
  out_bytes += chunk.readable_bytes();
  out_data.push_back(std::move(chunk));
  if (deferred && codec.session_ != nullptr) {
    deferred = false;
    codec.session_->resume_data(id);
  }
  codec.post_flush();
  return sink_writable();
}

bool ServerCodec::RouteBody::sink_writable() const noexcept {
  return out_bytes < detail::kRouteOutBound && codec.ctx_ != nullptr && codec.ctx_->channel().is_writable();
}

void ServerCodec::RouteBody::sink_finish(const http::HeaderBlock& trailers) {
  out_ended = true;
  if (!trailers.bytes().empty()) {
    // "Name: value\r\n" lines, checked as HeaderBlock::add made them.
    Fields fields;
    std::string_view rest = trailers.bytes();
    while (!rest.empty()) {
      const std::size_t eol = rest.find("\r\n");
      const std::string_view line = rest.substr(0, eol);
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      fields.add_unchecked(line.substr(0, colon), value);
    }
    out_trailers.emplace(std::move(fields));
  }
  if (deferred && codec.session_ != nullptr) {
    deferred = false;
    codec.session_->resume_data(id);
  }
  codec.post_flush();
}

// The producer ended without finish(): the client must not take what it got for the whole body,
// so the stream is reset (RST_STREAM(INTERNAL_ERROR)) after what was written.
void ServerCodec::RouteBody::sink_ended(bool finished) {
  if (finished || codec.session_ == nullptr || codec.finished_) return;
  log(LogLevel::debug, "HTTP/2 stream {}: a streamed answer ended without finish(); reset", id);
  if (Stream* s = codec.stream(id)) s->cancelled = true;
  codec.session_->submit_rst_stream(id, detail::ErrorCode::internal_error);
  codec.post_flush();
}

void ServerCodec::RouteBody::close() noexcept {
  if (in != nullptr) {
    if (!in->ended()) {
      in->fail(std::make_exception_ptr(ChannelClosedError("the HTTP/2 stream was reset or its connection closed")));
    }
    in->detach();
    in.reset();
  }
  if (out != nullptr) {
    out->detach();
    out.reset();
  }
  out_data.clear();
  out_bytes = out_promised = 0;
  out_trailers.reset();
}

void ServerCodec::wake_route_writers() noexcept {
  for (const auto& owned : streams_) {
    if (owned->live && owned->route && owned->route->out) owned->route->out->writable();
  }
}

void ServerCodec::close_route_bodies() noexcept {
  for (const auto& owned : streams_) {
    if (owned->route) owned->route->close();
  }
}

}  // namespace weft::http2
