#include "weft/codec/http2/server_codec.h"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <iterator>
#include <random>
#include <stdexcept>

#include "../http1/body_sink.h"
#include "response_headers.h"
#include "route_body.h"
#include "session.h"
#include "stream.h"
#include "stream_channel_allocator.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/events.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/core/error.h"
#include "weft/core/log.h"
#include "weft/metrics/http2_metrics.h"
#include "weft/metrics/http_server_metrics.h"

namespace weft::http2 {

namespace detail {
// Builds an http::HttpRequest from a stream (HttpRequest's members are private).
struct RequestAccess {
  static http::RequestHead& head(http::HttpRequest& r) noexcept { return r.head_; }
  static ByteBuf take_body(http::HttpRequest& r) noexcept { return std::move(r.body_); }
  static void fill(http::HttpRequest& r, ByteBuf fields, ByteBuf body, std::uint64_t sequence) noexcept {
    r.head_bytes_ = std::move(fields);
    r.body_ = std::move(body);
    r.sequence_ = sequence;
  }
};
}  // namespace detail

namespace {

constexpr std::size_t kCopyBodyBelow = 8192;    // larger owned bodies leave by reference
constexpr std::size_t kSliceInputAt = 8192;     // a child's DATA payload this large is a slice of the input
constexpr std::size_t kInChunk = 4096;          // the first size of a buffer that gathers small payloads
constexpr std::size_t kOutChunk = 16 * 1024;    // the first size of the output buffer
constexpr std::size_t kSpillAt = 64 * 1024;     // output written on to the channel at this size
// announce_shutdown's first GOAWAY (RFC 9113 6.8: "2^31-1"), and the PING whose ACK ends the first phase.
constexpr std::int32_t kMaxStreamId = 0x7fffffff;
constexpr std::uint64_t kGoawayPing = 0x676f61776179'2121;  // "goaway!!"

// WINDOW_UPDATE frames a client may send without a glitch. An update that returns at least
// kReturnedWindow bytes of DATA the server sent (counted twice: the connection's window and the
// stream's) is free, however many a client splits its returns into. Smaller ones -- the flood
// pattern -- spend a frame credit: each DATA frame sent earns kCreditPerDataFrame (grpc++ returns
// a message's 5-byte prefix and its body separately, on the stream and on the connection), each
// stream opened one (a client may widen its window as it opens it), a connection starts with 16
// (ServerCodec::window_update_credit_); the bank is capped here.
constexpr std::uint32_t kWindowUpdateCredit = 1024;
constexpr std::uint32_t kReturnedWindow = 512;
constexpr std::uint32_t kCreditPerDataFrame = 4;

// Settings::max_connection_age less up to 10% at random: connections made together leave apart.
Duration jittered_age(Duration age) {
  thread_local std::minstd_rand random(std::random_device{}());
  return age - Duration(static_cast<Duration::rep>(std::uniform_real_distribution<double>(0.0, 0.1)(random) *
                                                   static_cast<double>(age.count())));
}

// The thread's header list for responses (each loop is a thread; building one is not re-entrant).
detail::ResponseHeaders& response_headers() {
  thread_local detail::ResponseHeaders headers;
  return headers;
}

}  // namespace

// ---- the session's callbacks --------------------------------------------------

struct ServerCodec::Callbacks final : detail::SessionHooks {
  explicit Callbacks(ServerCodec& codec) noexcept : c(codec) {}
  ServerCodec& c;

  int on_begin_headers(std::int32_t stream_id) override {
    try {
      c.acquire_stream(stream_id);
    } catch (const std::bad_alloc&) {
      return detail::Result::reset_stream;  // the stream is reset
    }
    return 0;
  }

