#pragma once
/// @file
/// User events the TlsHandler fires (see Handler::user_event) towards the handlers after it.

#include <exception>
#include <string>

namespace weft {

/// The handshake ended, fired once per connection: on success before any decrypted byte is passed
/// on, so a handler may complete the pipeline from the negotiated protocol (see
/// ApplicationProtocolNegotiationHandler); on failure before the TlsHandshakeError exception event,
/// and the channel closes.
struct TlsHandshakeCompleted {
  /// The failure (a TlsHandshakeError), or null on success.
  std::exception_ptr error;
  /// The ALPN protocol agreed on ("h2", "http/1.1"); empty when none was.
  std::string protocol;
  /// The host name the client sent (SNI) on a server; the name asked for on a client; may be empty.
  std::string server_name;
  /// The protocol version ("TLSv1.3", "TLSv1.2").
  std::string version;
  /// The cipher suite (OpenSSL's name, e.g. "TLS_AES_128_GCM_SHA256").
  std::string cipher;
  /// Whether an earlier session was resumed (no full handshake).
  bool resumed = false;

  /// Whether the handshake succeeded.
  bool success() const noexcept { return error == nullptr; }
};

/// The peer sent close_notify: it will send nothing more. The TlsHandler answers with its own and
/// closes the channel once that has been written (bounded), as a peer's FIN closes a channel that
/// does not allow half-closure.
struct TlsCloseNotifyReceived {};

}  // namespace weft
