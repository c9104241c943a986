#pragma once
/// @file
/// The HTTP/1.1 server codec: decodes requests from bytes (pipelined, keep-alive, fixed-length and
/// chunked bodies, Expect: 100-continue) and encodes responses into one buffer per read batch, so a
/// batch of pipelined requests is answered with one write.
///
/// Order: each request takes the next place in the connection's answer sequence; an answer fills
/// its place (see HttpResponse for which request an answer is for) from any thread or coroutine,
/// and answers leave in request order -- one that is ready early is encoded at once and waits for
/// those before it. 100 Continue, an error answer, a close and the end of the client's input all
/// come after every answer already owed.
///
/// Bad input is answered with its status (400, 408, 413, 414, 431, 501, 505, 417) after the answers
/// owed, and the connection ends gracefully (FIN, then what the client still sends is read and
/// dropped for Limits::linger_timeout): nothing else is decoded from it.
///
/// Bounds: reading pauses while more than Limits::max_pipelined requests wait for answers, while
/// more than Limits::max_unsent_bytes of answers wait to be sent, and while the channel is not
/// writable -- a client that pipelines and never reads costs a bounded amount of memory. Timeouts
/// (Limits): a request must arrive whole within request_timeout of its first byte (408); an idle
/// keep-alive connection closes after idle_timeout; one whose answers cannot be sent for
/// send_timeout closes. A client that half-closes (FIN after its requests) gets every answer owed.
///
/// A response to HEAD is encoded with the headers, Content-Length included, of the response it is
/// given and without its body: build the same response as for GET (the Router sends HEAD to the GET
/// route) and the encoder drops the content.
///
/// The loop's graceful shutdown and drain_server (ChannelShutdownRequestedEvent): an idle keep-alive connection closes
/// at once; one with requests in flight reads no new request, answers those it has handed over -- the
/// last answer with `Connection: close` -- and then closes (Channel::end_for_shutdown_itself: the
/// loop waits for it up to its shutdown timeout). Requests pipelined behind are not answered. On a
/// loop that has terminated with the connection open (a handler before the codec ended it itself, on
/// a manual-clock loop) answers still leave, and what was buffered while reading was paused is not
/// decoded (that waits for a next turn of the loop).
///
/// A 101 Switching Protocols answer to the only request owed ends HTTP on the connection: nothing
/// more is decoded, and what arrives is kept for take_switched_input() (the WebSocket upgrade).
///
/// Inbound ByteBuf -> HttpRequest; outbound HttpResponse -> ByteBuf. Loop thread only; one codec per
/// channel. Turns the channel's allow_half_closure on when added (the end of the client's input is
/// an event it answers).

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/body_decoder.h"
#include "weft/codec/http1/http_message.h"
#include "weft/core/event_loop.h"
#include "weft/core/inline_ring.h"
#include "weft/core/loop_callback.h"

