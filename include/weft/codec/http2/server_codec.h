#pragma once
/// @file
/// The HTTP/2 server codec: bytes in, http::HttpRequest out; http::HttpResponse in,
/// bytes out. The same request and response types as the HTTP/1.1 codec, so a Router, a handler on
/// an executor or a coroutine written for HTTP/1.1 serves HTTP/2 streams unchanged.
///
/// The framing, HPACK, flow control and the stream state machine are weft's own (src/codec/http2/
/// session.h, frame.h, hpack.h), shared with the client; libweft does not use libnghttp2.
/// ByteBuf in and ByteBuf out: the codec sits right after the transport for h2c, and behind a TLS
/// handler (ALPN "h2") unchanged.
///
/// Streams and answers: each stream whose request is whole (HEADERS, DATA up to END_STREAM) becomes
/// an HttpRequest whose sequence() is the stream id. An answer goes to the stream named with
/// HttpResponse::for_request(); else, when it is written while the codec hands a request to the
/// pipeline, that request's stream; else the oldest stream still without an answer (an offloaded
/// handler, a coroutine that answers in turn). Answers leave as they come: HTTP/2 needs no order
/// across streams. An answer for a stream that is gone (the client reset it) is dropped.
///
/// Requests: the pseudo-headers become the head (:method, :path as target, path and query,
/// :authority as authority and, when the client sent no Host, as a "host" header); header names
/// are lowercase (HTTP/2 requires it; HttpRequest::header() is case-insensitive anyway); version()
/// is http::Version::http2. Trailers are dropped (but for streamed routes' bodies, below).
///
/// Responses: the header names of HttpResponse and HeaderBlock are sent in lowercase, and the
/// connection-specific ones (Connection, Keep-Alive, Transfer-Encoding, Upgrade, Proxy-Connection)
/// are left out; the codec adds date and content-length. A body is sent in DATA frames as flow
/// control allows; an owned body of 8 KiB or more leaves by reference (no copy), a smaller one or a
/// borrowed one (body_view) is copied once. A response to HEAD has no DATA. close_connection()
/// makes the codec send GOAWAY after it: the streams already open are still answered.
///
/// Bad input: a protocol error gets GOAWAY (or RST_STREAM for a stream's error) and the connection
/// ends gracefully. A header list past Settings::max_header_list_size or max_headers gets 431, a body
/// past max_body 413. Abuse budget: see Settings::max_glitches (GOAWAY(ENHANCE_YOUR_CALM), close).
///
/// Backpressure: frames are serialised only while the channel is writable, and reading stops while
/// it is not, so a client that never reads costs a bounded amount of memory; response bodies follow
/// the client's flow-control windows.
///
/// A Router's streamed routes (body_reader.h, body_writer.h): when the pipeline holds a Router
/// with StreamFn routes, a request for one is handed over at its HEADERS with its body to come
/// (HttpRequest::body_stream()), its stream's window returned as the route reads; a response made
/// with HttpResponse::stream() is sent as DATA frames as its producer writes, its trailers as
/// trailing HEADERS.
///
/// Streams as channels: with Settings::stream_initializer set, the streams it chooses are served as
/// http2::StreamChannel children (request body in chunks, response body streamed, trailers,
/// backpressure per stream; see stream_channel.h); the others as above.
///
/// Inbound ByteBuf -> HttpRequest; outbound HttpResponse -> ByteBuf. Loop thread only; one codec
/// per channel. Turns the channel's allow_half_closure on: a client's FIN is answered with GOAWAY
/// once the streams owed are answered.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http2/settings.h"
#include "weft/core/event_loop.h"
#include "weft/core/inline_ring.h"
#include "weft/core/loop_callback.h"

namespace weft::http {
class Router;
}  // namespace weft::http

namespace weft::http2 {

namespace detail {
class Session;
}  // namespace detail

/// The HTTP/2 connection preface a client with prior knowledge starts with (RFC 9113 3.4).
inline constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The HTTP/2 server codec: ByteBuf in, http::HttpRequest out; http::HttpResponse in, ByteBuf out
/// (see the file's description). One per channel; loop thread only.
class ServerCodec final : public Handler {
 public:
  /// A codec with `settings` (the defaults are Settings' own).
  explicit ServerCodec(Settings settings = {});
  ~ServerCodec() override;
  ServerCodec(const ServerCodec&) = delete;
  ServerCodec& operator=(const ServerCodec&) = delete;

