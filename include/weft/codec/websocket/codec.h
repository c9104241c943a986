#pragma once
/// @file
/// ws::Codec: the WebSocket connection (RFC 6455), server or client side (Codec::Role), as a
/// pipeline handler. Bytes in, whole messages out (ws::Message); messages in, frames out.
///
/// Inbound: frames are decoded as they arrive (frame.h); text and binary messages are assembled
/// and handed on whole, a single-frame message without a copy (a fragmented one is gathered into
/// one buffer). Pings are answered with a pong carrying the same payload; pongs are dropped. Text is
/// validated as UTF-8 as its bytes arrive, so invalid text fails the connection (1007) at the first
/// bad byte, even in the middle of a fragment. A frame RFC 6455 forbids fails it with 1002.
///
/// Limits (Options), each checked before the bytes it would hold are buffered: a message's size
/// (max_message_size, 1 MiB; across its fragments, also while it is unfinished) -> 1009; fragments
/// per message (max_fragments) -> 1009. A frame is buffered until whole, so what one connection
/// holds is bounded by max_message_size.
///
/// permessage-deflate (RFC 7692, deflate.h), when the handshake agreed it: RSV1 on a message's first
/// frame marks it compressed (RSV1 elsewhere fails with 1002). Each frame of a compressed message is
/// inflated once whole, into one buffer bounded by max_message_size (more fails with 1009 before it
/// is stored: a zip bomb costs the bound), and text is validated as it is inflated (1007); invalid
/// DEFLATE data fails with 1007. The compressed bytes of a message may exceed max_message_size by an
/// eighth plus 64 bytes (incompressible data grows a little). What a connection holds is then one
/// compressed frame plus the inflated message. Messages of at least min_message_size are sent
/// compressed, unless compression would not shrink them.
///
/// Streamed fragments (Options::stream_fragments): each frame of a text or binary message is handed
/// on as it is whole (a Message::fragment: is_first(), is_last()), a compressed one once inflated,
/// instead of the message gathered. max_message_size then bounds each frame (inflated, too), not the
/// message, so a message of any length passes in the memory of one frame; max_fragments still
/// bounds frames per message. Text is validated across fragments as before (a fragment may end
/// inside a UTF-8 character; the message may not). Outbound, a message written as fragments leaves
/// as they come, uncompressed.
///
/// Close: a peer's close is checked (a code in the valid set, a UTF-8 reason; 1002 or 1007 otherwise),
/// echoed, and the connection ends (the server closes TCP, gracefully: FIN, then unread input is
/// drained for close_timeout; a client waits for the server to close TCP, RFC 6455 7.1.1, and closes
/// it itself after close_timeout). Writing Message::close() sends a close and waits close_timeout for the
/// peer's; data written after it is dropped. A failure sends its close code and ends the connection.
/// The next handler gets one close message, last, whatever the way (see Message).
///
/// Backpressure: while the channel is not writable the codec stops reading (a peer that sends and
/// never reads is not read either, so the pongs it asks for are bounded); the application waits on
/// writability too (Connection::write does). One that writes regardless (a broadcast to a slow
/// consumer) meets max_queued_bytes: the connection fails with 1008. A close or a pong is never
/// dropped.
///
/// A client's codec (Role::client) masks every frame it sends with a fresh key from OpenSSL's random
/// generator (drawn 64 bytes at a time, frame.h), so its messages are copied into the frame as they
/// are masked; a masked frame from the server fails the connection with 1002.
///
/// Idle keepalive (Options::ping_interval, off by default): after ping_interval without a byte
/// received, a ping is sent; when nothing at all (its pong or any frame) arrives within ping_timeout
/// after it, the connection is cut: the application gets a close with 1006 (the peer is not
/// answering, so no close handshake is tried) and the TCP connection is closed. While the channel's
/// reading is suspended (backpressure), silence is not counted: answers would be waiting unread.
///
/// Loop thread only; one per channel.

