#pragma once
/// @file
/// The HTTP/2 client codec. It runs on weft's own HTTP/2 engine, the one the server runs on (the
/// same frame checks, state machine, HPACK and limits). Connections are opened by the client layer
/// (weft/client/http2_connection.h), which puts a ClientCodec in their pipeline.
///
/// ClientCodec is a pipeline handler: http::HttpClientRequest out, bytes out; bytes
/// in, http::HttpClientResponse in. Each request is a stream of its own; answers come as streams
/// end, in any order. The server's SETTINGS are honoured -- its concurrency limit too: a stream
/// past it opens only when another has closed, and ClientSettings::max_queued_requests
/// bounds the requests waiting so. A GOAWAY fails the requests the server says it did not process
/// with ClientStreamError::refused() (safe to send again on another connection), and the requests
/// made after it at once, the same way; the others still complete. Responses are whole (the body
/// up to ClientSettings::max_response_body); header names are lowercase; version() is
/// http::Version::http2.
///
/// With ClientSettings::keepalive_time, a connection the server stopped answering is found and
/// closed: a PING after that long without a frame, the close when its ACK does not come in time.
///
/// Streamed requests (ClientCodec::open, client::Http2Connection::open; client_stream.h) send their
/// body in chunks with backpressure and give the response's head, its DATA as it comes and its
/// trailers, for coroutines on the connection's loop; gRPC's client (weft/grpc/client.h) is built on them.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/clock.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"
#include "weft/core/loop_callback.h"

namespace weft::http2 {

namespace detail {
class Session;
}  // namespace detail

/// A request the connection could not carry through: the server reset its stream, refused it
/// (REFUSED_STREAM, or above the last stream a GOAWAY said it would process), or its response
/// broke a limit.
class ClientStreamError : public Error {
 public:
  /// `error_code`: the HTTP/2 error code (RFC 9113 7); `refused`: the server did not process it.
  ClientStreamError(std::string_view what, std::uint32_t error_code, bool refused)
      : Error(std::string(what)), error_code_(error_code), refused_(refused) {}
  /// The HTTP/2 error code.
  std::uint32_t error_code() const noexcept { return error_code_; }
  /// Whether the server did not process the request: sending it again elsewhere is safe.
  bool refused() const noexcept { return refused_; }

 private:
  std::uint32_t error_code_;
  bool refused_;
};

/// A whole request (ClientCodec::request, or one written down the pipeline) whose stream received
/// no frame for ClientSettings::stream_idle_timeout: its stream was reset (RST_STREAM CANCEL); the
/// connection goes on serving the others.
class StreamIdleError : public ClientStreamError {
 public:
  /// `what`: the message; the error code is CANCEL, the request not refused.
  explicit StreamIdleError(std::string_view what) : ClientStreamError(what, 0x8, false) {}
};

/// The client's side of a connection.
struct ClientSettings {
  /// The receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE), and of the connection.
  std::uint32_t initial_window_size = 1u << 20;
  /// A response body past this resets its stream; the request fails with ClientStreamError.
  std::size_t max_response_body = 64u << 20;
  /// SETTINGS_MAX_HEADER_LIST_SIZE, and the bound the client keeps on each header list it receives
  /// (a response's head, its trailers; names, values and 32 bytes a field, RFC 9113 6.5.2): a
  /// larger one resets its stream (RST_STREAM(CANCEL)) and the request fails with ClientStreamError.
  std::uint32_t max_header_list_size = 64 * 1024;
  /// Requests waiting for the server's concurrency limit; past it a request fails at once.
  std::size_t max_queued_requests = 10000;
  /// :authority of requests without a Host header; empty: the remote address.
  std::string authority;
  /// :scheme; empty: "http" (client::Http2Connection::connect makes it "https" over TLS).
  std::string scheme;
  /// A streamed request's body bytes queued beyond which ClientStream::write() waits.
  std::size_t max_buffered_upload = 64 * 1024;
  /// Keepalive (gRPC's client keepalive; zero: off): a PING after this long without a frame from
  /// the server. Servers bound how often they take PINGs: grpc-core's answer pings more often than
  /// every 5 minutes (unless configured otherwise) with GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
  Duration keepalive_time = Duration::zero();
  /// A PING's ACK not back within this closes the connection: the requests on it fail with
  /// ChannelClosedError (a gRPC call: UNAVAILABLE).
  Duration keepalive_timeout = std::chrono::seconds(20);
  /// Whether PINGs are sent while no request is outstanding (grpc-core's keepalive_permit_without_calls).
  bool keepalive_without_calls = false;
  /// A whole request's stream that receives no frame for this long (counted from when its HEADERS
  /// left, then from its last frame; a request waiting for the server's
  /// SETTINGS_MAX_CONCURRENT_STREAMS is not timed) is reset (CANCEL) and fails with
  /// StreamIdleError; zero: off. Streamed requests (open()) are their application's to time
  /// (ClientStream::headers_sent_at says when their clock may start).
  Duration stream_idle_timeout = Duration::zero();
};

/// The HTTP/2 client codec (see the file's description). One per channel; loop thread only.
class ClientCodec final : public Handler {
 public:
  /// A codec with `settings`. Thread-safe (made before it is in a pipeline).
  explicit ClientCodec(ClientSettings settings = {});
  ~ClientCodec() override;
  ClientCodec(const ClientCodec&) = delete;
  ClientCodec& operator=(const ClientCodec&) = delete;