  int on_header(const detail::FrameInfo& frame, std::string_view n, std::string_view v) override {
    if (!frame.request) {
      // Trailers: kept for a stream served as a channel or a streamed route, dropped for one served whole.
      Stream* s = static_cast<Stream*>(frame.user_data);
      if (s != nullptr && s->route && s->route->in) return c.route_trailer(*s, n, v);
      if (s == nullptr || !s->child) return 0;
      return c.child_trailer(*s, n, v);
    }
    Stream* s = static_cast<Stream*>(frame.user_data);
    if (s == nullptr || s->error_status != 0) return 0;  // too large already: the rest is not kept
    s->header_list_size += static_cast<std::uint32_t>(n.size() + v.size() + 32);
    const bool pseudo = !n.empty() && n[0] == ':';
    if (!pseudo || n == ":protocol") ++s->header_count;  // (:protocol is kept as a field: fill_head)
    if (s->header_list_size > c.settings_.max_header_list_size || s->header_count > c.settings_.max_headers) {
      s->error_status = 431;
      s->fields.release();
      c.glitch("header list too large");
      return c.calm_requested_ ? detail::Result::end_session : 0;
    }
    if (pseudo && n == ":protocol") s->tunnel = true;  // (the session let it through: the setting was sent)
    if (n.size() == 14 && n == "content-length") {
      std::uint64_t length = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), length).ec == std::errc()) s->content_length = length;
    }
    try {
      s->append_field(c.ctx_->allocator(), n, v);
    } catch (const std::exception&) {
      return detail::Result::reset_stream;  // the stream is reset
    }
    return 0;
  }

  int on_data_chunk(const detail::FrameInfo& frame, const std::uint8_t* data, std::size_t len) override {
    const std::int32_t stream_id = frame.stream_id;
    Stream* s = static_cast<Stream*>(frame.user_data);
    if (s != nullptr && s->route && s->route->in) return c.route_data(*s, data, len);
    if (c.streams_enabled_) {
      // Windows are returned by hand: a child's stream as it reads; the rest at once.
      if (s != nullptr && s->child) return c.child_data(*s, data, len);
      if (s != nullptr && s->tunnel && s->error_status == 0) return c.tunnel_data(*s, data, len);
      c.session_->consume(stream_id, len);
    }
    if (s == nullptr || s->error_status != 0) return 0;
    const std::size_t have = s->body.readable_bytes();
    if (have + len > c.settings_.max_body) {
      s->error_status = 413;
      c.drop_body(*s);
      return 0;
    }
    // Settings::max_connection_body counts the memory the bodies hold (their buffers' capacity), so
    // that declared lengths cannot reserve more than it.
    const std::size_t budget = c.max_connection_body();
    const std::size_t held_before = s->body.has_storage() ? s->body.capacity() : 0;
    try {
      if (!s->body.has_storage()) {
        // The declared length when it is known (and allowed), so that the body is made once; one
        // that the connection cannot hold beside the others' is refused now.
        const std::size_t room = budget > c.body_bytes_ ? budget - c.body_bytes_ : 0;
        const bool declared = s->content_length && *s->content_length <= c.settings_.max_body;
        const std::size_t first = declared ? static_cast<std::size_t>(*s->content_length) : std::max<std::size_t>(len, 4096);
        if (std::max(first, len) > room) {
          s->error_status = 503;  // the connection holds too much body already (others' uploads)
          return 0;
        }
        s->body = c.ctx_->allocator().buffer(std::max(first, len));
      }
      s->body.write_bytes(data, len);
      c.body_bytes_ += s->body.capacity() - held_before;
    } catch (const std::exception&) {
      return detail::Result::reset_stream;  // the stream is reset
    }
    if (c.body_bytes_ > budget) {
      s->error_status = 503;  // the connection holds too much body already (others' uploads)
      c.drop_body(*s);
    }
    return 0;
  }

  int on_frame_recv(const detail::FrameInfo& frame) override {
    switch (frame.type) {
      case detail::FrameType::headers:
      case detail::FrameType::data: {
        if (frame.type == detail::FrameType::data && frame.length == 0 &&
            !(frame.flags & detail::FrameFlag::end_stream)) {
          c.glitch("empty DATA frame");
        }
        Stream* s = static_cast<Stream*>(frame.user_data);
        if (s == nullptr || s->complete) break;
        // A request is whole at END_STREAM; an error answer (431, 413) need not wait for it.
        const bool whole = (frame.flags & detail::FrameFlag::end_stream) != 0;
        if (s->child) {
          const int rv = c.child_frame(*s, frame.type, whole);
          if (rv != 0) return rv;
          break;
        }
        if (c.settings_.stream_initializer && frame.type == detail::FrameType::headers && frame.request &&
            s->error_status == 0) {
          const int rv = c.open_child(*s, whole);
          if (rv != 0) return rv;
          if (s->child) break;
        }
        if (s->route) {  // a streamed route's body: DATA or its trailers
          if (whole) {
            s->complete = true;
            c.end_route_body(*s);
          }
          break;
        }
        if (frame.type == detail::FrameType::headers && frame.request && !whole && !s->tunnel && s->error_status == 0 &&
            c.wants_streamed_body(*s)) {
          const int rv = c.open_route_body(*s);  // dispatched now, its body following
          if (rv != 0) return rv;
          break;
        }
        if (whole) s->complete = true;
        // An extended CONNECT goes to the pipeline at its HEADERS: its stream stays open both ways.
        const bool tunnel_head = s->tunnel && frame.type == detail::FrameType::headers && frame.request;
        if ((whole || s->error_status != 0 || tunnel_head) && !s->dispatched) {
          try {
            c.ready_.push_back(frame.stream_id);
          } catch (const std::exception&) {
            return detail::Result::end_session;
          }
        }
        break;
      }
      case detail::FrameType::rst_stream:
        metrics::record_http2_server_rst_stream(metrics::Http2Direction::received, frame.error_code);
        c.glitch("RST_STREAM received");
        break;
      case detail::FrameType::ping:
        if (frame.flags & detail::FrameFlag::ack) {
          if (frame.ping_data == kGoawayPing && c.goaway_ping_pending_) {
            c.submit_goaway();  // every stream opened before the client saw the first GOAWAY is here
          } else {
            c.ping_outstanding_ = false;  // the keepalive's answer
          }
        } else {
          c.glitch("PING");
          if (!c.calm_requested_ && !c.ping_allowed(c.ctx_->loop().now())) {
            log(LogLevel::info, "channel {}: HTTP/2 client pings too often; GOAWAY(ENHANCE_YOUR_CALM, too_many_pings)",
                c.ctx_->channel().id());
            c.calm_requested_ = true;
            c.ctx_->channel().note_close_reason(CloseReason::protocol_error);
            c.session_->terminate_session(detail::ErrorCode::enhance_your_calm, "too_many_pings");
          }
        }
        break;
      case detail::FrameType::goaway:
        // The client is leaving: the close that follows is its doing.
        c.ctx_->channel().note_close_reason(CloseReason::peer_closed);
        break;
      case detail::FrameType::settings:
        c.preface_received_ = true;
        if (!(frame.flags & detail::FrameFlag::ack)) c.glitch("SETTINGS");
        break;
      case detail::FrameType::window_update: {
        // Windows are returned as DATA is consumed: more updates than DATA sent is a flood.
        // (An increment of 0 is an invalid frame: counted there.)
        const auto increment = static_cast<std::uint32_t>(frame.window_increment);
        if (increment >= kReturnedWindow && increment <= c.window_bytes_owed_) {
          c.window_bytes_owed_ -= increment;
        } else if (c.window_update_credit_ > 0) {
          --c.window_update_credit_;
        } else {
          c.glitch("WINDOW_UPDATE not earned by DATA");
        }
        break;
      }
      default:
        break;
    }
    return c.calm_requested_ ? detail::Result::end_session : 0;
  }

  int on_invalid_frame_recv(const detail::FrameInfo&, const char* what) override {
    log(LogLevel::debug, "channel {}: HTTP/2 invalid frame: {}", c.ctx_->channel().id(), what);
    c.glitch("invalid frame");
    return c.calm_requested_ ? detail::Result::end_session : 0;
  }

  void on_frame_send(const detail::FrameInfo& frame) override {
    if (frame.type == detail::FrameType::goaway) {
      metrics::record_http2_server_goaway_sent(frame.error_code);
      // A connection error, the session's or the codec's: the connection ends for it.
      if (frame.error_code != detail::ErrorCode::no_error)
        c.ctx_->channel().note_close_reason(CloseReason::protocol_error);
      return;
    }
    if (frame.type != detail::FrameType::rst_stream) return;
    metrics::record_http2_server_rst_stream(metrics::Http2Direction::sent, frame.error_code);
    if (frame.error_code != detail::ErrorCode::no_error) {
      // (A reset for a child's close is the application's choice, not something the client made.)
      const Stream* s = c.stream(frame.stream_id);
      if (s == nullptr || !s->cancelled) c.glitch("RST_STREAM sent");
    }
  }

  void on_stream_close(std::int32_t stream_id, std::uint32_t error_code) override {
    if (Stream* s = c.stream(stream_id)) {
      if (s->child) c.child_stream_closed(*s, error_code);
      c.release_stream(s);
    }
  }

  bool writable() override { return c.ctx_->channel().is_writable(); }
  ByteBuf& output(std::size_t n) override {
    c.reserve_out(n);
    return c.out_;
  }
  void wrote() override { c.spill_if_large(); }
  ByteBufAllocator& allocator() override { return c.ctx_->allocator(); }

  // DATA frames: the frame header here, the payload straight from the response body.
  int send_data(const detail::FrameInfo& frame, const std::uint8_t* framehd, std::size_t length,
                void* source) override {
    Stream& s = *static_cast<Stream*>(source);
    c.ping_strikes_ = 0;  // (the ping policy: data sent forgives)
    try {
      if (s.child) {
        write_child_frame(c, s, *s.child, framehd, length, frame.padlen);
      } else if (s.route && s.route->streaming) {
        write_route_frame(c, *s.route, framehd, length, frame.padlen);
      } else {
        write_data_frame(c, s, framehd, length, frame.padlen);
      }
    } catch (const std::exception&) {
      return detail::Result::end_session;
    }
    return 0;
  }

  static void write_data_frame(ServerCodec& c, Stream& s, const std::uint8_t* framehd, std::size_t length,
                               std::size_t padding) {
    // padding is 0: the codec never asks for it; written as the frame says all the same.
    c.reserve_out(9 + (padding > 0 ? 1 : 0) + (length < kCopyBodyBelow ? length : 0));
    c.out_.write_bytes(framehd, 9);
    if (padding > 0) c.out_.write_u8(static_cast<std::uint8_t>(padding - 1));
    if (s.out_file) {
      read_file_payload(c, s, length);
    } else if (s.out_body.has_storage()) {
      if (length >= kCopyBodyBelow) {
        c.ctx_->write(std::move(c.out_));
        c.ctx_->write(s.out_body.read_slice(length));
      } else {
        c.out_.write_bytes(s.out_body.read_ptr(), length);
        s.out_body.skip_bytes(length);
      }
    } else {
      c.out_.write_bytes(s.out_view.data() + s.out_view_sent, length);
      s.out_view_sent += length;
    }
    if (padding > 1) {
      c.reserve_out(padding - 1);
      for (std::size_t i = 1; i < padding; ++i) c.out_.write_u8(0);
    }
    s.out_promised -= length;
    if (length > 0) c.earn_window_updates(kCreditPerDataFrame, length + padding);
    c.spill_if_large();
  }

  // A file body's next `length` bytes, read straight into the frame. A file that ends early (it
  // was truncated while served) ends the connection: the frame's length is written already.
  static void read_file_payload(ServerCodec& c, Stream& s, std::size_t length) {
    c.reserve_out(length);
    std::size_t done = 0;
    while (done < length) {
      const ssize_t got = ::pread(s.out_file.fd(), c.out_.write_ptr() + done, length - done,
                                  static_cast<off_t>(s.out_file.offset() + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        log(LogLevel::warn, "channel {}: HTTP/2 stream {}: the file ended before its region; closing",
            c.ctx_->channel().id(), s.id);
        throw std::runtime_error("file body ended early");
      }
      done += static_cast<std::size_t>(got);
    }
    c.out_.advance_writer(length);
    s.out_file.advance(length);
  }

  // A DATA frame whose `length` payload bytes are taken from the front of `queued` (a child's or a
  // streamed answer's chunks): large pieces by reference, small ones copied into the frame's bytes.
  template <class Queue>
  static void write_queued_frame(ServerCodec& c, Queue& queued, const std::uint8_t* framehd, std::size_t length,
                                 std::size_t padding) {
    c.reserve_out(9 + (padding > 0 ? 1 : 0));
    c.out_.write_bytes(framehd, 9);
    if (padding > 0) c.out_.write_u8(static_cast<std::uint8_t>(padding - 1));
    std::size_t left = length;
    while (left > 0) {
      ByteBuf& front = queued[0];
      const std::size_t take = std::min(left, front.readable_bytes());
      if (take >= kCopyBodyBelow) {
        if (c.out_.is_readable()) c.ctx_->write(std::move(c.out_));
        c.ctx_->write(front.read_slice(take));
      } else {
        c.reserve_out(take);
        c.out_.write_bytes(front.read_ptr(), take);
        front.skip_bytes(take);
      }
      if (!front.is_readable()) queued.drop_front();
      left -= take;
    }
    if (padding > 1) {
      c.reserve_out(padding - 1);
      for (std::size_t i = 1; i < padding; ++i) c.out_.write_u8(0);
    }
  }

  // A child's DATA frame: the payload from its queued chunks (large pieces by reference).
  static void write_child_frame(ServerCodec& c, Stream& s, StreamChannel& ch, const std::uint8_t* framehd,
                                std::size_t length, std::size_t padding) {
    write_queued_frame(c, ch.out_data_, framehd, length, padding);
    ch.out_bytes_ -= length;
    ch.out_promised_ -= length;
    ch.out_framed_ += length;  // given back to the child's writability once send() returns
    c.queue_child(ch);
    if (length > 0) c.earn_window_updates(kCreditPerDataFrame, length + padding);
    c.spill_if_large();
    (void)s;
  }

  // A child's body: what it has written so far; DEFERRED until more comes (resumed on its flush).
  static ssize_t read_child(std::int32_t stream_id, std::size_t length, std::uint32_t* flags, void* source) {
    StreamChannel& ch = *static_cast<Stream*>(source)->child;
    const std::size_t n = std::min(length, ch.out_bytes_ - ch.out_promised_);
    if (n == 0 && !ch.out_ended_) {
      ch.deferred_ = true;
      return detail::Result::deferred;
    }
    ch.out_promised_ += n;
    if (n > 0) *flags |= detail::DataFlag::no_copy;
    if (ch.out_ended_ && ch.out_promised_ == ch.out_bytes_) {
      *flags |= detail::DataFlag::eof;
      if (ch.out_trailers_) {
        *flags |= detail::DataFlag::no_end_stream;
        detail::ResponseHeaders& headers = response_headers();
        headers.build_fields(*ch.out_trailers_);  // (its values point into the fields: kept until submitted)
        const int rv = ch.codec_->session_->submit_trailer(stream_id, headers.data(), headers.size());
        ch.out_trailers_.reset();
        if (rv != 0) return detail::Result::end_session;
      }
    }
    return static_cast<ssize_t>(n);
  }

  // A streamed response's DATA frame: the payload from the chunks its producer wrote.
  static void write_route_frame(ServerCodec& c, RouteBody& r, const std::uint8_t* framehd, std::size_t length,
                                std::size_t padding) {
    write_queued_frame(c, r.out_data, framehd, length, padding);
    r.out_bytes -= length;
    r.out_promised -= length;
    if (r.out != nullptr && r.out_bytes < detail::kRouteOutBound) r.out->writable();  // the producer may go on
    if (length > 0) c.earn_window_updates(kCreditPerDataFrame, length + padding);
    c.spill_if_large();
  }

  // A streamed response's body: what its producer has written; DEFERRED until more comes.
  static ssize_t read_route(std::int32_t stream_id, std::size_t length, std::uint32_t* flags, void* source) {
    RouteBody& r = *static_cast<Stream*>(source)->route;
    const std::size_t n = std::min(length, r.out_bytes - r.out_promised);
    if (n == 0 && !r.out_ended) {
      r.deferred = true;
      return detail::Result::deferred;
    }
    r.out_promised += n;
    if (n > 0) *flags |= detail::DataFlag::no_copy;
    if (r.out_ended && r.out_promised == r.out_bytes) {
      *flags |= detail::DataFlag::eof;
      if (r.out_trailers) {
        *flags |= detail::DataFlag::no_end_stream;
        detail::ResponseHeaders& headers = response_headers();
        headers.build_fields(*r.out_trailers);
        const int rv = r.codec.session_->submit_trailer(stream_id, headers.data(), headers.size());
        r.out_trailers.reset();
        if (rv != 0) return detail::Result::end_session;
      }
    }
    return static_cast<ssize_t>(n);
  }

  static ssize_t read_body(std::int32_t, std::size_t length, std::uint32_t* flags, void* source) {
    Stream& s = *static_cast<Stream*>(source);
    const std::size_t available = s.out_remaining() - s.out_promised;
    const std::size_t n = std::min(length, available);
    s.out_promised += n;
    *flags |= detail::DataFlag::no_copy;
    if (s.out_promised == s.out_remaining()) *flags |= detail::DataFlag::eof;
    return static_cast<ssize_t>(n);
  }

};