  /// ByteBuf -> http::HttpRequest inbound, http::HttpResponse -> ByteBuf outbound.
  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(http::HttpRequest), &typeid(http::HttpResponse), &typeid(ByteBuf)};
  }
  /// Loop thread only. Makes the connection's session and queues the server's SETTINGS.
  void handler_added(Context& ctx) override;
  /// Loop thread only. Frees the session's streams and timers.
  void handler_removed(Context& ctx) override;
  /// Loop thread only. Starts the idle timer.
  void channel_active(Context& ctx) override;
  /// Loop thread only. Feeds the bytes to the session, then hands the requests made whole to the pipeline.
  void read_message(Context& ctx, MessageRef message) override;
  /// Loop thread only. Submits an http::HttpResponse on its stream.
  void write_message(Context& ctx, MessageRef message) override;
  /// Loop thread only. Serialises what the session has to send and writes it on.
  void flush(Context& ctx) override;
  /// Loop thread only. The end of a read batch: sends what the batch produced (SETTINGS ACK,
  /// WINDOW_UPDATE...), then passes the event on.
  void channel_read_complete(Context& ctx) override;
  /// Loop thread only.
  void channel_inactive(Context& ctx) override;
  /// Loop thread only. The client's FIN: GOAWAY, and the close once the streams owed are answered.
  /// A graceful shutdown (ChannelShutdownRequestedEvent: the loop's, drain_server): announce_shutdown(),
  /// and ConnectionDrainingEvent on each stream channel.
  void user_event(Context& ctx, const std::any& event) override;
  /// Loop thread only. Reading stops while the channel is unwritable; output resumes when writable.
  void writability_changed(Context& ctx) override;
  /// I/O errors (a peer that resets) end the connection quietly; others travel on.
  void exception_caught(Context& ctx, std::exception_ptr error) override;

  /// Loop thread only. Sends GOAWAY(NO_ERROR): no new stream is accepted, the open ones are still
  /// answered, then the connection closes. Idempotent.
  void shutdown_gracefully(Context& ctx);
  /// Loop thread only. The graceful shutdown of RFC 9113 6.8, in two phases: GOAWAY(NO_ERROR) with
  /// last-stream-id 2^31-1 and a PING; when the PING's ACK arrives (or Settings::goaway_ping_timeout
  /// later), GOAWAY(NO_ERROR) with the last stream processed. Streams the client opened meanwhile are
  /// served; later ones are refused. The connection closes once the open streams are answered.
  /// Idempotent; after shutdown_gracefully() it adds nothing.
  void announce_shutdown(Context& ctx);
  /// Loop thread only. Takes over a connection whose first HTTP/1.1 request asked to switch
  /// (`Upgrade: h2c`, RFC 7540 3.2) and was answered with 101: `settings` is the request's
  /// HTTP2-Settings, base64url-decoded, and `head` the request, which becomes stream 1 (half-closed:
  /// it had no body) and is handed to the pipeline now; its views need only last for the call. Call
  /// it once the codec is in the pipeline, before it has read anything (the client's preface
  /// follows). False when the settings are malformed.
  bool upgrade(Context& ctx, std::string_view settings, const http::RequestHead& head);
  /// Loop thread only. Serves the stream of `request`, an extended CONNECT (RFC 8441; see
  /// Settings::enable_connect_protocol) handed to the pipeline and not answered yet, as a
  /// StreamChannel from now on: `init` builds its pipeline, as a Settings::stream_initializer's
  /// does. The child reads no StreamHeaders (the head is `request`): its first message is
  /// StreamData, with the DATA that came before this call (moved out of `request`'s body) first,
  /// and a StreamData with end_stream when the client ends its side. It answers with
  /// ResponseHeaders (2xx accepts the tunnel), then StreamData both ways; ending its output
  /// (StreamData with end_stream, or Channel::shutdown_output / close_gracefully) sends END_STREAM.
  /// False, and nothing done, when the stream is gone (reset), answered, or not an extended CONNECT.
  bool serve_as_channel(http::HttpRequest& request, StreamInitializer init);
  /// Loop thread only. Streams whose request has begun and that are not closed yet.
  std::size_t open_streams() const noexcept { return live_streams_; }

 private:
  struct Stream;
  struct Callbacks;  // the session's callbacks (server_codec.cc)
  struct RouteBody;  // a stream's streamed bodies for a Router (route_body.h)
  friend class StreamChannel;

  // ---- streams served as channels (stream_channel.cc holds the child's side)
  void fill_head(Stream& s, http::RequestHead& head);
  // Counts the final answer `status` to `s` in the metrics: into the batch of alike answers
  // (answers_*), observed at the flush.
  void note_answer(const Stream& s, int status) noexcept;
  // Observes the answers batched so far, their duration ending now, and counts the streams opened
  // and closed since the last call.
  void record_answers(Context& ctx) noexcept;
  int open_child(Stream& s, bool end_stream);
  int child_data(Stream& s, const std::uint8_t* data, std::size_t len);
  int child_frame(Stream& s, std::uint8_t type, bool end_stream);
  int child_trailer(Stream& s, std::string_view name, std::string_view value);
  void child_stream_closed(Stream& s, std::uint32_t error_code);
  void queue_child(StreamChannel& child);
  void tell_children_draining();
  void run_children();
  void post_children();
  void run_children_posted();
  void serve_child(StreamChannel& child);
  void consume_stream(std::int32_t id, std::size_t n) noexcept;
  void detach_children() noexcept;
  void detach_later() noexcept;  // detach_children, after the session call on the stack returns
  // The child's operations (StreamChannel's do_* hooks).
  void child_write(StreamChannel& child, MessageRef message);
  void child_submit_head(StreamChannel& child, http::HttpResponse& response, bool end_stream, bool whole);
  void flush_soon();
  void post_flush();
  void flush_posted();
  void child_flush(StreamChannel& child);
  void child_closed(StreamChannel& child);
  int tunnel_data(Stream& s, const std::uint8_t* data, std::size_t len);

  // ---- a Router's streamed bodies (server_codec_route.cc)
  bool wants_streamed_body(const Stream& s);
  int open_route_body(Stream& s);
  int route_data(Stream& s, const std::uint8_t* data, std::size_t len);
  int route_trailer(Stream& s, std::string_view name, std::string_view value);
  void end_route_body(Stream& s);
  void submit_streamed(Context& ctx, Stream& s, http::HttpResponse& response);
  void wake_route_writers() noexcept;
  void close_route_bodies() noexcept;

  Stream* stream(std::int32_t id) const noexcept;
  Stream* acquire_stream(std::int32_t id);
  void release_stream(Stream* s) noexcept;
  void earn_window_updates(std::uint32_t frames, std::size_t data_bytes) noexcept;
  void reserve_out(std::size_t n);
  void spill_if_large();
  void dispatch_ready(Context& ctx);
  void dispatch(Context& ctx, Stream& s);
  void compact_unanswered();
  void answer_error(Context& ctx, Stream& s, int status);
  std::int32_t answered_stream(const http::HttpResponse& response) noexcept;
  void submit(Context& ctx, Stream& s, http::HttpResponse& response);
  void submit_goaway();
  void send_pending(Context& ctx);
  void write_out(Context& ctx);
  void glitch(const char* what);
  void fail_session(Context& ctx, const char* what, int error_code);
  void finish_if_done(Context& ctx);
  void end_input(Context& ctx);
  void want_deadline(Context& ctx, TimePoint at);
  TimePoint next_keepalive() const noexcept;
  bool ping_allowed(TimePoint now) noexcept;
  void on_deadline(Context& ctx);
  TimePoint time_out_requests(Context& ctx, TimePoint now);
  void start_clocks(Context& ctx);
  bool end_if_aged(Context& ctx, TimePoint now);
  void drop_body(Stream& s) noexcept;
  std::size_t max_connection_body() const noexcept {
    return settings_.max_connection_body != 0 ? settings_.max_connection_body : 4 * settings_.max_body;
  }
  void stop_deadline(Context& ctx);

  Settings settings_;
  Context* ctx_ = nullptr;            // while in a pipeline: the session's callbacks reach it here
  std::unique_ptr<Callbacks> hooks_;  // what the session calls (the codec)
  std::unique_ptr<detail::Session> session_;  // the HTTP/2 connection's state (session.h)
  bool in_session_ = false;                   // inside receive or send: the session must not be re-entered
  bool detach_after_session_ = false;  // the channel went inactive inside the session (detach_later)
  bool calm_requested_ = false;       // the glitch budget ran out: GOAWAY(ENHANCE_YOUR_CALM) queued
  bool goaway_submitted_ = false;
  bool finished_ = false;             // the connection's end has been started
  ReadSuspension reading_;            // held while the channel is unwritable
  ByteBuf out_;                       // frames serialised since the last write on
  std::int32_t dispatching_ = 0;      // the stream whose request is being handed over now
  std::size_t live_streams_ = 0;
  std::size_t body_bytes_ = 0;        // request bodies held while they arrive (Settings::max_connection_body)
  bool preface_received_ = false;     // the client's first SETTINGS frame arrived
  TimePoint began_{};                 // when the connection began (Settings::preface_timeout)
  TimePoint input_ended_{};           // the client's FIN (Settings::half_closed_timeout); {}: none yet
  std::uint32_t glitches_ = 0;
  std::uint32_t window_update_credit_ = 16;  // WINDOW_UPDATEs earned (DATA sent, streams opened)
  std::uint64_t window_bytes_owed_ = 0;      // DATA bytes sent the client may still return (both windows)
  TimePoint glitch_window_start_{};
  InlineRing<std::int32_t, 16> ready_;       // streams whose request became whole in this read
  InlineRing<std::int32_t, 16> unanswered_;  // dispatched streams, oldest first (answered ones lazily dropped)
  std::vector<std::unique_ptr<Stream>> streams_;  // every stream object made (reused)
  std::vector<Stream*> free_streams_;
  // Streams as channels (empty unless Settings::stream_initializer is set).
  bool streams_enabled_ = false;        // windows are returned by hand (Session::consume)
  // The first Router in the pipeline with StreamFn routes (looked for at the first request): the
  // bodies of its streamed routes are handed over as they arrive.
  std::shared_ptr<const http::Router> router_;
  bool router_looked_ = false;
  bool draining_ = false;               // asked to shut down: children get ConnectionDrainingEvent
  bool running_children_ = false;       // run_children() is on the stack
  bool in_read_ = false;                // read_message is on the stack: children's flushes wait for its end
  bool flush_wanted_ = false;           // ... and one asked for it
  StreamChannel* child_calling_ = nullptr;  // the child whose write, flush or close is on the stack
  LoopCallback run_children_later_{[this] { run_children_posted(); }};  // post_children
  LoopCallback flush_later_{[this] { flush_posted(); }};                // post_flush
  const ByteBuf* receiving_ = nullptr;  // the bytes the session is reading (DATA payloads are sliced from it)
  std::vector<std::shared_ptr<StreamChannel>> child_work_;   // children with something to do
  std::vector<std::shared_ptr<StreamChannel>> child_batch_;  // the ones being served (swapped with it)
  TimerId deadline_timer_ = 0;
  TimePoint deadline_at_{};
  TimePoint last_activity_{};
  TimePoint unwritable_since_{};
  // Keepalive and the ping policy (Settings::keepalive_time, min_ping_interval).
  TimePoint last_read_{};
  // Metrics: answers counted, not yet observed, alike in start (Stream::began, ns, with the method
  // class in the low 3 bits) and status.
  std::int64_t answers_stamp_ = 0;
  int answers_status_ = 0;
  std::uint32_t answers_ = 0;
  // Metrics: streams opened and closed since the last flush (counted at the flush).
  std::uint32_t streams_opened_ = 0;
  std::uint32_t streams_closed_ = 0;
  TimePoint ping_sent_at_{};
  bool ping_outstanding_ = false;
  // announce_shutdown: the first GOAWAY and its PING are out; the last GOAWAY waits for the ACK.
  bool goaway_ping_pending_ = false;
  TimePoint goaway_ping_due_{};                      // when the last GOAWAY goes without the ACK
  TimePoint last_ping_received_ = TimePoint::min();  // none yet
  // Settings::max_connection_age: when the connection is told to go (TimePoint::max(): never), and
  // when its streams still open are closed (TimePoint::max(): not yet, or never).
  TimePoint age_due_ = TimePoint::max();
  TimePoint age_grace_due_ = TimePoint::max();
  std::uint32_t ping_strikes_ = 0;
};

}  // namespace weft::http2
