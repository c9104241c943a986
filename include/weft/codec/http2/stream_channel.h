#pragma once
/// @file
/// The HTTP/2 stream API: a stream served as a channel of its own (http2::StreamChannel, Netty's
/// Http2StreamChannel), for what a whole http::HttpRequest -> http::HttpResponse cannot say: a
/// request body read chunk by chunk as it arrives, a response body written chunk by chunk,
/// trailers both ways, and backpressure per stream both ways.
///
/// Which streams: Settings::stream_initializer looks at each request's head (when its HEADERS
/// arrive, before any body) and returns a StreamInitializer for the streams to serve this way;
/// the others are served whole, as before. The initializer builds the child's pipeline (as a
/// ServerBootstrap's child_handler does for a connection); the child is then registered on the
/// connection's loop and made active.
///
/// What the child reads (one type, StreamMessage, so that weft::serve<StreamMessage> and typed
/// handlers work on it): StreamHeaders first (the request's head; its body is empty), then
/// StreamData chunks as DATA arrives, then StreamTrailers when the client sends them. The last
/// message has end_stream set (StreamTrailers always ends the request); ChannelInputShutdownEvent
/// follows it. A client's RST_STREAM reaches the child as an exception event (StreamResetError with
/// the code), then the child closes.
///
/// What the child writes: a ResponseHeaders (status and headers; a status below 200 is an interim
/// answer), then StreamData (or PrefixedStreamData) chunks, then optionally StreamTrailers (which end the stream); or
/// one http::HttpResponse, a whole answer (head, body, content-length). Written bytes leave at the next flush, as far
/// as the client's windows allow. StreamData before the head, or anything after the end, fails the write with
/// std::logic_error (an exception event in the child's pipeline). Closing the child before its response has ended
/// resets the stream: RST_STREAM(CANCEL), after what it flushed; closing it after (a coroutine that returns once it
/// wrote the end) lets the response finish leaving. Channel::shutdown_output (and close_gracefully) ends the
/// response once its head is written: END_STREAM after what was written, then the client's end closes the
/// channel (a tunnel's graceful end: an extended CONNECT served with ServerCodec::serve_as_channel).
///
/// Backpressure, both ways and bounded:
/// - Out: the bytes written to the child and not yet framed count toward its writability (see
///   Channel::hold_write_bytes), so a stream whose flow-control window is closed turns its channel
///   unwritable once its water mark is passed, and writable again when the client opens the window.
///   While the connection's socket is unwritable nothing is framed, so the children's bytes stay
///   held: the socket, the connection and each stream are one chain.
/// - In: the stream's window is returned to the client only for the bytes the child has read. A
///   child whose reading is suspended (auto-read off, a coroutine's full inbox, an offload queue at
///   its bound) stops its client at the stream's window (Settings::initial_window_size; the
///   protocol's 64 KiB until the client has the server's SETTINGS): the codec holds at most that
///   much for it. The connection's window is returned as bytes arrive, so one stalled stream
///   does not stall the others.
///
/// Threads: a StreamChannel is a Channel on its connection's loop; its public methods have
/// Channel's contracts (thread-safe ones post to the loop). The message types are plain values.
/// A child's events run inside its connection's (the codec hands them over, as Netty's multiplexer
/// does), never inside the session's callbacks and never nested in another child's call. Settings::
/// max_body bounds whole requests only: a child's body is unbounded in length, and bounded in
/// memory by its window.
///
/// A loop that has terminated (its final drain over) has no later turn for what would wait for one:
/// a child's flush leaves at once, a read() delivers nothing more, and the children's events after
/// a send are given up (logged); the connection's close still closes the children. (A running loop
/// closes its connections before it terminates; a manual-clock one's shutdown may leave one open.)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http2/settings.h"
#include "weft/core/error.h"
#include "weft/core/frame_pool.h"
#include "weft/core/inline_ring.h"
#include "weft/core/loop_callback.h"

namespace weft::http2 {

class ServerCodec;

/// Header fields in order (trailers), names and values owned. Not thread-safe (a value type).
class Fields {
 public:
  /// One field.
  struct Field {
    std::string name;   ///< as given (sent in lowercase)
    std::string value;  ///< as given
  };
  /// Appends a field. Throws std::invalid_argument when the name is not a token or the value has
  /// CR, LF, NUL or another control (as http::HttpResponse::header does).
  Fields& add(std::string_view name, std::string_view value) &;
  /// As the `&` overload, for an rvalue (returned as one).
  Fields&& add(std::string_view name, std::string_view value) && { return std::move(add(name, value)); }
  /// The first field named `name` (case-insensitive), if any.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// Fields held.
  std::size_t size() const noexcept { return fields_.size(); }
  /// Whether there is none.
  bool empty() const noexcept { return fields_.empty(); }
  /// The first field, for range-for.
  const Field* begin() const noexcept { return fields_.data(); }
  /// Past the last field.
  const Field* end() const noexcept { return fields_.data() + fields_.size(); }
  /// Appends without checking (for fields the session has validated already).
  void add_unchecked(std::string_view name, std::string_view value) {
    fields_.push_back({std::string(name), std::string(value)});
  }
  /// Room for `n` fields, so that adding them does not allocate again.
  void reserve(std::size_t n) { fields_.reserve(n); }