// ---- the codec ------------------------------------------------------------------------------------

ServerCodec::ServerCodec(Settings settings) : settings_(std::move(settings)) {
  settings_.max_headers = std::min(settings_.max_headers, http::RequestHead::kInlineHeaders - 1);
}

ServerCodec::~ServerCodec() {
  detach_children();
  session_.reset();  // before the streams its data sources point to
}

void ServerCodec::handler_added(Context& ctx) {
  ctx_ = &ctx;
  ChannelConfig& config = ctx.channel().config();
  config.allow_half_closure = true;  // the client's FIN is answered: the streams owed, then GOAWAY
  if (config.send_timeout == Duration::zero()) config.send_timeout = settings_.send_timeout;

  // The stream API returns windows by hand: a child's stream window as it reads.
  streams_enabled_ = static_cast<bool>(settings_.stream_initializer) || settings_.enable_connect_protocol;
  hooks_ = std::make_unique<Callbacks>(*this);
  session_ = std::make_unique<detail::Session>(*hooks_, streams_enabled_);
  const detail::SettingEntry entries[] = {
      {detail::SettingId::max_concurrent_streams, settings_.max_concurrent_streams},
      {detail::SettingId::initial_window_size, settings_.initial_window_size},
      {detail::SettingId::max_frame_size, settings_.max_frame_size},
      {detail::SettingId::max_header_list_size, settings_.max_header_list_size},
      {detail::SettingId::header_table_size, settings_.header_table_size},
      {detail::SettingId::enable_push, 0},
      {detail::SettingId::enable_connect_protocol, 1},  // (sent only when Settings::enable_connect_protocol)
  };
  const std::size_t sent = std::size(entries) - (settings_.enable_connect_protocol ? 0 : 1);
  if (!session_->submit_settings(entries, sent)) {
    throw std::invalid_argument("http2::Settings: a value is out of range");
  }
  if (max_connection_body() < settings_.max_body) {
    throw std::invalid_argument("http2::Settings: max_connection_body is below max_body");
  }
  if (ctx.channel().is_active()) start_clocks(ctx);
}

// The connection's time limits count from now: its idle time, preface and maximum age.
void ServerCodec::start_clocks(Context& ctx) {
  began_ = last_activity_ = last_read_ = ctx.loop().now();
  want_deadline(ctx, std::min(last_activity_ + settings_.idle_timeout, next_keepalive()));
  if (settings_.preface_timeout > Duration::zero()) want_deadline(ctx, began_ + settings_.preface_timeout);
  if (settings_.max_connection_age > Duration::zero()) {
    age_due_ = began_ + jittered_age(settings_.max_connection_age);
    want_deadline(ctx, age_due_);
  }
}

void ServerCodec::handler_removed(Context& ctx) {
  streams_closed_ += static_cast<std::uint32_t>(live_streams_);  // the streams still open end with the codec
  record_answers(ctx);                                           // answers never flushed still count
  detach_children();
  close_route_bodies();
  stop_deadline(ctx);
  reading_.release(ctx.channel());
  out_.release();
  run_children_later_.cancel();
  flush_later_.cancel();
  ctx_ = nullptr;
}

void ServerCodec::channel_active(Context& ctx) {
  start_clocks(ctx);
  flush(ctx);  // the server's SETTINGS: the connection preface
  ctx.fire_channel_active();
}

ServerCodec::Stream* ServerCodec::stream(std::int32_t id) const noexcept {
  if (session_ == nullptr || id <= 0) return nullptr;
  return static_cast<Stream*>(session_->stream_user_data(id));
}

ServerCodec::Stream* ServerCodec::acquire_stream(std::int32_t id) {
  Stream* s;
  if (!free_streams_.empty()) {
    s = free_streams_.back();
    free_streams_.pop_back();
  } else {
    streams_.push_back(std::make_unique<Stream>());
    s = streams_.back().get();
    free_streams_.reserve(streams_.size());  // so that release_stream never allocates
  }
  s->id = id;
  s->live = true;
  s->began = last_read_;
  session_->set_stream_user_data(id, s);
  if (settings_.request_timeout > Duration::zero() && ctx_ != nullptr) {
    want_deadline(*ctx_, last_read_ + settings_.request_timeout);
  }
  earn_window_updates(1, 0);
  ++live_streams_;
  ++streams_opened_;
  return s;
}

void ServerCodec::earn_window_updates(std::uint32_t frames, std::size_t data_bytes) noexcept {
  window_update_credit_ = std::min(window_update_credit_ + frames, kWindowUpdateCredit);
  // Both windows (the connection's and the stream's) may be returned; bounded by what a window can hold.
  window_bytes_owed_ = std::min<std::uint64_t>(window_bytes_owed_ + 2 * std::uint64_t{data_bytes}, 1ull << 32);
}

void ServerCodec::drop_body(Stream& s) noexcept {
  if (s.body.has_storage()) body_bytes_ -= s.body.capacity();
  s.body.release();
}

void ServerCodec::release_stream(Stream* s) noexcept {
  if (s->route) s->route->close();  // its reader or writer, if still there, fails
  drop_body(*s);
  s->reset();
  free_streams_.push_back(s);  // within the capacity reserved in acquire_stream
  --live_streams_;
  ++streams_closed_;
  if (live_streams_ == 0 && ctx_ != nullptr) last_activity_ = ctx_->loop().now();
}

void ServerCodec::reserve_out(std::size_t n) {
  if (!out_.has_storage()) out_ = ctx_->allocator().buffer(std::max(n, kOutChunk));
  out_.ensure_writable(n);
}

// Frames move on to the channel's queue once they are many: the queue counts them against its
// water marks, so an unwritable channel stops serialisation (see send).
void ServerCodec::spill_if_large() {
  if (out_.readable_bytes() >= kSpillAt) ctx_->write(std::move(out_));
}

void ServerCodec::read_message(Context& ctx, MessageRef message) {
  if (!message.is<ByteBuf>()) throw_type_mismatch(ctx, "inbound", typeid(ByteBuf), message.type());
  ByteBuf bytes = std::move(message.as<ByteBuf>());
  if (finished_ || session_ == nullptr) return;  // the connection is ending: dropped
  last_activity_ = last_read_ = ctx.loop().now();
  in_session_ = true;
  receiving_ = &bytes;
  const ssize_t rv = session_->receive(bytes.read_ptr(), bytes.readable_bytes());
  receiving_ = nullptr;
  in_session_ = false;
  if (detach_after_session_) detach_later();
  bytes.release();
  if (rv < 0) {
    // The session's own flood bounds (CONTINUATION frames per header block, ACKs owed to a client
    // that does not read) are floods as the budget's are: answered alike.
    const bool flood = rv == detail::Result::too_many_continuations || rv == detail::Result::flooded;
    fail_session(ctx, detail::describe(static_cast<int>(rv)),
                 calm_requested_ || flood ? detail::ErrorCode::enhance_your_calm : detail::ErrorCode::protocol_error);
    return;
  }
  dispatch_ready(ctx);
  if (!child_work_.empty()) {
    // The children's events of this read, then one send for what they wrote.
    in_read_ = true;
    run_children();
    in_read_ = false;
    if (std::exchange(flush_wanted_, false) && ctx_ != nullptr) flush(ctx);
  }
}

// Hands the requests made whole by the last read to the pipeline, outside the session's callbacks
// (a handler that answers at once submits and sends, which the session does not allow from one).
void ServerCodec::dispatch_ready(Context& ctx) {
  while (!ready_.empty() && !finished_) {
    const std::int32_t id = ready_[0];
    ready_.drop_front();
    Stream* s = stream(id);
    if (s == nullptr || s->dispatched) continue;  // reset by the client meanwhile
    if (s->error_status != 0) {
      answer_error(ctx, *s, s->error_status);
      continue;
    }
    dispatch(ctx, *s);
  }
}

