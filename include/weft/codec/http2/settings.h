#pragma once
/// @file
/// http2::Settings: what an HTTP/2 server connection announces (SETTINGS) and the bounds it keeps.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "weft/codec/http1/http_types.h"
#include "weft/core/clock.h"

namespace weft::http {
struct RequestHead;
}  // namespace weft::http

namespace weft::http2 {

class StreamChannel;
/// Builds a StreamChannel's pipeline (see stream_channel.h); called on the loop thread before the
/// child is registered, as a ServerBootstrap's child_handler is for a connection.
using StreamInitializer = std::function<void(StreamChannel&)>;
/// Chooses how a stream is served from its request's head (see Settings::stream_initializer).
using StreamChooser = std::function<StreamInitializer(const http::RequestHead&)>;

/// The settings and limits of an HTTP/2 server connection (http2::ServerCodec). The first five are
/// sent to the client in the server's SETTINGS frame; the others are bounds the codec keeps.
struct Settings {
  /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the client may have open at once; more are refused
  /// with RST_STREAM(REFUSED_STREAM).
  std::uint32_t max_concurrent_streams = 100;
  /// SETTINGS_INITIAL_WINDOW_SIZE: bytes of request body the client may send on a stream before
  /// the server's WINDOW_UPDATE (the protocol's default, 64 KiB - 1).
  std::uint32_t initial_window_size = 65535;
  /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload the server accepts (16384..16777215).
  std::uint32_t max_frame_size = 16384;
  /// SETTINGS_MAX_HEADER_LIST_SIZE: a request's header list (names, values, 32 bytes each) larger
  /// than this is answered with 431 and not handed to the application.
  std::uint32_t max_header_list_size = 16384;
  /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table the client may use for requests.
  std::uint32_t header_table_size = 4096;