 private:
  std::vector<Field, frame_pool::Allocator<Field>> fields_;  // (trailers are made per call)
};

/// Inbound, first: the request's head. `request.body()` is empty (the body follows as StreamData);
/// `request.sequence()` is the stream id.
struct StreamHeaders {
  http::HttpRequest request;  ///< the head (method, path, authority, fields); no body
  bool end_stream = false;    ///< the request has no body (HEADERS carried END_STREAM)
};

/// Both ways: a chunk of a body. Inbound, one per DATA frame received (or a few small ones
/// merged); outbound, framed as the windows allow (large chunks leave by reference, no copy).
struct StreamData {
  ByteBuf data;             ///< the bytes (may be empty with end_stream)
  bool end_stream = false;  ///< the last of the body: nothing follows (no trailers)
  /// For bounds that count bytes (an offload queue).
  std::size_t message_size() const noexcept { return sizeof(StreamData) + data.readable_bytes(); }
};

/// Outbound: a chunk of body in two parts queued on the stream as one unit, so that nothing written
/// after it (trailers, a call's end) can come between them: a gRPC message's 5-byte prefix and its
/// bytes, which then leave by reference instead of being copied behind the prefix.
struct PrefixedStreamData {
  ByteBuf prefix;  ///< sent first
  ByteBuf data;    ///< sent right after `prefix`
  /// For bounds that count bytes (an offload queue).
  std::size_t message_size() const noexcept {
    return sizeof(PrefixedStreamData) + prefix.readable_bytes() + data.readable_bytes();
  }
};

/// Both ways: trailer fields; they end the stream (inbound: the request; outbound: the response).
struct StreamTrailers {
  Fields fields;  ///< names in lowercase inbound; sent in lowercase outbound
};

/// What a StreamChannel reads (see the file's description).
using StreamMessage = std::variant<StreamHeaders, StreamData, StreamTrailers>;

/// The memory a StreamMessage holds, for bounds that count bytes (found by weft::message_size).
inline std::size_t message_size(const StreamMessage& message) noexcept {
  const auto* data = std::get_if<StreamData>(&message);
  return sizeof(StreamMessage) + (data != nullptr ? data->data.readable_bytes() : 0);
}

/// Outbound: the response's head on a StreamChannel: the status and headers of `response` (its
/// HeaderBlock included; no content-length is added); a body it carries is sent as the first
/// DATA. With end_stream the response ends here (nothing may follow). A status below 200 is an
/// interim answer (1xx) and the final one follows.
struct ResponseHeaders {
  http::HttpResponse response;  ///< status and headers (and an optional first chunk of body)
  bool end_stream = false;      ///< no body and no trailers follow
  /// Copies what the response borrows (written from another thread: see weft::own_borrowed).
  void own_borrowed() { response.own_borrowed(); }
  /// For bounds that count bytes.
  std::size_t message_size() const noexcept { return sizeof(bool) + response.message_size(); }
};

/// A user event on each open StreamChannel (and each one opened after) when its connection is asked
/// to end gracefully (weft::drain_server, the loop's graceful shutdown; ChannelShutdownRequestedEvent
/// on the connection): the codec has sent GOAWAY and waits for the open streams. The stream is not
/// ended by it; a stream that would stay open for long (a watch, a subscription) should finish now,
/// or the drain's deadline closes it.
struct ConnectionDrainingEvent {};

/// The client reset the stream (RST_STREAM), or the stream ended with an error before the
/// response was complete: the exception a StreamChannel's pipeline sees before it closes.
class StreamResetError : public Error {
 public:
  /// A reset with the HTTP/2 error `code` (RFC 9113 7: 0x8 is CANCEL).
  explicit StreamResetError(std::uint32_t code);
  /// The HTTP/2 error code.
  std::uint32_t error_code() const noexcept { return code_; }

 private:
  std::uint32_t code_;
};

/// One HTTP/2 stream served as a channel (see the file's description): a child of the
/// connection's channel, on its loop, with its allocator. Made by the codec; the application sees
/// it in its StreamInitializer and in its handlers (ctx.channel()).
class StreamChannel final : public Channel {
 public:
  ~StreamChannel() override;