  /// ByteBuf -> http::HttpClientResponse inbound, http::HttpClientRequest -> ByteBuf outbound.
  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(http::HttpClientResponse), &typeid(http::HttpClientRequest), &typeid(ByteBuf)};
  }
  /// Loop thread only. Makes the session; the preface and SETTINGS leave once the channel is active.
  void handler_added(Context& ctx) override;
  /// Loop thread only. Fails what is still waiting (ChannelClosedError).
  void handler_removed(Context& ctx) override;
  /// Loop thread only. Sends the preface and SETTINGS.
  void channel_active(Context& ctx) override;
  /// Loop thread only. Fails every request still waiting with ChannelClosedError.
  void channel_inactive(Context& ctx) override;
  /// Loop thread only. The server's frames.
  void read_message(Context& ctx, MessageRef message) override;
  /// Loop thread only. An http::HttpClientRequest: sent as request() does; its response is fired
  /// down the pipeline (in the order responses end), a failure as an exception event.
  void write_message(Context& ctx, MessageRef message) override;

  /// Loop thread only. Sends `request` on a new stream; `done` completes with its response or fails
  /// (ClientStreamError, ChannelClosedError). Returns the stream's id (for cancel()), 0 when `done`
  /// failed at once.
  std::int32_t request(http::HttpClientRequest request, Promise<http::HttpClientResponse> done);
  /// Loop thread only. Gives up the request on stream `id` (request()'s, or ClientStream::id()):
  /// resets its stream (RST_STREAM CANCEL), which frees its place under the server's
  /// SETTINGS_MAX_CONCURRENT_STREAMS, and fails it with ClientStreamError (CANCEL, not refused);
  /// the connection goes on. Does nothing once the request's response has ended or it failed.
  void cancel(std::int32_t id);
  /// Loop thread only. Opens a streamed request (client_stream.h): `method`, `path`, and `headers`
  /// (names lowercase, no pseudo-headers; connection-specific fields, and TE but "TE: trailers", are
  /// dropped as RFC 9113 8.2.2 asks; :scheme and :authority come from the settings). The HEADERS
  /// leave at once (or when the server's concurrency limit lets the stream open); the body follows
  /// ClientStream::write(). Throws std::invalid_argument for a name with an uppercase letter; a
  /// stream that cannot open is returned failed (its calls throw ClientStreamError or
  /// ChannelClosedError).
  ClientStream open(std::string_view method, std::string_view path, std::span<const http::Header> headers);
  /// Loop thread only. Opens an extended CONNECT (RFC 8441 4): `:method CONNECT`, `:protocol`
  /// `protocol`, `:scheme` and `:authority` from the settings, `:path` `path`, then `headers` as
  /// open() takes them. Once its response's head is a 2xx the stream is a tunnel: DATA both ways
  /// (write(), read()) until each side ends its half (end(), read() giving nullopt). Only after the
  /// server's SETTINGS said SETTINGS_ENABLE_CONNECT_PROTOCOL=1 (peer_enable_connect_protocol()):
  /// otherwise the stream is returned failed with ClientStreamError (PROTOCOL_ERROR, not refused).
  ClientStream open_extended_connect(std::string_view protocol, std::string_view path,
                                     std::span<const http::Header> headers);
  /// Loop thread only. Whether the server's SETTINGS said SETTINGS_ENABLE_CONNECT_PROTOCOL=1 (RFC
  /// 8441 3); false until its first SETTINGS (ready()).
  bool peer_enable_connect_protocol() const noexcept;
  /// Loop thread only. Requests sent or queued whose response has not ended.
  std::size_t outstanding() const noexcept { return streams_.size(); }
  /// Thread-safe. Completes when the server's first SETTINGS have arrived (requests sent earlier are
  /// opened under the protocol's defaults, and the server may refuse those past its limit); fails
  /// with ChannelClosedError if the connection ends first.
  Future<void> ready() const { return ready_.future(); }
  /// Loop thread only. The server's SETTINGS_MAX_CONCURRENT_STREAMS as last received (100 until
  /// its SETTINGS name one).
  std::uint32_t peer_max_concurrent_streams() const noexcept;
  /// Loop thread only. Whether the server sent GOAWAY.
  bool goaway_received() const noexcept { return goaway_; }

 private:
  struct Stream;
  struct Hooks;  // the session's hooks (client_codec.cc)
  friend class ClientStream;
  using StreamState = ClientStream::State;

  std::int32_t submit(http::HttpClientRequest request, Promise<http::HttpClientResponse> done, bool fire);
  // open() and open_extended_connect(): `protocol` empty for a plain request.
  ClientStream open_stream(std::string_view method, std::string_view protocol, std::string_view path,
                           std::span<const http::Header> headers);
  void send_pending();
  void write_out();  // out_ to the channel
  void finish(std::int32_t id, std::uint32_t error_code);
  std::exception_ptr failure_error(const Stream& s, std::uint32_t error_code);
  void fail_all(std::exception_ptr error);
  void deliver(Stream& s, std::exception_ptr error, http::HttpClientResponse* response);
  http::HttpClientResponse build_head(Stream& s);
  // Streamed requests (client_stream.cc).
  void stream_queued(StreamState& state);                   // chunks or the end queued: let the session send them
  void stream_read(StreamState& state, std::size_t bytes);  // the application took `bytes` of DATA
  void stream_reset(const std::shared_ptr<StreamState>& state, std::uint32_t error_code);
  void wake(const std::shared_ptr<StreamState>& state);  // resume its waiting coroutines, soon
  void run_wakes();
  void want_send();    // send the streams' frames at the end of this turn (one write for all)
  void pump();         // run the wakes and send, until neither has more
  void pump_posted();  // pump_later_: pump unless one is on the stack
  void fail_stream(const std::shared_ptr<StreamState>& state, std::exception_ptr error);
  // Keepalive (ClientSettings::keepalive_time).
  void keepalive_at(TimePoint when);  // (re)arms the keepalive timer
  void keepalive_due();               // the timer fired: PING, or close when one went unanswered
  void keepalive_answered();          // the PING's ACK came
  void stop_keepalive() noexcept;
  void idle_at(TimePoint when);  // (re)arms the streams' idle timer (stream_idle_timeout)
  void idle_due();               // resets the whole requests' streams quiet for that long
  void stop_idle() noexcept;

  ClientSettings settings_;
  Context* ctx_ = nullptr;
  std::unique_ptr<Hooks> hooks_;
  std::unique_ptr<detail::Session> session_;
  bool in_session_ = false;
  ByteBuf out_;                       // frames the session wrote, not yet passed to the channel
  bool unflushed_ = false;            // written to the channel since the last flush
  const char* last_error_ = nullptr;  // the session's last invalid frame (a connection error's reason)
  bool goaway_ = false;
  bool started_ = false;
  bool failed_ = false;  // fail_all ran: the connection is over
  std::int32_t goaway_last_stream_ = 0;
  Promise<void> ready_;
  std::unordered_map<std::int32_t, std::unique_ptr<Stream>> streams_;
  struct FieldRefs;  // the fields of open(), kept for the next one (client_stream_state.h)
  std::unique_ptr<FieldRefs> nva_;
  std::vector<std::shared_ptr<StreamState>> wakes_, waking_;  // streams whose coroutines resume
  bool running_wakes_ = false;
  bool pumping_ = false;                                // in read_message or a posted pump: frames leave at its end
  LoopCallback pump_later_{[this] { pump_posted(); }};  // want_send
  TimePoint last_read_{};                               // the server's last bytes (keepalive)
  TimePoint ping_sent_at_{};  // the keepalive PING waiting for its ACK, when ping_outstanding_
  bool ping_outstanding_ = false;
  std::optional<TimerId> keepalive_timer_;
  std::optional<TimerId> idle_timer_;
};

}  // namespace weft::http2
