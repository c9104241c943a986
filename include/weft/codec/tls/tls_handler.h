#pragma once
/// @file
/// TlsHandler: TLS for any pipeline, server or client, on OpenSSL. Put it first (right after the
/// head): ciphertext below it, plaintext above it, ByteBuf both ways.
///
///   ch.pipeline().add_last("tls", std::make_shared<weft::TlsHandler>(server_context));
///   ch.pipeline().add_last("http", std::make_shared<weft::http::ServerCodec>());
///
/// - Handshake: starts when the channel is active (a client sends its ClientHello then). When it
///   ends the handler fires TlsHandshakeCompleted (tls_events.h) -- on success before any decrypted
///   byte is passed on, so the pipeline can be completed from the negotiated protocol. A failure (a
///   refused certificate, an alert, bytes that are not TLS, the connection ending, the timeout) is
///   fired as TlsHandshakeCompleted, then as a TlsHandshakeError exception event (with OpenSSL's
///   reason), and the channel closes once OpenSSL's alert has been written (bounded).
/// - Writes: plaintext written before the handshake completes is queued and sent after it (it
///   counts toward the channel's writability meanwhile: Channel::hold_write_bytes); after
///   it, each write is encrypted at once and passed on as one buffer of records from the channel's
///   allocator, so the channel's write queue -- and its writability -- holds the ciphertext: a peer
///   that stops reading makes the channel unwritable exactly as without TLS, and the handler holds
///   no plaintext. Records are small (about one TCP segment) for the first 16 KiB after the
///   handshake and after a second without writes, so the first bytes can be decrypted early, and
///   full (16 KiB) for bulk transfers.
/// - Reads: every record that arrives whole is decrypted and passed on in the same call; only an
///   incomplete record waits for its rest. A record that does not decrypt is fired as a TlsError
///   and the channel closes; input that ends in the middle of a record is fired as a TlsError.
/// - Close: close() sends close_notify and closes once it has been written (at most
///   TlsHandlerOptions::close_timeout later). A graceful close (Channel::close_gracefully) and the
///   close after the peer's FIN send close_notify before the FIN (ChannelOutputClosingEvent).
/// - A peer's close_notify ends its input, as a FIN does: TlsCloseNotifyReceived is fired, then,
///   where the channel allows half-closure (the HTTP server codecs turn it on),
///   ChannelInputShutdownEvent, so the handlers above still answer what they owe and then end the
///   output (close_notify goes out then); the TCP FIN that follows raises no second event. Without
///   half-closure it is answered at once, as close() does. What arrives after it is dropped.
/// - Client: SNI and certificate verification for TlsHandlerOptions::server_name (or, without a
///   name, for the remote IP address); the session a server gave for the same name and port is
///   offered again. Renegotiation is refused both ways.
///
/// - kTLS (TlsContextBuilder::kernel_tls, off by default): once the handshake has succeeded and
///   everything OpenSSL wrote has left the write queue, the keys of the sending direction go to the
///   kernel, and writes are passed on as plaintext for the kernel to make the records (no record
///   sizes of ours then); reading stays with OpenSSL. From then on OpenSSL may not write: a peer's
///   request for a key update ends the connection with a TlsError, and close_notify is sent through
///   the kernel. Where the kernel does not offer it, or for another cipher, records are made here.
///
/// Loop thread only, like every handler, unless a method says otherwise. One handler per channel.

#include <any>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/context.h"
#include "weft/channel/handler.h"
#include "weft/codec/tls/tls_context.h"
#include "weft/core/clock.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

struct ssl_st;  // OpenSSL's SSL
struct bio_st;  // OpenSSL's BIO