  /// Thread-safe. The stream's id (odd: client-initiated).
  std::int32_t stream_id() const noexcept { return id_; }
  /// Loop thread only. The connection's channel (valid while this channel is open: the stream's
  /// channels close when their connection does).
  Channel& parent() const noexcept { return *parent_; }
  /// Loop thread only. Request body bytes received and held for this child, not yet read by it
  /// (at most Settings::initial_window_size).
  std::size_t buffered_inbound_bytes() const noexcept { return in_bytes_; }
  /// Loop thread only. Response body bytes written to this child and not yet framed (they count
  /// toward writability; see pending_write_bytes()).
  std::size_t queued_outbound_bytes() const noexcept { return out_bytes_; }

 protected:
  /// Nothing to set up: the stream's I/O is the codec's.
  void do_register() override {}
  /// Delivers what the codec holds for the child (from a loop task) and goes on as it arrives.
  void do_begin_read() override;
  /// Stops delivering; the stream's window is no longer returned.
  void do_stop_read() override { reading_ = false; }
  /// Frames what was written, as the windows allow.
  void do_flush() override;
  /// Resets the stream (RST_STREAM(CANCEL)) unless its response has ended.
  void do_close() override;
  /// Ends the response (END_STREAM after what was written; the head must have been written): what
  /// Channel::shutdown_output and close_gracefully do to a stream. The client's end of the request
  /// then closes the channel, without a reset.
  void do_shutdown_output(Promise<void> promise) override;
  /// Takes ResponseHeaders, StreamData, PrefixedStreamData, StreamTrailers and http::HttpResponse.
  void do_write_message(MessageRef message) override;
  /// StreamMessage.
  const std::type_info* inbound_message_type() const noexcept override { return &typeid(StreamMessage); }
  /// Several types (see do_write_message).
  const std::type_info* outbound_message_type() const noexcept override { return nullptr; }

 private:
  friend class ServerCodec;
  struct Private {};  // lets the codec construct it with make_shared

 public:
  /// For the codec (the key type is private).
  StreamChannel(Private, ServerCodec& codec, Channel& parent, std::int32_t id, StreamInitializer init);

 private:
  // Called by the codec (loop thread).
  void start();                  // initializer, register, activate
  void deliver();                // hands what is held to the pipeline while reading
  void post_delivery();          // deliver() from a loop callback
  void delivery_posted();        // ... which runs this
  void finish(bool reset, std::uint32_t code);  // the stream closed: exception (reset), then close
  void detach() noexcept;        // the codec is going: no more stream behind this channel

  ServerCodec* codec_;  // null once the stream and the codec parted
  Channel* parent_;
  const std::int32_t id_;
  StreamInitializer init_;

  // inbound: held until the child reads
  std::optional<StreamHeaders> in_headers_;
  InlineRing<StreamData, 4> in_data_;
  std::optional<StreamTrailers> in_trailers_;
  Fields in_trailer_fields_;  // while the trailers' HEADERS arrive
  std::size_t in_bytes_ = 0;
  std::size_t in_retained_ = 0;     // the memory in_data_ keeps alive, or more (ServerCodec::child_data)
  bool in_ended_ = false;           // the request's end is held (or delivered)
  bool in_shutdown_fired_ = false;  // ChannelInputShutdownEvent delivered
  bool in_copied_tail_ = false;     // the last held chunk is a copy that may take more bytes
  bool reading_ = false;            // between do_begin_read and do_stop_read
  bool input_closed_ = false;       // the child is closed: what arrives is dropped

  // outbound: written, not yet framed
  InlineRing<ByteBuf, 4> out_data_;
  std::size_t out_bytes_ = 0;     // in out_data_
  std::size_t out_promised_ = 0;  // handed to the session (read callback), not yet framed
  std::size_t out_framed_ = 0;    // framed since the held bytes were last given back
  std::optional<Fields> out_trailers_;
  bool headers_sent_ = false;     // the final response head is submitted
  bool has_provider_ = false;     // submitted with a data provider (DATA may follow)
  bool out_ended_ = false;        // the response's end is written
  bool deferred_ = false;         // the data provider waits for more (Session::resume_data)

  bool started_ = false;
  bool stream_closed_ = false;    // the session closed the stream
  bool finished_ = false;         // finish() ran
  bool reset_ = false;            // ... by a reset
  std::uint32_t reset_code_ = 0;
  bool work_queued_ = false;      // in the codec's list of children with work
  bool draining_owed_ = false;    // ConnectionDrainingEvent to deliver
  // post_delivery. The hold keeps the channel while it is scheduled: its last handle may be let go
  // off the loop, where the callback could not be cancelled.
  LoopCallback delivery_later_{[this] { delivery_posted(); }};
  std::shared_ptr<StreamChannel> delivery_hold_;
};

}  // namespace weft::http2