namespace weft::http {

namespace detail {
class BodySource;
class BodySink;
}  // namespace detail

/// Which requests a ServerCodec hands over at their head, their body following as a stream
/// (BodyReader): true for those. Called with the method and the path as sent.
using StreamBodyTest = std::function<bool(std::string_view method, std::string_view path)>;

/// The HTTP/1.1 server codec: ByteBuf in, HttpRequest out; HttpResponse in, ByteBuf out (see the
/// file's description). One per channel; loop thread only.
class ServerCodec final : public Handler {
 public:
  /// A codec with `limits` (the defaults are Limits' own).
  explicit ServerCodec(Limits limits = {});
  ~ServerCodec() override;

  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(HttpRequest), &typeid(HttpResponse), &typeid(ByteBuf)};
  }
  void handler_added(Context& ctx) override;
  void channel_active(Context& ctx) override;
  void read_message(Context& ctx, MessageRef message) override;
  void write_message(Context& ctx, MessageRef message) override;
  void flush(Context& ctx) override;
  void channel_read_complete(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  void user_event(Context& ctx, const std::any& event) override;
  void writability_changed(Context& ctx) override;
  /// I/O errors (a peer that resets) end the connection quietly; others travel on.
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void handler_removed(Context& ctx) override;

  /// Loop thread only. After a 101 Switching Protocols answer (which ends the codec's HTTP: nothing
  /// more is decoded) the bytes that arrived after the upgrade request, for the protocol that takes
  /// over; the codec is then removed. Empty before a 101, or when nothing followed the request.
  ByteBuf take_switched_input() noexcept;

  /// Loop thread only. The requests for which `test` is true and that have a body are handed over
  /// as soon as their head has arrived; their body follows as a stream (HttpRequest::body_stream(),
  /// read with a BodyReader) with the backpressure and rules of body_reader.h, and Limits::max_body
  /// does not apply to it. Without a test set, the codec asks the first Router in its pipeline with
  /// StreamFn routes (Router::streams_body), found at the first request with a body.
  void stream_bodies_where(StreamBodyTest test) {
    stream_body_test_ = std::move(test);
    stream_body_test_found_ = true;
  }

 private:
  friend class detail::BodySource;
  friend class detail::BodySink;
  // awaiting_switch: a request asked to upgrade and waits for its answer; what follows it is not
  // decoded meanwhile (after a 101 it is the next protocol's).
  // body_stream: a streamed request's body is arriving (body_in_), handed on as it comes.
  enum class State : std::uint8_t { head, body, closed, switched, awaiting_switch, body_stream };
  // An answer encoded before its turn: it leaves once every answer before it has.
  struct EarlyAnswer {
    std::uint64_t sequence;
    ByteBuf bytes;      ///< the head, and the body unless it is sent by reference
    ByteBuf body;       ///< a large owned body, sent without copying
    bool final;         ///< false: an interim answer (100 Continue) before the final one
    bool last;          ///< the connection ends after it
    FileRegion file;    ///< a file body, sent after `bytes`
    std::shared_ptr<detail::BodySink> stream;  ///< a streamed body, produced once its turn comes
  };

  void decode(Context& ctx);
  bool decode_head(Context& ctx);
  bool decode_body(Context& ctx);
  void emit_request(Context& ctx, HttpRequest& request, bool body_follows = false);
  [[gnu::noinline]] void find_stream_body_test(Context& ctx);
  // Streamed request bodies (body_reader.h).
  bool start_body_stream(Context& ctx, HttpRequest& request, bool send_continue);
  bool decode_body_stream(Context& ctx);
  void end_body_stream(std::exception_ptr error);
  void body_taken(detail::BodySource& source);
  void body_wanted(detail::BodySource& source, std::uint64_t sequence);
  void body_abandoned(detail::BodySource& source);
  void end_after_owed(Context& ctx);
  // Streamed response bodies (body_writer.h).
  [[gnu::noinline]] std::shared_ptr<detail::BodySink> encode_stream_head(Context& ctx, ByteBuf& out,
                                                                         HttpResponse& response, std::uint8_t flags);
  void start_stream(Context& ctx, std::shared_ptr<detail::BodySink> sink);
  bool stream_write(ByteBuf chunk);
  bool stream_writable() const noexcept;
  void stream_finish(std::string_view trailer_block);
  void stream_ended(detail::BodySink& sink, bool finished);
  // Counts an answer with `status` to the request with pending_ `flags` in the metrics: into the
  // batch of alike answers (answers_*), observed at the flush.
  void note_answer(Context& ctx, std::uint8_t flags, int status) noexcept;
  // Observes the answers batched so far, their duration ending now.
  void record_answers(Context& ctx) noexcept;
  void fail(Context& ctx, int status, std::string_view reason);
  void encode(Context& ctx, HttpResponse& response);
  void encode_out_of_turn(Context& ctx, HttpResponse& response);
  void switch_protocols(Context& ctx, HttpResponse& response);
  std::uint64_t answered_sequence(const HttpResponse& response) const noexcept;
  void put_error_body(Context& ctx, int status);
  void encode_into(Context& ctx, ByteBuf& out, ByteBuf* body_out, HttpResponse& response, std::uint8_t flags,
                   FileRegion* file_out = nullptr, std::shared_ptr<detail::BodySink>* stream_out = nullptr);
  void write_file(Context& ctx, FileRegion file);
  void hold_early(Context& ctx, HttpResponse& response, std::uint64_t sequence, std::uint8_t flags);
  void send_early_answers(Context& ctx);
  void answer_sent(Context& ctx, bool last);
  void write_interim_continue(Context& ctx);
  void finish_if_done(Context& ctx);
  void update_read_suspension(Context& ctx);
  void resume_decoding_later(Context& ctx);
  void resume_decoding();
  void want_deadline(Context& ctx, TimePoint at);
  void on_deadline(Context& ctx);
  void stop_deadline(Context& ctx);
  void end_input(Context& ctx);
  void shutdown_requested(Context& ctx);
  void make_last(Context& ctx, EarlyAnswer& early);

  // What each request touches first, the parsed head last: a server with many connections finds
  // most of them out of cache, so the hot fields share as few lines as they can.
  State state_ = State::head;
  bool close_after_flush_ = false;  // a final answer or an error ends the connection once flushed
  bool lending_ = false;  // a request emitted now borrows its head bytes from in_
  bool in_read_batch_ = false;  // from a read to its read_complete or a flush: batch_* hold
  bool input_ended_ = false;    // the client sent FIN
  bool finished_ = false;       // the connection's end has been started
  ReadSuspension reading_;      // held while the client is too far ahead of its answers
  ByteBuf in_;        // received bytes not yet decoded
  Limits limits_;
  ByteBuf out_;       // responses encoded since the last flush
  std::size_t out_size_hint_ = 2048;  // what the last flush wrote: the next batch's buffer size
  std::string_view batch_date_line_;  // one clock read per read batch, not one per response
  std::time_t batch_date_second_ = 0;
  TimePoint batch_now_{};             // the loop's clock at the batch's start
  // Keep-alive flags of the requests decoded but not answered yet, oldest first: inline for the
  // usual few (no heap line of its own per request), on the heap for a client that pipelines deeply.
  InlineRing<std::uint8_t, 16> pending_;
  // Metrics: answers counted, not yet observed, alike in status and pending_ flags
  // (status << 8 | flags, the method class among them).
  // Their duration counts from the latest read (batch_now_): a request answered after a later read
  // counts from that read.
  int answers_kind_ = 0;
  std::uint32_t answers_ = 0;             // answers batched, not yet observed
  std::uint64_t front_sequence_ = 1;      // the sequence of pending_[0]
  std::uint64_t dispatching_ = 0;         // the request being handed to the pipeline now, if any
  // ---- colder: timers, early answers, the request whose body is arriving
  TimerId deadline_timer_ = 0;
  TimePoint deadline_at_{};
  TimePoint last_activity_{};             // the last read, or the last answer owed going out
  TimePoint request_started_{};           // first byte of a request still arriving; {}: none
  TimePoint unwritable_since_{};          // {}: writable
  int error_status_ = 0;                  // an error answer that waits for the answers owed
  std::vector<EarlyAnswer> early_;
  std::size_t early_bytes_ = 0;
  Context* resume_ctx_ = nullptr;  // the codec's context, for resume_decoding_
  LoopCallback resume_decoding_{[this] { resume_decoding(); }};
  detail::BodyDecoder body_decoder_;
  HttpRequest request_;  // a request whose body is still arriving
  // Streamed bodies: the request body arriving (State::body_stream) and the answer being produced.
  Context* ctx_ = nullptr;
  StreamBodyTest stream_body_test_;
  std::shared_ptr<detail::BodySource> body_in_;
  std::shared_ptr<detail::BodySink> body_out_;
  ReadSuspension body_reading_;  // held while the body's reader is kStreamBodyBufferBound behind
  std::uint64_t discarded_ = 0;  // of a body its reader let go of
  bool body_keep_alive_ = false;
  bool stream_body_test_found_ = false;  // looked for (or set): stream_body_test_ is final
};

}  // namespace weft::http