namespace weft {

class ByteBufAllocator;

/// Per-connection settings of a TlsHandler.
struct TlsHandlerOptions {
  /// The handshake must end within this long after the channel is active, else it fails with
  /// TlsHandshakeError (cause timeout) and the channel closes. Zero or less: no limit.
  Duration handshake_timeout = std::chrono::seconds(10);
  /// The longest a close waits for the close_notify (or a handshake failure's alert) to be
  /// written before the channel closes anyway.
  Duration close_timeout = std::chrono::seconds(3);
  /// Client: the server's host name, sent as SNI and checked against its certificate. Empty: no
  /// SNI, and the certificate is checked against the remote IP address. An IP literal is checked
  /// as an address and not sent as SNI.
  std::string server_name;
  /// Client: check the server's certificate names server_name (or the remote address). On by
  /// default; only turned off together with TlsVerify::none makes sense.
  bool verify_hostname = true;
};

namespace detail {
class KernelTlsHandoff;

// The buffers OpenSSL reads ciphertext from and writes it to (through a BIO of weft's own).
struct TlsIo {
  ByteBuf in;                             // received ciphertext OpenSSL has not taken yet
  ByteBuf out;                            // ciphertext OpenSSL made, not passed on yet
  ByteBufAllocator* allocator = nullptr;  // the channel's
  std::size_t out_reserve = 0;            // capacity to give `out` when OpenSSL starts filling it
};

// Follows the record framing of the received bytes: to tell a clean end of input from a cut
// record, and to ask OpenSSL to decrypt only when a record is whole.
class TlsRecordTracker {
 public:
  void track(const std::uint8_t* bytes, std::size_t n) noexcept;
  // Bytes of an incomplete record received so far (0: the input ends between records).
  std::size_t partial_bytes() const noexcept { return partial_; }
  // Whether a record was completed (or a header no record can have was seen) since the last call.
  bool take_completed() noexcept {
    const bool any = completed_;
    completed_ = false;
    return any;
  }

 private:
  std::uint8_t header_[5] = {};
  std::uint8_t header_seen_ = 0;
  bool completed_ = false;
  std::uint32_t body_left_ = 0;
  std::size_t partial_ = 0;
};
}  // namespace detail

/// TLS for a pipeline: ciphertext ByteBuf below, plaintext ByteBuf above (see the file's
/// description). Loop thread only unless a method says otherwise; one channel per handler.
class TlsHandler final : public DuplexHandler<ByteBuf, ByteBuf, ByteBuf, ByteBuf> {
 public:
  /// A handler on `context` (a server or a client context) with `options`. Thread-safe.
  explicit TlsHandler(TlsContextPtr context, TlsHandlerOptions options = {});
  /// A client handler for `server_name` (SNI and the name checked), other options default.
  TlsHandler(TlsContextPtr context, std::string server_name);
  /// Frees the connection's OpenSSL state.
  ~TlsHandler() override;

  /// Starts the handshake when the channel is active already.
  void handler_added(Context& ctx) override;
  /// Stops the timers; the connection's TLS state is freed with the handler.
  void handler_removed(Context& ctx) override;
  /// Starts the handshake (a client sends its ClientHello), then passes the event on.
  void channel_active(Context& ctx) override;
  /// Fails a handshake still running; reports a record cut by the end of input; passes it on.
  void channel_inactive(Context& ctx) override;
  /// Ciphertext: runs the handshake, passes on what decrypts.
  void channel_read(Context& ctx, ByteBuf&& ciphertext) override;
  /// Passed on once the handshake is done; during it, asks for more input when auto-read is off.
  void channel_read_complete(Context& ctx) override;
  /// The end of the peer's input (half-closure) ends a running handshake as channel_inactive does
  /// (not passed on after a close_notify, which ended the input already); ChannelOutputClosingEvent
  /// sends close_notify.
  void user_event(Context& ctx, const std::any& event) override;
  /// Plaintext: encrypted and passed on at once, or queued until the handshake is done.
  void write(Context& ctx, ByteBuf&& plaintext) override;
  /// Passes the flush on.
  void flush(Context& ctx) override;
  /// Sends close_notify and closes once it has been written (bounded by close_timeout).
  void close(Context& ctx, Promise<void> promise) override;