void ServerCodec::dispatch(Context& ctx, Stream& s) {
  http::HttpRequest request;
  fill_head(s, detail::RequestAccess::head(request));
  if (s.body.has_storage()) body_bytes_ -= s.body.capacity();  // the application's from here
  detail::RequestAccess::fill(request, std::move(s.fields), std::move(s.body), static_cast<std::uint64_t>(s.id));
  if (s.route && s.route->in) request.body_stream() = s.route->in;  // a streamed route's body, to come
  s.dispatched = true;
  // Streams dispatched long ago and since answered out of turn are dropped once they pile up.
  if (unanswered_.size() >= 2 * settings_.max_concurrent_streams + 16) compact_unanswered();
  unanswered_.push_back(s.id);
  const std::int32_t outer = dispatching_;
  dispatching_ = s.id;
  ctx.fire_read(std::move(request));
  dispatching_ = outer;
}

// The request's head from the fields received; its views point into s.fields.
void ServerCodec::fill_head(Stream& s, http::RequestHead& head) {
  head.version = http::Version::http2;
  head.keep_alive = true;
  std::string_view authority, host;
  std::size_t count = 0;
  s.for_each_field([&](std::string_view name, std::string_view value) {
    if (!name.empty() && name[0] == ':') {
      if (name == ":method") head.method = value;
      else if (name == ":path") head.target = value;
      else if (name == ":authority") authority = value;
      // An extended CONNECT's :protocol is kept as a field (request.header(":protocol")).
      if (name == ":protocol") head.inline_headers[count++] = {name, value};
      return;
    }
    if (name == "host" && host.empty()) host = value;
    head.inline_headers[count++] = {name, value};
  });
  if (host.empty() && !authority.empty() && count < http::RequestHead::kInlineHeaders) {
    head.inline_headers[count++] = {"host", authority};
  }
  head.header_count = count;
  head.authority = !authority.empty() ? authority : host;
  if (head.target.empty()) head.target = head.authority;  // CONNECT: no :path
  const std::size_t q = head.target.find('?');
  head.path = head.target.substr(0, q);
  if (q != std::string_view::npos) head.query = head.target.substr(q + 1);
  head.content_length = s.content_length;
  s.head_request = head.method == "HEAD";
  s.method_class = static_cast<std::uint8_t>(metrics::method_class(head.method));
}

void ServerCodec::note_answer(const Stream& s, int status) noexcept {
  if (!metrics::instrumentation_enabled() || ctx_ == nullptr) return;
  // The streams of a read share their start (last_read_): their alike answers are counted here and
  // observed together at the flush, with one clock read.
  const std::int64_t stamp = (s.began.time_since_epoch().count() & ~std::int64_t{7}) | s.method_class;
  if ((stamp != answers_stamp_ || status != answers_status_) && answers_ != 0) record_answers(*ctx_);
  answers_stamp_ = stamp;
  answers_status_ = status;
  ++answers_;
}

void ServerCodec::record_answers(Context& ctx) noexcept {
  if ((streams_opened_ | streams_closed_) != 0) {
    metrics::record_http2_server_streams(streams_opened_, streams_closed_);
    streams_opened_ = streams_closed_ = 0;
  }
  if (answers_ == 0) return;
  const TimePoint began{Duration(answers_stamp_ & ~std::int64_t{7})};
  metrics::record_http_server_request(metrics::HttpProtocol::http2,
                                      static_cast<metrics::MethodClass>(answers_stamp_ & 7), answers_status_,
                                      ctx.loop().now() - began, answers_);
  answers_ = 0;
}

bool ServerCodec::upgrade(Context& ctx, std::string_view settings, const http::RequestHead& head) {
  if (session_ == nullptr || finished_) return false;
  const int rv = session_->upgrade(reinterpret_cast<const std::uint8_t*>(settings.data()), settings.size(),
                                   head.method == "HEAD");
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 upgrade refused: {}", ctx.channel().id(), detail::describe(rv));
    return false;
  }
  // The request as if it had come in HEADERS on stream 1: pseudo-headers, then the fields that are
  // not HTTP/1.1's connection business, with lowercase names.
  Stream& s = *acquire_stream(1);
  ByteBufAllocator& allocator = ctx.allocator();
  s.append_field(allocator, ":method", head.method);
  s.append_field(allocator, ":path", head.target);
  s.append_field(allocator, ":authority", head.authority);
  std::string name;
  for (const http::Header& h : head) {
    if (detail::is_connection_specific(h.name) || http::iequals(h.name, "host") ||
        http::iequals(h.name, "http2-settings")) {
      continue;
    }
    name.assign(h.name);
    for (char& c : name) c = c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
    s.append_field(allocator, name, h.value);
    ++s.header_count;
  }
  s.content_length = head.content_length;
  s.complete = true;
  ready_.push_back(1);
  dispatch_ready(ctx);
  return true;
}

void ServerCodec::compact_unanswered() {
  InlineRing<std::int32_t, 16> kept;
  for (std::size_t i = 0; i < unanswered_.size(); ++i) {
    const Stream* s = stream(unanswered_[i]);
    if (s != nullptr && !s->answered) kept.push_back(unanswered_[i]);
  }
  unanswered_.clear();
  for (std::size_t i = 0; i < kept.size(); ++i) unanswered_.push_back(kept[i]);
}

void ServerCodec::answer_error(Context& ctx, Stream& s, int status) {
  s.dispatched = true;
  http::HttpResponse response(status);
  if (settings_.error_body) {
    try {
      http::ErrorBody made = settings_.error_body(status);
      if (!made.content_type.empty()) response.content_type(made.content_type);
      response.body(made.body);
    } catch (const std::exception& e) {
      log(LogLevel::error, "channel {}: the error body for {} failed: {}", ctx.channel().id(), status, e.what());
    }
  }
  submit(ctx, s, response);
}

// The stream an answer is for (see the file's description); 0 when there is none.
std::int32_t ServerCodec::answered_stream(const http::HttpResponse& response) noexcept {
  if (response.request_sequence() != 0) {
    return response.request_sequence() <= 0x7fffffffu ? static_cast<std::int32_t>(response.request_sequence()) : 0;
  }
  if (dispatching_ != 0) {
    const Stream* s = stream(dispatching_);
    if (s != nullptr && !s->answered) return dispatching_;
  }
  while (!unanswered_.empty()) {
    const std::int32_t id = unanswered_[0];
    const Stream* s = stream(id);
    if (s != nullptr && !s->answered) return id;
    unanswered_.drop_front();
  }
  return 0;
}

void ServerCodec::write_message(Context& ctx, MessageRef message) {
  if (!message.is<http::HttpResponse>()) {
    throw_type_mismatch(ctx, "outbound", typeid(http::HttpResponse), message.type());
  }
  http::HttpResponse& response = message.as<http::HttpResponse>();
  if (finished_ || session_ == nullptr) {
    log(LogLevel::debug, "channel {}: HTTP/2 response {} after the connection ended; dropped", ctx.channel().id(),
        response.status());
    return;
  }
  const std::int32_t id = answered_stream(response);
  Stream* s = stream(id);
  if (s == nullptr || !s->dispatched || s->answered || s->child) {
    log(LogLevel::debug, "channel {}: HTTP/2 response {} for stream {}, which is gone or answered; dropped",
        ctx.channel().id(), response.status(), id);
    return;
  }
  submit(ctx, *s, response);
}

void ServerCodec::submit(Context& ctx, Stream& s, http::HttpResponse& response) {
  const int status = response.status();
  ping_strikes_ = 0;  // (the ping policy: a response forgives)
  detail::ResponseHeaders& headers = response_headers();
  if (status < 200) {  // an interim answer: HEADERS without END_STREAM, the final one follows
    headers.build(response, std::nullopt);
    session_->submit_headers(s.id, headers.data(), headers.size());
    send_pending(ctx);
    return;
  }
  s.answered = true;
  if (s.tunnel) {  // an extended CONNECT refused: what it sent is dropped, its window given back
    if (s.body.is_readable()) consume_stream(s.id, s.body.readable_bytes());
    drop_body(s);
  }
  note_answer(s, status);
  const bool bodiless_status = status == 204 || status == 304;
  const std::string_view body = response.body_bytes();
  const std::size_t body_size = response.body_size();
  if (response.producer() && !bodiless_status && !s.head_request) {
    submit_streamed(ctx, s, response);
    return;
  }
  const bool has_data = !bodiless_status && !s.head_request && body_size != 0;
  std::optional<std::size_t> length = bodiless_status ? std::nullopt : std::optional<std::size_t>(body_size);
  if (response.producer() && length) {  // HEAD of a streamed answer: its length if given; the producer is not run
    length = response.stream_length() ? std::optional<std::size_t>(static_cast<std::size_t>(*response.stream_length()))
                                      : std::nullopt;
  }
  headers.build(response, length);
  int rv;
  if (has_data) {
    if (response.file_body()) {
      s.out_file = std::move(response.file_body());
    } else if (response.owned_body().has_storage()) {
      s.out_body = std::move(response.owned_body());
    } else {
      s.out_view = body;  // borrowed: valid until this call returns (see below)
      s.out_view_sent = 0;
    }
    s.out_promised = 0;
    const detail::DataSource source{&s, Callbacks::read_body};
    rv = session_->submit_response(s.id, headers.data(), headers.size(), &source);
  } else {
    rv = session_->submit_response(s.id, headers.data(), headers.size(), nullptr);
  }
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 response on stream {} not submitted: {}", ctx.channel().id(), s.id,
        detail::describe(rv));
    s.out_body.release();
    s.out_view = {};
    s.out_file = FileRegion();
    return;
  }
  if (response.closes_connection()) submit_goaway();
  send_pending(ctx);
  // What the window did not let leave of a borrowed body is copied now: the view dies with this call.
  // (A stream that closed meanwhile was reset: its view is empty.)
  if (!s.out_view.empty()) {
    const std::string_view rest = s.out_view.substr(s.out_view_sent);
    if (!rest.empty()) {
      ByteBuf owned = ctx.allocator().buffer(rest.size());
      owned.write_bytes(rest.data(), rest.size());
      s.out_body = std::move(owned);
    }
    s.out_view = {};
    s.out_view_sent = 0;
  }
}