#include <cstdint>
#include <optional>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/websocket/deflate.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/message.h"
#include "weft/codec/websocket/utf8.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/loop_callback.h"

namespace weft::ws {

/// The limits and timeouts of a WebSocket connection (see codec.h's description).
struct Options {
  std::size_t max_message_size = 1 << 20;            ///< a message's payload, all fragments together (1009 over it)
  std::size_t max_fragments = 1024;                  ///< frames per message (1009 over it)
  Duration close_timeout = std::chrono::seconds(5);  ///< waiting for the peer's close, or its FIN after ours
  /// Idle keepalive: a ping after this long without a byte received; zero (the default): never. Off
  /// by default because a ping costs both sides a frame, and an application whose peers come and go
  /// behind NATs or proxies knows the idle time these drop connections at.
  Duration ping_interval = Duration::zero();
  /// How long after a keepalive ping an answer (its pong or any frame) may take; then the connection
  /// is cut and the application gets a close with 1006.
  Duration ping_timeout = std::chrono::seconds(10);
  /// Bytes the connection may have queued for sending (not yet taken by the socket) when the
  /// application writes a message: a message that would pass it fails the connection with 1008, as a
  /// peer that does not read must not hold the server's memory. Pongs and a close are never refused.
  std::size_t max_queued_bytes = 16 << 20;
  /// Hand on each frame of a message as it arrives (Message::fragment), not the whole message; see
  /// the file's description.
  bool stream_fragments = false;
};

/// The WebSocket connection as a pipeline handler (see the file's description): ByteBuf in, Message
/// out; Message in, ByteBuf out. Loop thread only; one per channel.
class Codec final : public Handler {
 public:
  /// The most flushes that wait for a read batch's end before one goes through (flush()).
  static constexpr std::uint32_t kFlushesPerWrite = 64;
  /// Which side of the connection the codec speaks for: a client masks what it sends and refuses
  /// masked frames, a server the reverse.
  enum class Role : std::uint8_t { server, client };

  /// A codec for `role` with `options`; `received` holds bytes that arrived before it was added
  /// (after the handshake), decoded once feed() is called; `deflate`: permessage-deflate as agreed
  /// (PerMessageDeflate::server_config or client_config), nullopt: none.
  Codec(Role role, Options options, ByteBuf received, std::optional<PerMessageDeflate::Config> deflate) noexcept;
  /// A server's codec with `options`; `received` holds bytes that arrived before it was added
  /// (after the upgrade request), decoded once feed() is called.
  explicit Codec(Options options = {}, ByteBuf received = {}) noexcept;
  /// As Codec(Options, ByteBuf), with permessage-deflate as agreed (`deflate`: see deflate.h).
  Codec(Options options, ByteBuf received, PerMessageDeflate::Config deflate) noexcept;
  ~Codec() override;

  MessageTypes message_types() const noexcept override {
    return {&typeid(ByteBuf), &typeid(Message), &typeid(Message), &typeid(ByteBuf)};
  }
  void handler_added(Context& ctx) override;
  void handler_removed(Context& ctx) override;
  void read_message(Context& ctx, MessageRef message) override;
  void write_message(Context& ctx, MessageRef message) override;
  void channel_read_complete(Context& ctx) override;
  /// A flush asked while a read batch is being decoded (an echo's write_and_flush in on_message)
  /// waits for the batch's end, so that the answers to a batch of messages leave in one write
  /// (Netty's FlushConsolidationHandler); at most kFlushesPerWrite wait. Other flushes go at once.
  void flush(Context& ctx) override;
  void channel_inactive(Context& ctx) override;
  void writability_changed(Context& ctx) override;
  /// The peer's FIN without a close (ChannelInputShutdownEvent) ends the WebSocket with 1006.
  void user_event(Context& ctx, const std::any& event) override;
  /// A close from the application (a coroutine that returned, Channel::close_after_flush) while
  /// the WebSocket is open sends a close (1000) first; once a close was sent, a close waits for the
  /// handshake's end (at most close_timeout, twice) instead of cutting it short.
  void close(Context& ctx, Promise<void> promise) override;
  /// I/O errors (a peer that resets) end the connection quietly; others travel on.
  void exception_caught(Context& ctx, std::exception_ptr error) override;