  /// Thread-safe. Completes when the handshake succeeds; fails with its TlsHandshakeError.
  Future<void> handshake_future() const { return handshake_.future(); }
  /// Whether the handshake has succeeded.
  bool is_handshake_done() const noexcept { return state_ == State::established || state_ == State::closing; }
  /// The ALPN protocol agreed on; empty before the handshake or when none was.
  const std::string& application_protocol() const noexcept { return protocol_; }
  /// Server: the host name the client sent (SNI); client: the name asked for. May be empty.
  const std::string& server_name() const noexcept { return server_name_; }
  /// Whether the handshake resumed an earlier session.
  bool session_resumed() const noexcept { return resumed_; }
  /// Bytes the handler holds: ciphertext of an incomplete record, and plaintext written before the
  /// handshake was done. Bounded by one record after the handshake.
  std::size_t buffered_bytes() const noexcept;
  /// OpenSSL's SSL object once the handshake has started (null before): for what weft does not offer.
  ssl_st* native_handle() const noexcept { return ssl_; }
  /// Loop thread only. Whether the kernel makes the records this connection sends (kTLS, see
  /// TlsContextBuilder::kernel_tls): false before the handoff and where it did not happen.
  bool is_kernel_tls() const noexcept { return kernel_ == Kernel::on; }

 private:
  enum class State : std::uint8_t { idle, handshaking, established, closing, failed, closed };
  // kTLS of the sending direction: not asked for (or given up), waiting for its moment, handed off.
  enum class Kernel : std::uint8_t { off, pending, on };

  void start(Context& ctx);
  void configure_client(Context& ctx);
  void continue_handshake(Context& ctx);
  void handshake_succeeded(Context& ctx);
  void fail_handshake(Context& ctx, std::exception_ptr error);
  void decrypt(Context& ctx);
  void encrypt(Context& ctx, ByteBuf& plaintext);
  void pass_on_output(Context& ctx);
  // After decrypting: what OpenSSL made while reading (an alert, a key update's answer) goes out,
  // unless kernel TLS forbids it (then the connection ends).
  void pass_on_answers(Context& ctx);
  void received_close_notify(Context& ctx);
  void send_close_notify(Context& ctx);
  void close_when_written(Context& ctx);
  void input_ended(Context& ctx);
  void stop_timers(Context& ctx) noexcept;
  // Forgets the plaintext queued during the handshake (sent, or never to be) and its writability count.
  void drop_pending_writes(Context& ctx);
  void fail_connection(Context& ctx, const char* what);
  void fail_connection(Context& ctx, const char* what, std::string reason);
  // kTLS (kernel_tls.h): hands the sending direction to the kernel if this is the moment.
  void try_kernel_handoff(Context& ctx);
  void give_up_kernel_tls(const char* why);
  // After a read: false when OpenSSL owes the peer an answer it may not send under kTLS (the
  // connection is failed then).
  bool kernel_allows_answers(Context& ctx);
  // Whether `plaintext` went to the kernel (after trying the handoff); false: encrypt it here.
  bool write_through_kernel(Context& ctx, ByteBuf& plaintext);
  // Sends the close_notify owed through the kernel once the write queue is empty.
  void send_kernel_close_notify(Context& ctx);

  // The hot part first: what every read and write touches.
  State state_ = State::idle;
  Kernel kernel_ = Kernel::off;
  bool close_started_ = false;  // close_when_written has run: the next close() goes through
  bool resumed_ = false;
  bool input_closed_ = false;  // the peer's close_notify arrived: nothing after it is read
  ssl_st* ssl_ = nullptr;
  detail::TlsIo io_;
  detail::TlsRecordTracker records_;
  std::size_t small_records_left_ = 0;  // bytes still to send in small records
  TimePoint last_write_{};
  // ---- colder
  TlsContextPtr context_;
  TlsContextPtr sni_context_;  // the context SNI chose, kept alive for the connection
  TlsHandlerOptions options_;
  std::vector<ByteBuf> pending_writes_;  // plaintext written before the handshake was done
  std::size_t pending_bytes_ = 0;
  TimerId handshake_timer_ = 0;
  TimerId close_timer_ = 0;
  Promise<void> handshake_;
  std::string protocol_;
  std::string server_name_;
  std::string session_key_;  // client: the peer, for the context's session cache
  std::unique_ptr<detail::KernelTlsHandoff> kernel_handoff_;  // while kernel_ is pending
  bool kernel_close_notify_owed_ = false;

  friend struct TlsHandlerAccess;  // OpenSSL's callbacks (tls_handler.cc)
};

}  // namespace weft
