#include "weft/codec/tls/tls_handler.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "kernel_tls.h"
#include "openssl_errors.h"
#include "tls_bio.h"
#include "tls_callbacks.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/channel.h"
#include "weft/channel/events.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/tls/kernel_tls_port.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/core/log.h"
#include "weft/metrics/tls_metrics.h"

namespace weft {

namespace {

// Why a failed handshake closes its connection (CloseReason).
CloseReason close_reason_of_handshake(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const TlsHandshakeError& e) {
    switch (e.cause()) {
      case TlsHandshakeError::Cause::timeout: return CloseReason::timeout;
      case TlsHandshakeError::Cause::closed: return CloseReason::peer_closed;
      default: return CloseReason::protocol_error;
    }
  } catch (...) {
  }
  return CloseReason::protocol_error;
}

constexpr std::size_t kMaxRecordPayload = 16384;
// The longest record body the protocol allows (TLS 1.2's TLSCiphertext: 2^14 + 2048).
constexpr std::uint32_t kMaxRecordLength = 16384 + 2048;
// A small record's payload: with TLS's and TCP/IP's headers it fits one 1500-byte segment (the
// figure of nginx's dynamic record size patch), so the peer can decrypt the first bytes early.
constexpr std::size_t kSmallRecordPayload = 1369;
// After the handshake, and after kIdleBeforeSmallRecords without writes, this many bytes go out in
// small records (about a TCP initial window), then records are full.
constexpr std::size_t kSmallRecordBytes = 16384;
constexpr Duration kIdleBeforeSmallRecords = std::chrono::seconds(1);
// Room per record beyond its payload: header, explicit nonce, tag (CBC suites: IV, MAC, padding).
constexpr std::size_t kRecordOverhead = 64;
// The output buffer OpenSSL starts a handshake flight in (it grows if the flight is larger).
constexpr std::size_t kHandshakeReserve = 4096;
// Decrypted bytes are passed on in buffers of at most this size, at least kMinPlaintextBuffer.
constexpr std::size_t kPlaintextBuffer = kMaxRecordPayload;
constexpr std::size_t kMinPlaintextBuffer = 2048;

// SSL_get_error() needs the thread's error queue empty before the call it explains. Clearing it
// costs ~700 instructions (it walks all 16 slots); looking costs ~40, and it is empty nearly always.
inline void clear_stale_errors() noexcept {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

int handler_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

bool is_ip_literal(const std::string& host) {
  in6_addr addr;
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 || inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

// OpenSSL's reasons for the failure of the last call, or a description of `ssl_error`.
std::string failure_reason(int ssl_error) {
  std::string reason = detail::take_openssl_errors();
  if (!reason.empty()) return reason;
  if (ssl_error == SSL_ERROR_SYSCALL) return "unexpected end of input";
  return "SSL error " + std::to_string(ssl_error);
}

}  // namespace

// OpenSSL's callbacks reach the handler's private state through this.
struct TlsHandlerAccess {
  static TlsHandler* of(SSL* ssl) noexcept { return static_cast<TlsHandler*>(SSL_get_ex_data(ssl, handler_index())); }
  static void keep_sni_context(TlsHandler& h, TlsContextPtr context) noexcept { h.sni_context_ = std::move(context); }
  static const std::string& session_key(const TlsHandler& h) noexcept { return h.session_key_; }
  // Keeps a copy of `session` for the handler's peer (see tls_on_new_session).
  static void store_copy(const TlsHandler& h, const SSL_SESSION* session) noexcept {
    SSL_SESSION* copy = SSL_SESSION_dup(session);
    if (copy == nullptr) return;  // out of memory: the next connection makes a full handshake
    try {
      h.context_->store_session(h.session_key_, copy);
    } catch (...) {
      SSL_SESSION_free(copy);
    }
  }
  static void key_log(TlsHandler& h, const char* line) noexcept {
    if (h.kernel_handoff_) h.kernel_handoff_->on_key_log(line, h.io_.out.readable_bytes());
  }
};

// ---- OpenSSL callbacks --------------------------------------------------------------------------

// The cache keeps a copy, never the connection's own session: an SSL_SESSION shared by connections on
// two loops is read by one (OpenSSL copies it when a ticket arrives) while the other may drop the last
// reference, ordered only by OpenSSL's reference count, which the thread sanitizer cannot see. A copy
// taken from the cache by one connection only (TlsContext::take_session) is shared by nobody; RFC 8446
// (appendix C.4) asks clients not to use a ticket twice anyway.
int detail::tls_on_new_session(SSL* ssl, SSL_SESSION* session) {
  TlsHandler* handler = TlsHandlerAccess::of(ssl);
  if (handler != nullptr && !TlsHandlerAccess::session_key(*handler).empty()) {
    TlsHandlerAccess::store_copy(*handler, session);
  }
  return 0;  // OpenSSL frees its own reference
}

int detail::tls_on_alpn_select(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                               unsigned int in_length, void* arg) {
  const auto* context = static_cast<const TlsContext*>(arg);
  for (const std::string& mine : context->application_protocols()) {  // the server's preference first
    for (unsigned i = 0; i < in_length;) {
      const unsigned length = in[i];
      if (i + 1 + length > in_length) break;
      if (length == mine.size() && std::memcmp(in + i + 1, mine.data(), length) == 0) {
        *out = in + i + 1;
        *out_length = static_cast<unsigned char>(length);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + length;
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;  // no_application_protocol (RFC 7301, 3.2)
}

int detail::tls_on_server_name(SSL* ssl, int*, void* arg) {
  const auto* context = static_cast<const TlsContext*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return SSL_TLSEXT_ERR_NOACK;
  TlsContextPtr chosen;
  try {
    chosen = context->context_for_server_name(name);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "TLS: the server name resolver failed for '{}': {}", name, e.what());
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  if (!chosen || chosen.get() == context) return SSL_TLSEXT_ERR_OK;
  if (SSL_set_SSL_CTX(ssl, chosen->native_handle()) == nullptr) return SSL_TLSEXT_ERR_ALERT_FATAL;
  // SSL_set_SSL_CTX takes the certificate; the verification settings are the connection's own.
  SSL_set_verify(ssl, SSL_CTX_get_verify_mode(chosen->native_handle()), nullptr);
  SSL_set_options(ssl, SSL_CTX_get_options(chosen->native_handle()));
  if (TlsHandler* handler = TlsHandlerAccess::of(ssl)) TlsHandlerAccess::keep_sni_context(*handler, std::move(chosen));
  return SSL_TLSEXT_ERR_OK;
}

void detail::tls_on_key_log(const SSL* ssl, const char* line) {
  if (TlsHandler* handler = TlsHandlerAccess::of(const_cast<SSL*>(ssl))) TlsHandlerAccess::key_log(*handler, line);
}

void detail::TlsRecordTracker::track(const std::uint8_t* bytes, std::size_t n) noexcept {
  while (n > 0) {
    if (body_left_ > 0) {
      const std::size_t k = std::min<std::size_t>(n, body_left_);
      body_left_ -= static_cast<std::uint32_t>(k);
      partial_ = body_left_ == 0 ? 0 : partial_ + k;
      completed_ = completed_ || body_left_ == 0;
      bytes += k;
      n -= k;
      continue;
    }
    header_[header_seen_++] = *bytes++;
    --n;
    ++partial_;
    if (header_seen_ == sizeof header_) {
      header_seen_ = 0;
      body_left_ = static_cast<std::uint32_t>(header_[3]) << 8 | header_[4];
      if (body_left_ == 0) partial_ = 0;
      // An empty record is whole; one longer than TLS allows is for OpenSSL to refuse at once.
      completed_ = completed_ || body_left_ == 0 || body_left_ > kMaxRecordLength;
    }
  }
}

// ---- TlsHandler ---------------------------------------------------------------------------------

TlsHandler::TlsHandler(TlsContextPtr context, TlsHandlerOptions options)
    : context_(std::move(context)), options_(std::move(options)) {
  if (!context_) throw std::invalid_argument("TlsHandler: no TlsContext");
}

TlsHandler::TlsHandler(TlsContextPtr context, std::string server_name)
    : TlsHandler(std::move(context), TlsHandlerOptions{.server_name = std::move(server_name)}) {}

TlsHandler::~TlsHandler() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIO too
}

std::size_t TlsHandler::buffered_bytes() const noexcept {
  return std::max(records_.partial_bytes(), io_.in.readable_bytes()) + pending_bytes_;
}

void TlsHandler::handler_added(Context& ctx) {
  if (ctx.channel().is_active()) start(ctx);
}

void TlsHandler::handler_removed(Context& ctx) {
  stop_timers(ctx);
  drop_pending_writes(ctx);
  if (!is_handshake_done()) handshake_.fail(TlsError("TLS handler removed before the handshake was done", {}));
}

void TlsHandler::channel_active(Context& ctx) {
  ctx.fire_channel_active();
  if (!ctx.is_removed()) start(ctx);
}

void TlsHandler::channel_inactive(Context& ctx) {
  input_ended(ctx);
  stop_timers(ctx);
  if (state_ != State::failed) state_ = State::closed;
  ctx.fire_channel_inactive();
}

void TlsHandler::user_event(Context& ctx, const std::any& event) {
  if (std::any_cast<ChannelInputShutdownEvent>(&event) != nullptr) {
    if (input_closed_) return;  // the handlers above heard of the end at the close_notify
    input_ended(ctx);
  } else if (std::any_cast<ChannelOutputClosingEvent>(&event) != nullptr) {
    send_close_notify(ctx);  // before the FIN that follows (a graceful close, or the peer's FIN)
  }
  ctx.fire_user_event(event);
}

void TlsHandler::start(Context& ctx) {
  if (state_ != State::idle) return;
  state_ = State::handshaking;
  io_.allocator = &ctx.allocator();
  io_.out_reserve = kHandshakeReserve;
  ERR_clear_error();
  ssl_ = SSL_new(context_->native_handle());
  BIO* bio = ssl_ != nullptr ? detail::new_tls_bio(io_) : nullptr;
  if (bio == nullptr) {
    fail_handshake(ctx, std::make_exception_ptr(TlsHandshakeError(TlsHandshakeError::Cause::protocol,
                                                                  failure_reason(SSL_ERROR_SSL))));
    return;
  }
  SSL_set_bio(ssl_, bio, bio);
  SSL_set_ex_data(ssl_, handler_index(), this);
  if (context_->kernel_tls() && !detail::kernel_tls_port().ulp_missing()) {
    kernel_handoff_ = std::make_unique<detail::KernelTlsHandoff>(context_->is_server());
    kernel_ = Kernel::pending;
  }
  if (options_.handshake_timeout > Duration::zero()) {
    handshake_timer_ = ctx.loop().schedule(options_.handshake_timeout, [this, &ctx] {
      handshake_timer_ = 0;
      if (state_ != State::handshaking) return;
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.handshake_timeout).count();
      fail_handshake(ctx, std::make_exception_ptr(TlsHandshakeError(
                              TlsHandshakeError::Cause::timeout, "no handshake within " + std::to_string(ms) + " ms")));
    });
  }
  if (context_->is_server()) {
    SSL_set_accept_state(ssl_);
  } else {
    configure_client(ctx);
    SSL_set_connect_state(ssl_);
  }
  continue_handshake(ctx);  // a client sends its ClientHello; a server waits for one
  if (state_ == State::handshaking && !ctx.channel().config().auto_read) ctx.read();
}

void TlsHandler::configure_client(Context& ctx) {
  server_name_ = options_.server_name;
  std::string name = options_.server_name;
  bool ip = is_ip_literal(name);
  if (name.empty()) {
    name = ctx.channel().remote_address().host();
    ip = true;
  }
  if (!ip) SSL_set_tlsext_host_name(ssl_, name.c_str());
  if (options_.verify_hostname && context_->verify() != TlsVerify::none && !name.empty()) {
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
    } else {
      SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      SSL_set1_host(ssl_, name.c_str());
    }
  }
  if (context_->resumes_sessions()) {
    session_key_ = name + "|" + ctx.channel().remote_address().to_string();
    if (SSL_SESSION* session = context_->take_session(session_key_)) {
      SSL_set_session(ssl_, session);  // takes its own reference
      SSL_SESSION_free(session);
    }
  }
}

void TlsHandler::continue_handshake(Context& ctx) {
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    handshake_succeeded(ctx);
    return;
  }
  const int error = SSL_get_error(ssl_, rc);
  if (error == SSL_ERROR_WANT_READ) {
    if (io_.out.is_readable()) {
      pass_on_output(ctx);
      ctx.flush();
    }
    return;
  }
  std::string reason = failure_reason(error);
  const long verify = SSL_get_verify_result(ssl_);
  std::exception_ptr failure;
  if (context_->verify() != TlsVerify::none && verify != X509_V_OK) {
    failure = std::make_exception_ptr(TlsHandshakeError(TlsHandshakeError::Cause::certificate, std::move(reason),
                                                        X509_verify_cert_error_string(verify)));
  } else {
    failure = std::make_exception_ptr(TlsHandshakeError(TlsHandshakeError::Cause::protocol, std::move(reason)));
  }
  fail_handshake(ctx, std::move(failure));
}

void TlsHandler::handshake_succeeded(Context& ctx) {
  state_ = State::established;
  stop_timers(ctx);
  const unsigned char* alpn = nullptr;
  unsigned alpn_length = 0;
  SSL_get0_alpn_selected(ssl_, &alpn, &alpn_length);
  if (alpn != nullptr) protocol_.assign(reinterpret_cast<const char*>(alpn), alpn_length);
  if (context_->is_server()) {
    const char* sni = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
    if (sni != nullptr) server_name_ = sni;
  }
  resumed_ = SSL_session_reused(ssl_) == 1;
  metrics::record_tls_handshake(context_->is_server(),
                                resumed_ ? metrics::TlsHandshakeResult::resumed : metrics::TlsHandshakeResult::full);
  // A resumed TLS 1.2 session gets no new one (no callback): keep it for the next connection.
  if (resumed_ && !session_key_.empty() && SSL_version(ssl_) < TLS1_3_VERSION) {
    TlsHandlerAccess::store_copy(*this, SSL_get0_session(ssl_));
  }
  small_records_left_ = kSmallRecordBytes;
  last_write_ = ctx.loop().now();
  if (kernel_ == Kernel::pending && !detail::KernelTlsHandoff::suits(ssl_)) {
    give_up_kernel_tls("the kernel does not take this version or cipher");
  }

  // The handshake's last flight, then what was written while it ran, in one flush.
  std::vector<ByteBuf> pending = std::move(pending_writes_);
  pending_writes_.clear();
  for (ByteBuf& plaintext : pending) {
    if (state_ != State::established) break;
    encrypt(ctx, plaintext);
  }
  pass_on_output(ctx);
  drop_pending_writes(ctx);  // now in the write queue as ciphertext
  ctx.flush();
  if (kernel_ == Kernel::pending) try_kernel_handoff(ctx);  // before any handler writes again
  handshake_.set_value();

  TlsHandshakeCompleted event;
  event.protocol = protocol_;
  event.server_name = server_name_;
  event.version = SSL_get_version(ssl_);
  event.cipher = SSL_get_cipher_name(ssl_);
  event.resumed = resumed_;
  ctx.fire_user_event(std::any(std::move(event)));
}

void TlsHandler::fail_handshake(Context& ctx, std::exception_ptr error) {
  if (state_ == State::failed || state_ == State::closed) return;
  state_ = State::failed;
  metrics::record_tls_handshake(context_->is_server(), metrics::TlsHandshakeResult::failed);
  ctx.channel().note_close_reason(close_reason_of_handshake(error));
  stop_timers(ctx);
  drop_pending_writes(ctx);
  // OpenSSL's alert, if it made one, goes out before the handlers hear of the failure (one that
  // closes the channel then does not drop it).
  if (ctx.channel().is_open()) {
    pass_on_output(ctx);
    ctx.flush();
  }
  handshake_.set_error(error);
  TlsHandshakeCompleted event;
  event.error = error;
  event.server_name = server_name_;
  ctx.fire_user_event(std::any(std::move(event)));
  ctx.fire_exception(error);
  close_when_written(ctx);
}

void TlsHandler::channel_read(Context& ctx, ByteBuf&& ciphertext) {
  if (state_ == State::idle) start(ctx);
  if (state_ == State::failed || state_ == State::closed || ssl_ == nullptr || input_closed_) return;  // dropped
  records_.track(ciphertext.read_ptr(), ciphertext.readable_bytes());
  detail::cumulate(*io_.allocator, io_.in, std::move(ciphertext));
  // OpenSSL decrypts nothing of a part of a record: it waits in io_.in until the record is whole.
  // The handshake sees every byte, so that what is not TLS at all is refused from its first bytes.
  const bool whole_record = records_.take_completed();
  if (state_ == State::handshaking) continue_handshake(ctx);
  if (whole_record && (state_ == State::established || state_ == State::closing)) decrypt(ctx);
  if (!io_.in.is_readable()) io_.in.release();  // the transport's buffer goes back at once
}

void TlsHandler::decrypt(Context& ctx) {
  ByteBuf plaintext;
  for (;;) {
    if ((state_ != State::established && state_ != State::closing) || !ctx.channel().is_open()) return;
    if (!plaintext.is_writable()) {  // none yet, or full
      if (plaintext.is_readable()) ctx.fire_read(std::move(plaintext));
      plaintext = io_.allocator->buffer(std::clamp(io_.in.readable_bytes(), kMinPlaintextBuffer, kPlaintextBuffer));
      continue;  // the state may have changed under fire_read
    }
    clear_stale_errors();
    std::size_t n = 0;
    const int rc = SSL_read_ex(ssl_, plaintext.write_ptr(), plaintext.writable_bytes(), &n);
    if (rc == 1) {
      plaintext.advance_writer(n);
      // Nothing left to decrypt (OpenSSL reads one record at a time from io_.in): spare the call
      // that would only say so.
      if (!io_.in.is_readable() && SSL_pending(ssl_) == 0) {
        ctx.fire_read(std::move(plaintext));
        pass_on_answers(ctx);
        return;
      }
      continue;
    }
    const int error = SSL_get_error(ssl_, rc);
    if (plaintext.is_readable()) ctx.fire_read(std::move(plaintext));
    if (error == SSL_ERROR_WANT_READ) {
      pass_on_answers(ctx);
      return;
    }
    if (error == SSL_ERROR_ZERO_RETURN) {
      received_close_notify(ctx);
      return;
    }
    fail_connection(ctx, "TLS record refused");
    return;
  }
}

void TlsHandler::pass_on_answers(Context& ctx) {
  if (kernel_ != Kernel::off && !kernel_allows_answers(ctx)) return;
  if (io_.out.is_readable() && ctx.channel().is_open()) {
    pass_on_output(ctx);
    ctx.flush();
  }
}

void TlsHandler::fail_connection(Context& ctx, const char* what) {
  fail_connection(ctx, what, failure_reason(SSL_ERROR_SSL));
}

void TlsHandler::fail_connection(Context& ctx, const char* what, std::string reason) {
  if (state_ == State::failed || state_ == State::closed) return;
  state_ = State::failed;
  ctx.channel().note_close_reason(CloseReason::protocol_error);
  if (ctx.channel().is_open()) {
    pass_on_output(ctx);  // OpenSSL's alert first, as in fail_handshake
    ctx.flush();
  }
  ctx.fire_exception(std::make_exception_ptr(TlsError(what, std::move(reason))));
  close_when_written(ctx);
}

void TlsHandler::write(Context& ctx, ByteBuf&& plaintext) {
  switch (state_) {
    case State::idle:
    case State::handshaking:
      if (!plaintext.is_readable()) return;
      pending_bytes_ += plaintext.readable_bytes();
      ctx.channel().hold_write_bytes(plaintext.readable_bytes());  // counts toward writability
      pending_writes_.push_back(std::move(plaintext));
      return;
    case State::established:
      if (kernel_ != Kernel::off && write_through_kernel(ctx, plaintext)) return;
      encrypt(ctx, plaintext);
      pass_on_output(ctx);
      return;
    default:
      log(LogLevel::debug, "TLS: {} bytes written after the connection's end were dropped", plaintext.readable_bytes());
      return;
  }
}

void TlsHandler::encrypt(Context& ctx, ByteBuf& plaintext) {
  std::size_t left = plaintext.readable_bytes();
  if (left == 0) return;
  const TimePoint now = ctx.loop().now();
  if (now - last_write_ >= kIdleBeforeSmallRecords) small_records_left_ = kSmallRecordBytes;
  last_write_ = now;
  io_.out_reserve = io_.out.readable_bytes() + left + (left / kSmallRecordPayload + 1) * kRecordOverhead;
  while (left > 0) {
    const std::size_t record = small_records_left_ > 0 ? kSmallRecordPayload : kMaxRecordPayload;
    clear_stale_errors();
    std::size_t written = 0;
    if (SSL_write_ex(ssl_, plaintext.read_ptr(), std::min(left, record), &written) != 1) {
      fail_connection(ctx, "TLS write failed");
      return;
    }
    plaintext.skip_bytes(written);
    left -= written;
    small_records_left_ -= std::min(small_records_left_, written);
  }
}

void TlsHandler::pass_on_output(Context& ctx) {
  if (!io_.out.is_readable()) return;
  if (kernel_ != Kernel::off) {
    if (kernel_ == Kernel::on) {  // OpenSSL's records would carry stale sequence numbers: never sent
      io_.out.release();
      return;
    }
    kernel_handoff_->count_records(io_.out.read_ptr(), io_.out.readable_bytes(), SSL_version(ssl_));
  }
  ByteBuf out = std::move(io_.out);
  io_.out_reserve = kHandshakeReserve;
  ctx.write(std::move(out));
}

void TlsHandler::flush(Context& ctx) {
  pass_on_output(ctx);
  ctx.flush();
  if (kernel_ == Kernel::pending) try_kernel_handoff(ctx);
}

void TlsHandler::channel_read_complete(Context& ctx) {
  if (state_ == State::handshaking || state_ == State::idle) {
    if (!ctx.channel().config().auto_read) ctx.read();  // the handshake needs the peer's answer
    return;
  }
  if (kernel_ == Kernel::pending) try_kernel_handoff(ctx);
  ctx.fire_read_complete();
}

void TlsHandler::close(Context& ctx, Promise<void> promise) {
  if (close_started_ || state_ != State::established) {
    if (kernel_close_notify_owed_) send_kernel_close_notify(ctx);  // the write queue has emptied
    stop_timers(ctx);
    ctx.close(std::move(promise));
    return;
  }
  send_close_notify(ctx);
  ctx.channel().close_future().add_listener([promise](const Future<void>&) mutable { promise.set_value(); });
  close_when_written(ctx);
}

void TlsHandler::send_close_notify(Context& ctx) {
  if (state_ != State::established) return;
  state_ = State::closing;
  if (kernel_ == Kernel::on) {
    kernel_close_notify_owed_ = true;
    send_kernel_close_notify(ctx);
    return;
  }
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
  pass_on_output(ctx);
  ctx.flush();
}

void TlsHandler::received_close_notify(Context& ctx) {
  if (input_closed_) return;
  input_closed_ = true;
  io_.in.release();  // anything after the close_notify is not read
  ctx.fire_user_event(std::any(TlsCloseNotifyReceived{}));
  if (!ctx.channel().is_open()) return;
  if (state_ == State::established && ctx.channel().config().allow_half_closure) {
    // The end of the input, as the peer's FIN: the answers owed still go out before ours.
    ctx.fire_user_event(std::any(ChannelInputShutdownEvent{}));
    return;
  }
  send_close_notify(ctx);
  close_when_written(ctx);
}

void TlsHandler::close_when_written(Context& ctx) {
  if (close_started_) return;
  close_started_ = true;
  Channel& channel = ctx.channel();
  if (!channel.is_open()) return;
  if (channel.pending_write_bytes() == 0 || options_.close_timeout <= Duration::zero()) {
    ctx.close();
    return;
  }
  close_timer_ = ctx.loop().schedule(options_.close_timeout, [this, &ctx] {
    close_timer_ = 0;
    ctx.close();
  });
  channel.close_after_flush();  // comes back through close() once the bytes are written
}

void TlsHandler::input_ended(Context& ctx) {
  if (state_ == State::handshaking) {
    fail_handshake(ctx, std::make_exception_ptr(TlsHandshakeError(TlsHandshakeError::Cause::closed,
                                                                  "the connection ended during the handshake")));
    return;
  }
  if ((state_ == State::established || state_ == State::closing) && records_.partial_bytes() > 0) {
    const std::size_t partial = records_.partial_bytes();
    records_ = {};
    ctx.fire_exception(std::make_exception_ptr(TlsError(
        "the input ended inside a TLS record (" + std::to_string(partial) + " bytes of it received)", "truncated record")));
  }
}

void TlsHandler::drop_pending_writes(Context& ctx) {
  pending_writes_.clear();
  if (pending_bytes_ == 0) return;
  ctx.channel().release_held_write_bytes(std::exchange(pending_bytes_, 0));
}

void TlsHandler::stop_timers(Context& ctx) noexcept {
  if (handshake_timer_ != 0) ctx.loop().cancel(handshake_timer_);
  if (close_timer_ != 0) ctx.loop().cancel(close_timer_);
  handshake_timer_ = close_timer_ = 0;
}

// ---- kTLS -----------------------------------------------------------------------------------------

void TlsHandler::try_kernel_handoff(Context& ctx) {
  // A key update the peer asked for goes out with the next SSL_write, under a new key: the secret
  // kept for the kernel would be stale.
  if (SSL_get_key_update_type(ssl_) != SSL_KEY_UPDATE_NONE) {
    give_up_kernel_tls("the peer asked for a key update before the handoff");
    return;
  }
  Channel& channel = ctx.channel();
  // Everything OpenSSL made must have left the write queue: the kernel sends what comes after it.
  if (state_ != State::established || io_.out.is_readable() || channel.pending_write_bytes() != 0 ||
      SSL_want_write(ssl_) || !channel.is_open()) {
    return;
  }
  std::unique_ptr<detail::KernelTlsHandoff> handoff = std::move(kernel_handoff_);
  kernel_ = Kernel::off;
  detail::KernelTlsCryptoInfo info;
  std::string why;
  if (!handoff->make_crypto_info(ssl_, info, why)) {
    log(LogLevel::debug, "TLS: kernel TLS not used for this connection: {}", why);
    return;
  }
  detail::KernelTlsPort& port = detail::kernel_tls_port();
  const std::string what = std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
  const bool handed_off = port.try_attach(channel) && port.try_start_tx(channel, info, what);
  OPENSSL_cleanse(&info, sizeof info);
  if (handed_off) kernel_ = Kernel::on;
}

bool TlsHandler::kernel_allows_answers(Context& ctx) {
  // OpenSSL owes the peer an answer: an alert it has made, or the KeyUpdate a peer's asked for
  // (OpenSSL 3 sends that with its next write).
  if (!io_.out.is_readable() && SSL_get_key_update_type(ssl_) == SSL_KEY_UPDATE_NONE) return true;
  if (!ctx.channel().is_open()) return false;
  if (kernel_ == Kernel::pending) {
    give_up_kernel_tls("OpenSSL answers the peer after the handshake");
    return true;
  }
  // Handed off: OpenSSL's key and sequence numbers are not the kernel's, so it may not write.
  fail_connection(ctx,
                  "kernel TLS cannot answer the peer's key update (or renegotiation) request: the kernel makes "
                  "the records this side sends",
                  "post-handshake answer under kernel TLS");
  return false;
}

void TlsHandler::give_up_kernel_tls(const char* why) {
  log(LogLevel::debug, "TLS: kernel TLS not used for this connection: {}", why);
  kernel_ = Kernel::off;
  kernel_handoff_.reset();
}

bool TlsHandler::write_through_kernel(Context& ctx, ByteBuf& plaintext) {
  if (kernel_ == Kernel::pending) try_kernel_handoff(ctx);
  if (kernel_ != Kernel::on) return false;
  if (plaintext.is_readable()) ctx.write(std::move(plaintext));
  return true;
}

void TlsHandler::send_kernel_close_notify(Context& ctx) {
  Channel& channel = ctx.channel();
  if (!kernel_close_notify_owed_ || !channel.is_open() || channel.pending_write_bytes() != 0) return;
  kernel_close_notify_owed_ = false;
  static constexpr std::uint8_t kAlert = 21;
  static constexpr std::uint8_t kCloseNotify[] = {1, 0};  // warning, close_notify
  if (const int error = detail::kernel_tls_port().send_record(channel, kAlert, kCloseNotify, sizeof kCloseNotify)) {
    log(LogLevel::debug, "TLS: kernel TLS: close_notify could not be sent ({})", std::strerror(error));
  }
}

}  // namespace weft