  /// Loop thread only. Decodes the bytes given to the constructor (once the handlers after the
  /// codec are in place, so that what they hold reaches them).
  void feed(Context& ctx);

 private:
  enum class State : std::uint8_t {
    open,     ///< messages flow both ways
    closing,  ///< our close was sent; waiting for the peer's (or close_timeout)
    closed,   ///< the WebSocket has ended; what arrives is dropped
  };

  void decode(Context& ctx);
  bool on_header(Context& ctx);
  bool on_fresh(Context& ctx);
  bool on_frame(Context& ctx, ByteBuf payload);
  bool on_data(Context& ctx, ByteBuf payload);
  bool on_fragment(Context& ctx, ByteBuf payload, bool fin);
  bool inflate(Context& ctx, std::string_view compressed, bool last);
  bool on_peer_close(Context& ctx, const ByteBuf& payload);
  void fail(Context& ctx, std::uint16_t code, std::string_view reason);
  void send_control(Context& ctx, Opcode opcode, std::string_view payload);
  void send_close(Context& ctx, std::uint16_t code, std::string_view reason);
  void end(Context& ctx, std::uint16_t code, std::string_view reason);
  void encode(Context& ctx, Message& message);
  void start_close_timer(Context& ctx);
  void fail_overflowed();
  void stop_close_timer(Context& ctx);
  void update_read_suspension(Context& ctx);
  void schedule_ping_timer(Context& ctx, Duration after);
  void on_ping_timer(Context& ctx);
  void cut_for_silence(Context& ctx);

  Options options_;
  Role role_;
  State state_ = State::open;
  bool in_message_ = false;        // a fragmented message has begun and not ended
  bool message_text_ = false;      // the message being received is text
  bool message_compressed_ = false;  // the message being received is compressed (RSV1)
  bool frame_is_data_ = false;     // the frame being received is text, binary or a continuation
  bool wrote_ = false;             // frames written since the last flush (pongs, a close, deferred flushes)
  bool in_read_batch_ = false;     // from a read to its read_complete: flushes wait for it
  std::uint32_t deferred_flushes_ = 0;  // flushes waiting for the batch's end
  bool ended_ = false;             // the close message has gone to the next handler
  bool graceful_ = false;          // the connection's graceful end has started (end())
  std::size_t fragments_ = 0;      // frames of the message being received
  std::size_t message_bytes_ = 0;  // its payload so far, counting the frame being received
  std::size_t compressed_limit_;   // a compressed message's bytes on the wire, at most
  ByteBuf in_;                     // received bytes not yet decoded (a frame still arriving)
  ByteBuf assembled_;              // the fragments of an unfinished message, gathered (or inflated)
  std::optional<PerMessageDeflate> deflate_;  // permessage-deflate, when agreed
  FrameDecoder decoder_;
  FrameEncoder encoder_;
  Utf8Validator utf8_;
  bool sending_fragments_ = false;   // a message written as fragments has begun and not ended
  Context* overflow_ctx_ = nullptr;  // set once a write passed max_queued_bytes
  LoopCallback fail_overflowed_{[this] { fail_overflowed(); }};
  ReadSuspension reading_;  // held while the channel is not writable
  TimerId close_timer_ = 0;
  TimerId ping_timer_ = 0;
  bool ping_outstanding_ = false;  // a keepalive ping was sent and nothing has arrived since
  TimePoint last_received_{};      // when bytes last arrived (the loop's turn time)
};

}  // namespace weft::ws