// A streamed answer: its HEADERS now, its DATA as the producer writes them (read_route).
void ServerCodec::submit_streamed(Context& ctx, Stream& s, http::HttpResponse& response) {
  if (!s.route) s.route = std::make_unique<RouteBody>(*this, s.id);
  RouteBody& r = *s.route;
  auto sink = std::make_shared<http::detail::BodySink>(ctx.loop(), static_cast<http::detail::BodySinkLink&>(r),
                                                       response.stream_length());
  r.out = sink;
  r.streaming = true;
  detail::ResponseHeaders& headers = response_headers();
  const std::optional<std::uint64_t> length = response.stream_length();
  headers.build(response, length ? std::optional<std::size_t>(static_cast<std::size_t>(*length)) : std::nullopt);
  const detail::DataSource source{&s, Callbacks::read_route};
  const int rv = session_->submit_response(s.id, headers.data(), headers.size(), &source);
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 streamed response on stream {} not submitted: {}", ctx.channel().id(),
        s.id, detail::describe(rv));
    r.out.reset();
    r.streaming = false;
    sink->detach();
    return;
  }
  if (response.closes_connection()) submit_goaway();
  send_pending(ctx);
  http::detail::start_producer(ctx.loop(), response.producer(), std::move(sink),
                               [weak = std::weak_ptr<http::detail::BodySink>(r.out)](bool finished) {
                                 std::shared_ptr<http::detail::BodySink> held = weak.lock();
                                 if (held != nullptr && held->link() != nullptr) held->link()->sink_ended(finished);
                               });
}

void ServerCodec::submit_goaway() {
  if (goaway_submitted_ || session_ == nullptr) return;
  goaway_submitted_ = true;
  goaway_ping_pending_ = false;
  session_->submit_goaway(session_->last_proc_stream_id(), detail::ErrorCode::no_error);
}

void ServerCodec::shutdown_gracefully(Context& ctx) {
  if (finished_ || session_ == nullptr) return;
  submit_goaway();
  flush(ctx);
}

void ServerCodec::announce_shutdown(Context& ctx) {
  if (finished_ || session_ == nullptr || goaway_submitted_ || goaway_ping_pending_) return;
  goaway_ping_pending_ = true;
  session_->submit_goaway(kMaxStreamId, detail::ErrorCode::no_error);
  session_->submit_ping(kGoawayPing);
  goaway_ping_due_ = ctx.loop().now() + settings_.goaway_ping_timeout;
  want_deadline(ctx, goaway_ping_due_);
  flush(ctx);
}

// Serialises what the session has queued into out_ (as far as the channel is writable).
void ServerCodec::send_pending(Context& ctx) {
  if (session_ == nullptr || in_session_ || finished_) return;
  in_session_ = true;
  const int rv = session_->send();
  in_session_ = false;
  if (detach_after_session_) detach_later();
  if (!child_work_.empty()) {
    // The children's bytes just framed go back to their writability. Not inside a child's own call
    // (its write, flush or close): another child's events must not run nested in it, so a loop
    // task serves them.
    if (child_calling_ != nullptr && !running_children_) {
      post_children();
    } else {
      run_children();
    }
  }
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 send failed: {}; closing", ctx.channel().id(), detail::describe(rv));
    finished_ = true;
    stop_deadline(ctx);
    write_out(ctx);
    ctx.flush();
    ctx.channel().close_gracefully(settings_.linger_timeout, settings_.send_timeout);
  }
}

void ServerCodec::write_out(Context& ctx) {
  if (out_.is_readable()) ctx.write(std::move(out_));
}

void ServerCodec::flush(Context& ctx) {
  send_pending(ctx);
  write_out(ctx);
  if ((answers_ | streams_opened_ | streams_closed_) != 0) record_answers(ctx);
  ctx.flush();
  finish_if_done(ctx);
}

void ServerCodec::channel_read_complete(Context& ctx) {
  ctx.fire_read_complete();  // the handlers flush their answers (which sends what the session queued)
  if (finished_ || session_ == nullptr) return;
  if (session_->want_write() || out_.is_readable()) {
    flush(ctx);
  } else {
    finish_if_done(ctx);
  }
}

// The session has nothing to read or write any more (GOAWAY sent or received and no stream
// left, or a fatal error): FIN after what was written, then close.
void ServerCodec::finish_if_done(Context& ctx) {
  if (finished_ || session_ == nullptr) return;
  if (goaway_ping_pending_) {
    // A terminated loop reads nothing more and runs no timer: the PING's answer cannot come.
    if (!ctx.loop().is_terminated()) return;
    submit_goaway();
    send_pending(ctx);
    if (finished_) return;
  }
  if (session_->want_read() || session_->want_write()) return;
  finished_ = true;
  stop_deadline(ctx);
  reading_.release(ctx.channel());
  write_out(ctx);
  ctx.flush();
  ctx.channel().close_gracefully(settings_.linger_timeout, settings_.send_timeout);
}

void ServerCodec::fail_session(Context& ctx, const char* what, int error_code) {
  log(LogLevel::debug, "channel {}: HTTP/2 connection error ({}); GOAWAY and close", ctx.channel().id(), what);
  ctx.channel().note_close_reason(CloseReason::protocol_error);
  if (!calm_requested_) session_->terminate_session(static_cast<std::uint32_t>(error_code));
  send_pending(ctx);
  if (finished_) return;
  finished_ = true;
  stop_deadline(ctx);
  reading_.release(ctx.channel());
  write_out(ctx);
  ctx.flush();
  ctx.channel().close_gracefully(settings_.linger_timeout, settings_.send_timeout);
}

void ServerCodec::glitch(const char* what) {
  const TimePoint now = ctx_->loop().now();
  if (now - glitch_window_start_ >= settings_.glitch_window) {
    glitch_window_start_ = now;
    glitches_ = 0;
  }
  if (++glitches_ <= settings_.max_glitches || calm_requested_) return;
  calm_requested_ = true;
  metrics::record_http2_server_glitch_budget_exceeded();
  ctx_->channel().note_close_reason(CloseReason::protocol_error);
  log(LogLevel::info, "channel {}: HTTP/2 client exceeded its glitch budget ({} within {} s, last: {}); "
      "GOAWAY(ENHANCE_YOUR_CALM)", ctx_->channel().id(), glitches_,
      std::chrono::duration_cast<std::chrono::seconds>(settings_.glitch_window).count(), what);
  session_->terminate_session(detail::ErrorCode::enhance_your_calm);
}

void ServerCodec::user_event(Context& ctx, const std::any& event) {
  if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    end_input(ctx);
  } else if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr && !finished_ && session_ != nullptr) {
    // The loop shuts down, or the server drains: two GOAWAYs, the open streams are still answered,
    // then the close.
    ctx.channel().end_for_shutdown_itself();
    announce_shutdown(ctx);
    tell_children_draining();
  }
  ctx.fire_user_event(event);
}

// The client sent FIN: requests still incomplete never will be (their streams are cancelled); the
// answers owed still go out, then GOAWAY and the close.
void ServerCodec::end_input(Context& ctx) {
  if (finished_ || session_ == nullptr) return;
  for (const auto& s : streams_) {
    // (A child's request that has not ended never will either.)
    if (s->live && (!s->dispatched || (s->child && !s->complete))) {
      session_->submit_rst_stream(s->id, detail::ErrorCode::cancel);
    }
  }
  input_ended_ = ctx.loop().now();
  if (settings_.half_closed_timeout > Duration::zero()) want_deadline(ctx, input_ended_ + settings_.half_closed_timeout);
  shutdown_gracefully(ctx);
}

void ServerCodec::writability_changed(Context& ctx) {
  if (!ctx.channel().is_writable()) {
    unwritable_since_ = ctx.loop().now();
    reading_.hold(ctx.channel());
    want_deadline(ctx, unwritable_since_ + settings_.send_timeout);
  } else {
    unwritable_since_ = {};
    reading_.release(ctx.channel());
    if (!finished_) flush(ctx);  // what waited for the channel to drain
    wake_route_writers();
  }
  ctx.fire_writability_changed();
}

void ServerCodec::want_deadline(Context& ctx, TimePoint at) {
  if (deadline_timer_ != 0) {
    if (deadline_at_ <= at) return;  // the armed one comes first and re-arms for this one
    ctx.loop().cancel(deadline_timer_);
  }
  deadline_at_ = at;
  const TimePoint now = ctx.loop().now();
  deadline_timer_ = ctx.loop().schedule(at > now ? at - now : Duration::zero(), [this, &ctx] {
    deadline_timer_ = 0;
    on_deadline(ctx);
  });
}