  /// Headers a request may have (pseudo-headers not counted); more: 431. At most
  /// http::RequestHead::kInlineHeaders.
  std::size_t max_headers = 64;
  /// The largest request body (aggregated in memory); larger: 413. A Router's streamed route's
  /// body (Router::StreamFn) is not aggregated: its bound is the stream's window, not this.
  std::size_t max_body = 1024 * 1024;
  /// The bodies of the codec's own error answers (413, 431, 408, 503...); empty (the default): none.
  http::ErrorBodyFn error_body;
  /// The memory the request bodies of one connection hold while they arrive (streams served whole;
  /// their buffers' capacity): a stream whose DATA would take the connection past it is answered
  /// 503 and its upload stopped, so that the codec holds about this much, not
  /// max_concurrent_streams x max_body. (Bodies handed to the application are the application's.)
  /// Zero (the default): 4 x max_body; at least max_body.
  std::size_t max_connection_body = 0;
  /// A request served whole (head and body) that has not arrived whole this long after its HEADERS
  /// began is answered 408 and its upload stopped; the connection serves on. A Router's streamed
  /// route's body (Router::StreamFn) is bounded alike from its HEADERS and again from each take of
  /// its reader: a client owing bytes (none waiting unread) that sends none for this long fails the
  /// reader's next() with http::HttpProtocolError(408) (answered 408 if the route lets it escape), the
  /// rest is dropped and the stream reset with RST_STREAM(CANCEL) after its answer; a slow reader is
  /// never timed. Streams served as channels (stream_initializer) are the application's to time.
  /// Zero: no limit.
  Duration request_timeout = std::chrono::seconds(60);
  /// The client's connection preface (its magic and first SETTINGS frame) must have arrived this
  /// long after the connection began, however slowly it trickles in; else the connection is closed.
  /// Zero: no limit.
  Duration preface_timeout = std::chrono::seconds(10);
  /// Glitch budget: the connection is ended with GOAWAY(ENHANCE_YOUR_CALM) once more than this
  /// many glitches happen within glitch_window. Glitches are what well-behaved clients rarely
  /// cause and floods are made of: RST_STREAM received (rapid reset, CVE-2023-44487) or sent by
  /// the server (MadeYouReset, CVE-2025-8671), invalid frames, empty DATA frames that do not end
  /// a stream, PING and SETTINGS frames, WINDOW_UPDATE frames beyond what the DATA sent earns,
  /// header lists past the limit.
  std::uint32_t max_glitches = 200;
  /// The window the glitch budget counts over (Netty: 200 resets in 30 s).
  Duration glitch_window = std::chrono::seconds(30);
  /// A connection with no stream open and nothing to send for this long gets GOAWAY(NO_ERROR)
  /// and is closed.
  Duration idle_timeout = std::chrono::seconds(75);
  /// A connection whose output cannot leave (unwritable) for this long is closed.
  Duration send_timeout = std::chrono::seconds(60);
  /// Keepalive: when nothing has been read for this long, the server sends PING; no answer within
  /// keepalive_timeout ends the connection (a peer gone without a FIN, a path that dropped it).
  /// Zero (the default): off. gRPC servers use 2 hours.
  Duration keepalive_time = Duration::zero();
  /// How long a keepalive PING may wait for its acknowledgement.
  Duration keepalive_timeout = std::chrono::seconds(20);
  /// The ping policy grpc-core enforces on clients: a PING sooner than this after the client's last
  /// one (sooner than 2 hours while no stream is open, unless permit_keepalive_without_calls) is a
  /// strike; more than max_ping_strikes strikes end the connection with GOAWAY(ENHANCE_YOUR_CALM)
  /// and the debug data "too_many_pings" (which makes a gRPC client slow its keepalive). A HEADERS
  /// or DATA frame the server sends forgives the strikes. Zero (the default): off; PINGs then only
  /// spend the glitch budget. grpc-core uses 5 minutes and 2 strikes.
  Duration min_ping_interval = Duration::zero();
  /// See min_ping_interval.
  std::uint32_t max_ping_strikes = 2;
  /// See min_ping_interval.
  bool permit_keepalive_without_calls = false;
  /// After the client's FIN (or TLS close_notify), the answers still owed to it have this long to
  /// go out; then the connection is closed, with the streams still unanswered (an application
  /// that never answers cannot hold a half-closed connection forever). Zero: no limit.
  Duration half_closed_timeout = std::chrono::seconds(30);
  /// A graceful shutdown (ChannelShutdownRequestedEvent: a loop's shutdown, drain_server) ends the
  /// connection in two phases (RFC 9113 6.8): GOAWAY(NO_ERROR) with last-stream-id 2^31-1 and a
  /// PING, then, once the PING's ACK is back -- every stream the client opened before it saw the
  /// first GOAWAY has arrived -- GOAWAY with the last stream processed. A client that does not
  /// answer the PING gets the second GOAWAY after this long.
  Duration goaway_ping_timeout = std::chrono::seconds(1);
  /// A connection older than this (less up to 10%, at random, so that connections made together do
  /// not all leave together) is ended gracefully, as by a drain: the two GOAWAYs above, its open
  /// streams answered. Long-lived clients (gRPC channels) then reconnect, and move to new instances
  /// behind a load balancer (grpc-core's GRPC_ARG_MAX_CONNECTION_AGE_MS). Zero (the default): no limit.
  Duration max_connection_age = Duration::zero();
  /// After max_connection_age's first GOAWAY, the streams still open have this long to end; then the
  /// connection is closed with them (grpc-core's GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS). Zero (the
  /// default): they have as long as they need.
  Duration max_connection_age_grace = Duration::zero();
  /// After the last frame (GOAWAY) the server sends FIN and reads what the client still sends for
  /// at most this long before it closes (see Channel::close_gracefully).
  Duration linger_timeout = std::chrono::seconds(2);

  /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 3): sent as 1 when set, and then a request may be an
  /// extended CONNECT (`:method CONNECT` with `:protocol`, `:scheme`, `:path` and `:authority`): such a
  /// request is handed to the pipeline as soon as its HEADERS arrive (its stream stays open both
  /// ways; `request.header(":protocol")` names the protocol), and the route that accepts it makes the
  /// stream a channel with ServerCodec::serve_as_channel(). ws::websocket routes do so for
  /// `:protocol websocket` (WebSocket over HTTP/2). Unset (the default): not advertised, and a
  /// request with `:protocol` is a stream error (PROTOCOL_ERROR). A plain CONNECT is not affected.
  /// Set, the codec returns flow-control windows itself, as with stream_initializer.
  bool enable_connect_protocol = false;

  /// The stream API (stream_channel.h): called with each request's head when its HEADERS have
  /// arrived, before any body. An initializer returned serves that stream as a StreamChannel built
  /// by it (body chunks, trailers, backpressure per stream); an empty one serves it whole, as
  /// http::HttpRequest. Unset (the default): every stream is served whole, and the codec works as
  /// if the stream API did not exist. Set, the codec returns flow-control windows itself: a
  /// stream's window as its child reads, the connection's as bytes arrive. Called on the loop
  /// thread inside the codec's read: it should only decide (it must not write to the connection);
  /// an exception it throws resets the stream (RST_STREAM(INTERNAL_ERROR)). A request that came
  /// by `Upgrade: h2c` (stream 1) is served whole.
  StreamChooser stream_initializer;
};

}  // namespace weft::http2
