#pragma once
/// @file
/// Errors of the TLS layer. Setting up a TlsContext throws TlsError (OpenSSL refused a PEM, a key,
/// a cipher list) or std::invalid_argument (a missing or contradictory setting); a connection's TLS
/// failures arrive as exception events: TlsHandshakeError while the handshake runs, TlsError after.

#include <string>

#include "weft/core/error.h"

namespace weft {

/// A TLS failure, with OpenSSL's reason where OpenSSL gave one.
class TlsError : public Error {
 public:
  /// `what` describes the failure; `reason` is OpenSSL's reason string (may be empty).
  TlsError(const std::string& what, std::string reason);
  /// OpenSSL's reason (e.g. "certificate verify failed", "wrong version number"); may be empty.
  const std::string& reason() const noexcept { return reason_; }

 protected:
  /// Tag: the message is given whole (a derived error composes its own).
  struct WholeMessage {};
  /// An error with the complete `message` and OpenSSL's `reason`.
  TlsError(WholeMessage, const std::string& message, const std::string& reason);

 private:
  std::string reason_;
};

/// The handshake failed: a certificate was refused, the peer sent an alert or bytes that are not
/// TLS, the connection closed before the handshake finished, or the handshake timed out. The channel
/// is closed after it is fired.
class TlsHandshakeError : public TlsError {
 public:
  /// How the handshake ended.
  enum class Cause {
    protocol,      ///< OpenSSL refused the exchange (an alert, garbage, no common protocol)
    certificate,   ///< the peer's certificate did not verify (see verify_error())
    closed,        ///< the connection ended before the handshake finished
    timeout,       ///< the handshake did not finish within TlsHandlerOptions::handshake_timeout
  };
  /// A failure of `cause`; `verify_error` is X509's description of a certificate failure, if any.
  TlsHandshakeError(Cause cause, std::string reason, std::string verify_error = {});
  /// How the handshake ended.
  Cause cause() const noexcept { return cause_; }
  /// X509's description of why the peer's certificate was refused ("certificate has expired",
  /// "hostname mismatch", "self-signed certificate", ...); empty unless cause() is certificate.
  const std::string& verify_error() const noexcept { return verify_error_; }

 private:
  Cause cause_;
  std::string verify_error_;
};

/// Thread-safe. The name of `cause` ("protocol", "certificate", "closed", "timeout").
const char* to_string(TlsHandshakeError::Cause cause) noexcept;

}  // namespace weft