// One timer per connection at the earliest deadline; when it fires it checks them all.
void ServerCodec::on_deadline(Context& ctx) {
  if (finished_) return;
  const TimePoint now = ctx.loop().now();
  if (unwritable_since_ != TimePoint{} && now - unwritable_since_ >= settings_.send_timeout) {
    log(LogLevel::debug, "channel {}: HTTP/2 output not taken for {} s; closing", ctx.channel().id(),
        std::chrono::duration_cast<std::chrono::seconds>(settings_.send_timeout).count());
    finished_ = true;
    ctx.channel().note_close_reason(CloseReason::timeout);
    ctx.close();
    return;
  }
  const bool half_closed_timed = input_ended_ != TimePoint{} && settings_.half_closed_timeout > Duration::zero();
  if (half_closed_timed && now - input_ended_ >= settings_.half_closed_timeout) {
    log(LogLevel::debug, "channel {}: HTTP/2 answers owed to a half-closed client not sent within {} ms; closing",
        ctx.channel().id(), std::chrono::duration_cast<std::chrono::milliseconds>(settings_.half_closed_timeout).count());
    finished_ = true;
    ctx.channel().note_close_reason(CloseReason::timeout);
    ctx.close();
    return;
  }
  const bool preface_timed = settings_.preface_timeout > Duration::zero() && !preface_received_;
  if (preface_timed && now - began_ >= settings_.preface_timeout) {
    log(LogLevel::debug, "channel {}: no HTTP/2 connection preface within {} ms; closing", ctx.channel().id(),
        std::chrono::duration_cast<std::chrono::milliseconds>(settings_.preface_timeout).count());
    finished_ = true;
    ctx.channel().note_close_reason(CloseReason::timeout);
    ctx.close();
    return;
  }
  if (goaway_ping_pending_ && now >= goaway_ping_due_) {
    log(LogLevel::debug, "channel {}: HTTP/2 client did not answer the shutdown's PING; last GOAWAY",
        ctx.channel().id());
    submit_goaway();
    flush(ctx);
    if (finished_) return;
  }
  if (end_if_aged(ctx, now)) return;
  const TimePoint next_request_timeout = time_out_requests(ctx, now);
  if (finished_) return;
  const bool idle = live_streams_ == 0;
  if (idle && now - last_activity_ >= settings_.idle_timeout) {
    log(LogLevel::debug, "channel {}: HTTP/2 idle; GOAWAY", ctx.channel().id());
    ctx.channel().note_close_reason(CloseReason::idle_timeout);
    shutdown_gracefully(ctx);
    if (finished_) return;
  }
  if (settings_.keepalive_time > Duration::zero()) {
    if (ping_outstanding_ && now - ping_sent_at_ >= settings_.keepalive_timeout) {
      log(LogLevel::debug, "channel {}: HTTP/2 keepalive PING not answered in {} s; closing", ctx.channel().id(),
          std::chrono::duration_cast<std::chrono::seconds>(settings_.keepalive_timeout).count());
      finished_ = true;
      ctx.channel().note_close_reason(CloseReason::timeout);
      ctx.close();
      return;
    }
    if (!ping_outstanding_ && now - last_read_ >= settings_.keepalive_time) {
      ping_outstanding_ = true;
      ping_sent_at_ = now;
      session_->submit_ping(static_cast<std::uint64_t>(now.time_since_epoch().count()));
      flush(ctx);
      if (finished_) return;
    }
  }
  TimePoint next = (idle ? last_activity_ : now) + settings_.idle_timeout;
  if (next <= now) next = now + settings_.idle_timeout;
  if (settings_.keepalive_time > Duration::zero()) next = std::min(next, std::max(next_keepalive(), now + std::chrono::milliseconds(1)));
  if (unwritable_since_ != TimePoint{}) next = std::min(next, unwritable_since_ + settings_.send_timeout);
  if (preface_timed) next = std::min(next, began_ + settings_.preface_timeout);
  if (half_closed_timed) next = std::min(next, input_ended_ + settings_.half_closed_timeout);
  if (goaway_ping_pending_) next = std::min(next, goaway_ping_due_);
  next = std::min({next, age_due_, age_grace_due_});
  want_deadline(ctx, std::min(next, next_request_timeout));
}

// Settings::max_connection_age: the connection is told to go as a drain would tell it, and with a
// grace, closed with its streams still open once that has passed. True when it was closed.
bool ServerCodec::end_if_aged(Context& ctx, TimePoint now) {
  if (now >= age_grace_due_) {
    log(LogLevel::debug, "channel {}: HTTP/2 connection past its maximum age and grace with {} stream(s) open; closing",
        ctx.channel().id(), live_streams_);
    finished_ = true;
    ctx.close();
    return true;
  }
  if (now < age_due_) return false;
  log(LogLevel::debug, "channel {}: HTTP/2 connection reached its maximum age; GOAWAY", ctx.channel().id());
  ctx.channel().note_close_reason(CloseReason::drain);  // however it ends now, the server asked first
  age_due_ = TimePoint::max();
  if (settings_.max_connection_age_grace > Duration::zero()) age_grace_due_ = now + settings_.max_connection_age_grace;
  announce_shutdown(ctx);
  return finished_;
}

// Settings::request_timeout: requests served whole that are still arriving past it are answered
// 408 (which stops their upload); streamed routes' bodies that the client let stall (nothing
// unread waits) fail their reader with 408. Returns when the next one is due (TimePoint::max():
// none).
TimePoint ServerCodec::time_out_requests(Context& ctx, TimePoint now) {
  TimePoint next = TimePoint::max();
  if (settings_.request_timeout <= Duration::zero() || live_streams_ == 0) return next;
  bool reset = false;
  for (const auto& owned : streams_) {
    Stream& s = *owned;
    if (s.live && s.route && s.route->in) {
      const http::detail::BodySource& in = *s.route->in;
      // Ended, let go, or bytes wait for a slow reader (its take restarts the clock): untimed.
      if (in.ended() || in.abandoned() || in.buffered_bytes() > 0) continue;
      const TimePoint due = s.route->in_owed_since + settings_.request_timeout;
      if (due > now) {
        next = std::min(next, due);
      } else {
        // The reader's next() fails, the rest of the body is dropped as it comes (route_data), and
        // the stream is reset with CANCEL after the route's answer (at once if it answered already).
        log(LogLevel::debug, "channel {}: HTTP/2 stream {}: streamed request body stalled for {} ms; 408",
            ctx.channel().id(), s.id,
            std::chrono::duration_cast<std::chrono::milliseconds>(settings_.request_timeout).count());
        s.route->in->fail(std::make_exception_ptr(http::HttpProtocolError(408, "request body timeout")));
        s.route->in->detach();
        s.cancelled = true;  // the server's own reset: no glitch
        if (s.answered) {
          session_->submit_rst_stream(s.id, detail::ErrorCode::cancel);
          reset = true;
        } else {
          session_->reset_after_end(s.id, detail::ErrorCode::cancel);
        }
      }
      continue;
    }
    if (!s.live || s.complete || s.dispatched || s.child || s.error_status != 0) continue;
    const TimePoint due = s.began + settings_.request_timeout;
    if (due > now) {
      next = std::min(next, due);
      continue;
    }
    log(LogLevel::debug, "channel {}: HTTP/2 stream {}: request not whole within {} ms; 408", ctx.channel().id(), s.id,
        std::chrono::duration_cast<std::chrono::milliseconds>(settings_.request_timeout).count());
    s.error_status = 408;
    drop_body(s);
    ready_.push_back(s.id);
  }
  const bool answering = !ready_.empty();
  if (answering) dispatch_ready(ctx);
  if ((answering || reset) && !finished_) flush(ctx);
  return next;
}

// When the keepalive must act next: the answer's deadline of a PING sent, or the next PING.
TimePoint ServerCodec::next_keepalive() const noexcept {
  if (settings_.keepalive_time <= Duration::zero()) return TimePoint::max();
  return ping_outstanding_ ? ping_sent_at_ + settings_.keepalive_timeout : last_read_ + settings_.keepalive_time;
}

// grpc-core's ping policy (Settings::min_ping_interval): false once the client has struck out.
bool ServerCodec::ping_allowed(TimePoint now) noexcept {
  if (settings_.min_ping_interval <= Duration::zero()) return true;
  const Duration interval = live_streams_ == 0 && !settings_.permit_keepalive_without_calls
                                ? Duration(std::chrono::hours(2))
                                : settings_.min_ping_interval;
  const bool too_soon = last_ping_received_ != TimePoint::min() && now - last_ping_received_ < interval;
  last_ping_received_ = now;
  return !too_soon || ++ping_strikes_ <= settings_.max_ping_strikes;
}

void ServerCodec::stop_deadline(Context& ctx) {
  if (deadline_timer_ == 0) return;
  ctx.loop().cancel(deadline_timer_);
  deadline_timer_ = 0;
}

void ServerCodec::channel_inactive(Context& ctx) {
  record_answers(ctx);
  stop_deadline(ctx);
  detach_later();
  finished_ = true;
  close_route_bodies();
  out_.release();
  ctx.fire_channel_inactive();
}

void ServerCodec::exception_caught(Context& ctx, std::exception_ptr error) { close_on_io_error(ctx, std::move(error)); }

// ---- streams served as channels (Settings::stream_initializer; the child's side is in
// stream_channel.cc). Nothing here runs a child's pipeline from inside the session: the callbacks only
// queue what they received for the child (queue_child), and run_children() hands it over once
// receive or session_send has returned.

// HEADERS of a request: asks the application whether the stream is served as a channel.
int ServerCodec::open_child(Stream& s, bool end_stream) {
  http::HttpRequest request;
  fill_head(s, detail::RequestAccess::head(request));
  StreamInitializer init;
  try {
    init = settings_.stream_initializer(request.head());
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: HTTP/2 stream_initializer failed on stream {}: {}; stream reset",
        ctx_->channel().id(), s.id, e.what());
    return detail::Result::reset_stream;  // RST_STREAM(INTERNAL_ERROR)
  }
  if (!init) return 0;  // served whole
  try {
    auto child =
        std::allocate_shared<StreamChannel>(detail::StreamChannelAllocator<StreamChannel>{}, StreamChannel::Private{},
                                            *this, ctx_->channel(), s.id, std::move(init));
    detail::RequestAccess::fill(request, std::move(s.fields), ByteBuf(), static_cast<std::uint64_t>(s.id));
    child->in_headers_.emplace(StreamHeaders{std::move(request), end_stream});
    child->in_ended_ = end_stream;
    child->draining_owed_ = draining_;
    s.child = child;
    s.dispatched = true;
    s.complete = end_stream;
    s.header_list_size = s.header_count = 0;  // trailers are counted on their own
    queue_child(*child);
  } catch (const std::exception&) {
    s.child.reset();
    return detail::Result::reset_stream;
  }
  return 0;
}

// A DATA payload for a child: the connection's window is returned now, the stream's once the
// child has read it. Large payloads are slices of the input, small ones are gathered by copy. A
// slice keeps its whole input buffer alive, so what a child holds is counted as the buffers it
// keeps (each once per run of chunks on it, until it has read all it holds); past its stream's
// window of them, payloads are copied: a child that does not read pins about its window, not a
// read buffer per frame.
int ServerCodec::child_data(Stream& s, const std::uint8_t* data, std::size_t len) {
  session_->consume_connection(len);
  StreamChannel& ch = *s.child;
  if (ch.input_closed_) {  // nobody will read it
    consume_stream(s.id, len);
    return 0;
  }
  try {
    const std::uint8_t* base = receiving_ != nullptr ? receiving_->read_ptr() : nullptr;
    const StreamData* last = ch.in_data_.empty() ? nullptr : &ch.in_data_[ch.in_data_.size() - 1];
    const bool same_block = last != nullptr && receiving_ != nullptr && last->data.shares_storage_with(*receiving_);
    if (len >= kSliceInputAt && base != nullptr && data >= base && data + len <= base + receiving_->readable_bytes() &&
        (same_block || ch.in_retained_ < settings_.initial_window_size)) {
      const std::size_t at = receiving_->reader_index() + static_cast<std::size_t>(data - base);
      ch.in_data_.push_back(StreamData{receiving_->slice(at, len), false});
      if (!same_block) ch.in_retained_ += receiving_->capacity();
      ch.in_copied_tail_ = false;
    } else {
      StreamData* tail = ch.in_copied_tail_ && !ch.in_data_.empty() ? &ch.in_data_[ch.in_data_.size() - 1] : nullptr;
      if (tail == nullptr || tail->data.writable_bytes() < len) {
        ch.in_data_.push_back(StreamData{ctx_->allocator().buffer(std::max(len, kInChunk)), false});
        tail = &ch.in_data_[ch.in_data_.size() - 1];
        ch.in_retained_ += tail->data.capacity();
        ch.in_copied_tail_ = true;
      }
      tail->data.write_bytes(data, len);
    }
    ch.in_bytes_ += len;
    queue_child(ch);
  } catch (const std::exception&) {
    return detail::Result::reset_stream;  // the stream is reset
  }
  return 0;
}

// The end of a frame on a child's stream: END_STREAM (on DATA), or the trailers (HEADERS, which
// always end it).
int ServerCodec::child_frame(Stream& s, std::uint8_t type, bool end_stream) {
  StreamChannel& ch = *s.child;
  if (type == detail::FrameType::headers) {
    if (!ch.input_closed_) ch.in_trailers_.emplace(StreamTrailers{std::move(ch.in_trailer_fields_)});
    end_stream = true;
  } else if (!end_stream) {
    return 0;
  } else if (!ch.input_closed_) {
    try {
      if (!ch.in_data_.empty()) {
        ch.in_data_[ch.in_data_.size() - 1].end_stream = true;
      } else {
        ch.in_data_.push_back(StreamData{ByteBuf(), true});
      }
    } catch (const std::exception&) {
      return detail::Result::end_session;
    }
    ch.in_copied_tail_ = false;
  }
  s.complete = true;
  ch.in_ended_ = true;
  try {
    queue_child(ch);
  } catch (const std::exception&) {
    return detail::Result::end_session;
  }
  return 0;
}

// One trailer field for a child, within the same bounds as the head's.
int ServerCodec::child_trailer(Stream& s, std::string_view name, std::string_view value) {
  s.header_list_size += static_cast<std::uint32_t>(name.size() + value.size() + 32);
  if (s.header_list_size > settings_.max_header_list_size || ++s.header_count > settings_.max_headers) {
    glitch("trailers too large");
    return calm_requested_ ? detail::Result::end_session : detail::Result::reset_stream;
  }
  if (s.child->input_closed_) return 0;
  try {
    s.child->in_trailer_fields_.add_unchecked(name, value);
  } catch (const std::exception&) {
    return detail::Result::reset_stream;
  }
  return 0;
}

// The session closed a child's stream: normally (both ends sent), or by a reset (the client's, or one
// it sent for an error). The child learns it from run_children (StreamChannel::finish).
void ServerCodec::child_stream_closed(Stream& s, std::uint32_t error_code) {
  StreamChannel& ch = *s.child;
  ch.stream_closed_ = true;
  ch.reset_ = error_code != detail::ErrorCode::no_error || !ch.out_ended_;
  ch.reset_code_ = error_code;
  ch.out_data_.clear();
  ch.out_bytes_ = ch.out_promised_ = 0;
  ch.out_trailers_.reset();
  if (ch.reset_) {  // what the client sent is moot
    ch.in_headers_.reset();
    ch.in_data_.clear();
    ch.in_trailers_.reset();
    ch.in_bytes_ = ch.in_retained_ = 0;
  }
  try {
    queue_child(ch);
  } catch (const std::exception&) {
    log(LogLevel::warn, "channel {}: HTTP/2 stream {} closed; its channel could not be told (out of memory)",
        ctx_->channel().id(), s.id);
  }
}

// The connection drains: each child gets ConnectionDrainingEvent (serve_child), and so does each one
// opened from here on (open_child).
void ServerCodec::tell_children_draining() {
  if (!streams_enabled_ || draining_) return;
  draining_ = true;
  for (const auto& s : streams_) {
    if (!s->live || !s->child) continue;
    s->child->draining_owed_ = true;
    queue_child(*s->child);
  }
  if (child_calling_ != nullptr && !running_children_) {
    post_children();  // not nested in a child's own call
  } else {
    run_children();
  }
}

void ServerCodec::queue_child(StreamChannel& child) {
  if (child.work_queued_) return;
  child_work_.push_back(std::static_pointer_cast<StreamChannel>(child.shared_from_this()));
  child.work_queued_ = true;
}

// Hands the children what they have waiting: their start, their input, the bytes framed since
// (their writability), the stream's end. Re-entered (a child that writes and flushes makes the
// codec send, which queues more work), it returns and the outer call goes on with the new work.
void ServerCodec::run_children() {
  if (running_children_) return;
  running_children_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{running_children_};
  while (!child_work_.empty()) {
    child_batch_.swap(child_work_);
    for (std::size_t i = 0; i < child_batch_.size(); ++i) {
      const std::shared_ptr<StreamChannel> child = child_batch_[i];
      child->work_queued_ = false;
      serve_child(*child);
    }
    child_batch_.clear();
  }
}

// run_children() from a loop callback (see send_pending). A terminated loop has no later turn: the
// children's work is given up, not run nested in the caller. (A running loop closes the connection
// before it terminates; one its shutdown left open closes the children when it closes.)
void ServerCodec::post_children() {
  if (ctx_ == nullptr || !streams_enabled_) return;
  if (!run_children_later_.schedule(ctx_->loop())) {
    log(LogLevel::debug, "channel {}: the loop has terminated; HTTP/2 streams are not served", ctx_->channel().id());
  }
}

void ServerCodec::run_children_posted() {
  if (ctx_ == nullptr || session_ == nullptr) return;
  run_children();
  if (!finished_ && session_->want_write()) flush(*ctx_);  // what the children earned (WINDOW_UPDATE)
}

void ServerCodec::serve_child(StreamChannel& ch) {
  if (ch.codec_ != this) return;  // detached (and closed) meanwhile
  if (!ch.started_) {
    if (ch.stream_closed_ && ch.reset_) {  // reset before it began (a rapid reset): never started
      ch.detach();
      return;
    }
    ch.start();
    if (ch.codec_ != this) return;
  }
  if (ch.out_framed_ > 0) {
    const std::size_t n = std::exchange(ch.out_framed_, 0);
    if (ch.is_open()) ch.release_held_write_bytes(n);
  }
  ch.deliver();
  if (ch.draining_owed_ && !ch.stream_closed_ && ch.codec_ == this && ch.is_open()) {
    ch.draining_owed_ = false;
    ch.pipeline().fire_user_event(ConnectionDrainingEvent{});
  }
  if (ch.stream_closed_ && !ch.finished_ && ch.codec_ == this) ch.finish(ch.reset_, ch.reset_code_);
}

void ServerCodec::consume_stream(std::int32_t id, std::size_t n) noexcept {
  if (session_ != nullptr && n > 0 && !finished_) session_->consume_stream(id, n);
}

// The channel closed. A close made inside the session -- a write that failed in TLS's encrypt, a
// handler that closed on the writability change a write caused -- may come while a child's frame
// is taken from its queue (write_child_frame): its children are detached once the session returns.
void ServerCodec::detach_later() noexcept {
  detach_after_session_ = in_session_;
  if (!in_session_) detach_children();
}

// The connection is ending (or the codec leaving): every child closes.
void ServerCodec::detach_children() noexcept {
  for (const auto& s : streams_) {
    if (!s->live || !s->child) continue;
    const std::shared_ptr<StreamChannel> child = s->child;
    child->detach();
  }
  for (const auto& child : child_work_) child->detach();
  child_work_.clear();
}

// ---- the child's operations

namespace {
// Marks a child's call on the codec as on the stack (see send_pending).
struct ChildCall {
  ChildCall(StreamChannel*& calling, StreamChannel& child) noexcept : slot(calling), outer(calling) { slot = &child; }
  ~ChildCall() { slot = outer; }
  StreamChannel*& slot;
  StreamChannel* outer;
};
}  // namespace

void ServerCodec::child_write(StreamChannel& ch, MessageRef message) {
  const ChildCall call(child_calling_, ch);
  if (ch.stream_closed_ || session_ == nullptr || finished_) {
    log(LogLevel::debug, "channel {}: HTTP/2 stream {} is gone; a {} written to it was dropped", ctx_->channel().id(),
        ch.id_, type_name(message.type()));
    return;
  }
  if (message.is<StreamData>()) {
    if (!ch.headers_sent_) throw std::logic_error("http2::StreamChannel: StreamData written before ResponseHeaders");
    if (ch.out_ended_) throw std::logic_error("http2::StreamChannel: StreamData written after the response's end");
    StreamData& d = message.as<StreamData>();
    const std::size_t n = d.data.readable_bytes();
    if (n > 0) {
      ch.out_data_.push_back(std::move(d.data));
      ch.out_bytes_ += n;
      ch.hold_write_bytes(n);
    }
    if (d.end_stream) ch.out_ended_ = true;
  } else if (message.is<PrefixedStreamData>()) {
    if (!ch.headers_sent_) throw std::logic_error("http2::StreamChannel: StreamData written before ResponseHeaders");
    if (ch.out_ended_) throw std::logic_error("http2::StreamChannel: StreamData written after the response's end");
    PrefixedStreamData& d = message.as<PrefixedStreamData>();
    const std::size_t n = d.prefix.readable_bytes() + d.data.readable_bytes();
    if (d.prefix.is_readable()) ch.out_data_.push_back(std::move(d.prefix));
    if (d.data.is_readable()) ch.out_data_.push_back(std::move(d.data));
    ch.out_bytes_ += n;
    ch.hold_write_bytes(n);
  } else if (message.is<StreamTrailers>()) {
    if (!ch.headers_sent_) {
      throw std::logic_error("http2::StreamChannel: StreamTrailers written before ResponseHeaders");
    }
    if (ch.out_ended_) throw std::logic_error("http2::StreamChannel: StreamTrailers written after the response's end");
    ch.out_trailers_.emplace(std::move(message.as<StreamTrailers>().fields));
    ch.out_ended_ = true;
  } else if (message.is<ResponseHeaders>()) {
    ResponseHeaders& head = message.as<ResponseHeaders>();
    child_submit_head(ch, head.response, head.end_stream, false);
  } else if (message.is<http::HttpResponse>()) {
    child_submit_head(ch, message.as<http::HttpResponse>(), true, true);
  } else {
    throw PipelineTypeError("http2::StreamChannel " + std::to_string(ch.id()) + " writes ResponseHeaders, StreamData, "
                            "PrefixedStreamData, StreamTrailers or http::HttpResponse but received " +
                            type_name(message.type()));
  }
}

// The response's head (and the body it carries): HEADERS, with a data provider unless it ends here.
void ServerCodec::child_submit_head(StreamChannel& ch, http::HttpResponse& response, bool end_stream, bool whole) {
  const int status = response.status();
  if (ch.headers_sent_) throw std::logic_error("http2::StreamChannel: a second response head");
  detail::ResponseHeaders& headers = response_headers();
  if (status < 200) {  // interim
    headers.build(response, std::nullopt);
    session_->submit_headers(ch.id_, headers.data(), headers.size());
    return;
  }
  Stream* s = stream(ch.id_);
  if (s == nullptr) return;  // closed meanwhile (a reset on its way to the child)
  note_answer(*s, status);
  const bool bodiless = status == 204 || status == 304;
  const std::string_view body = bodiless ? std::string_view() : response.body_bytes();
  headers.build(response, whole && !bodiless ? std::optional<std::size_t>(body.size()) : std::nullopt);
  if (!body.empty()) {
    ByteBuf bytes;
    if (response.owned_body().has_storage()) {
      bytes = std::move(response.owned_body());
    } else {
      bytes = ctx_->allocator().buffer(body.size());
      bytes.write_bytes(body.data(), body.size());
    }
    ch.out_data_.push_back(std::move(bytes));
    ch.out_bytes_ += body.size();
    ch.hold_write_bytes(body.size());
  }
  ch.headers_sent_ = true;
  if (end_stream) ch.out_ended_ = true;
  int rv;
  if (end_stream && ch.out_bytes_ == 0) {
    rv = session_->submit_response(ch.id_, headers.data(), headers.size(), nullptr);
  } else {
    const detail::DataSource source{s, Callbacks::read_child};
    ch.has_provider_ = true;
    rv = session_->submit_response(ch.id_, headers.data(), headers.size(), &source);
  }
  if (rv != 0) {
    log(LogLevel::debug, "channel {}: HTTP/2 response on stream {} not submitted: {}", ctx_->channel().id(), ch.id_,
        detail::describe(rv));
  }
  if (response.closes_connection()) submit_goaway();
}

// Frames leave at the end of the read when the codec is reading (one send for all the children).
// Otherwise, with the stream API, from a loop task queued once: a coroutine that writes message
// after message from a task or a timer (a server stream) gets one send per loop turn, not one per
// message. The handler API flushes at once.
void ServerCodec::flush_soon() {
  if (in_read_ || in_session_) {
    flush_wanted_ = true;
  } else if (streams_enabled_) {
    post_flush();
  } else if (ctx_ != nullptr) {
    flush(*ctx_);
  }
}

void ServerCodec::post_flush() {
  if (ctx_ == nullptr) return;
  if (!flush_later_.schedule(ctx_->loop())) flush(*ctx_);  // the loop has terminated: no later turn
}

void ServerCodec::flush_posted() {
  if (ctx_ != nullptr && session_ != nullptr && !finished_) flush(*ctx_);
}

// The child flushed: its data provider goes back in the queue when it waited, and the frames leave
// (at the end of the read when the codec is reading: one send for all the children).
void ServerCodec::child_flush(StreamChannel& ch) {
  if (session_ == nullptr || finished_) return;
  const ChildCall call(child_calling_, ch);
  if (!ch.stream_closed_ && ch.deferred_ && (ch.out_bytes_ > ch.out_promised_ || ch.out_ended_)) {
    ch.deferred_ = false;
    session_->resume_data(ch.id_);
  }
  flush_soon();
}

// The child closed: before its response ended, the stream is reset (RST_STREAM(CANCEL)); after, the
// response goes on leaving and what the client still sends is dropped.
void ServerCodec::child_closed(StreamChannel& ch) {
  const ChildCall call(child_calling_, ch);
  ch.input_closed_ = true;
  const std::size_t held = std::exchange(ch.in_bytes_, 0);
  ch.in_retained_ = 0;
  ch.in_headers_.reset();
  ch.in_data_.clear();
  ch.in_trailers_.reset();
  if (ch.stream_closed_ || session_ == nullptr || finished_) return;
  if (!ch.out_ended_) {
    // What it wrote and flushed leaves first (as far as the windows allow), then the reset.
    if (!in_session_ && ctx_ != nullptr) send_pending(*ctx_);
    if (ch.stream_closed_ || session_ == nullptr || finished_) return;
    if (Stream* s = stream(ch.id_)) s->cancelled = true;
    session_->submit_rst_stream(ch.id_, detail::ErrorCode::cancel);
  } else {
    consume_stream(ch.id_, held);
    if (ch.deferred_) {  // its end was written but not flushed: closing flushes it
      ch.deferred_ = false;
      session_->resume_data(ch.id_);
    }
  }
  flush_soon();
}

// ---- extended CONNECT (RFC 8441): a stream dispatched at its HEADERS, then served as a channel

// DATA on an extended CONNECT's stream before its route has decided: kept (its stream's window is
// not returned, so the client can send at most that much); after an answer that was not a channel,
// dropped.
int ServerCodec::tunnel_data(Stream& s, const std::uint8_t* data, std::size_t len) {
  session_->consume_connection(len);
  if (s.answered) {
    consume_stream(s.id, len);
    return 0;
  }
  const std::size_t held_before = s.body.has_storage() ? s.body.capacity() : 0;
  try {
    if (!s.body.has_storage()) s.body = ctx_->allocator().buffer(std::max(len, kInChunk));
    s.body.write_bytes(data, len);
  } catch (const std::exception&) {
    return detail::Result::reset_stream;
  }
  body_bytes_ += s.body.capacity() - held_before;
  return 0;
}

bool ServerCodec::serve_as_channel(http::HttpRequest& request, StreamInitializer init) {
  if (session_ == nullptr || finished_ || ctx_ == nullptr || !init || request.sequence() > 0x7fffffffu) return false;
  Stream* s = stream(static_cast<std::int32_t>(request.sequence()));
  if (s == nullptr || !s->tunnel || !s->dispatched || s->answered || s->child) return false;
  std::shared_ptr<StreamChannel> child;
  try {
    child =
        std::allocate_shared<StreamChannel>(detail::StreamChannelAllocator<StreamChannel>{}, StreamChannel::Private{},
                                            *this, ctx_->channel(), s->id, std::move(init));
    // What arrived before: with the HEADERS (the request's body), then since (the stream's).
    ByteBuf early[2] = {detail::RequestAccess::take_body(request), std::move(s->body)};
    if (early[1].has_storage()) body_bytes_ -= early[1].capacity();
    for (ByteBuf& bytes : early) {
      if (!bytes.is_readable()) continue;
      child->in_bytes_ += bytes.readable_bytes();
      child->in_retained_ += bytes.capacity();
      child->in_data_.push_back(StreamData{std::move(bytes), false});
    }
    if (s->complete) {  // the client has ended its side already
      if (child->in_data_.empty()) child->in_data_.push_back(StreamData{ByteBuf(), true});
      child->in_data_[child->in_data_.size() - 1].end_stream = true;
      child->in_ended_ = true;
    }
    child->draining_owed_ = draining_;
    s->child = child;
    s->answered = true;  // (its answer is the child's: no whole response goes to it)
    session_->keep_open_after_end(s->id);
    s->header_list_size = s->header_count = 0;
    queue_child(*child);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: HTTP/2 stream {} could not be served as a channel: {}", ctx_->channel().id(),
        s->id, e.what());
    s->child.reset();
    return false;
  }
  // Inside the codec's dispatch the read's end runs the children; otherwise a loop turn does.
  if (dispatching_ == 0) post_children();
  return true;
}

}  // namespace weft::http2
