#include "weft/codec/tls/tls_error.h"

#include <utility>

namespace weft {

namespace {
std::string describe(const std::string& what, const std::string& reason) {
  return reason.empty() ? what : what + ": " + reason;
}

std::string handshake_message(TlsHandshakeError::Cause cause, const std::string& reason,
                              const std::string& verify_error) {
  std::string m = std::string("TLS handshake failed (") + to_string(cause) + ")";
  if (!reason.empty()) m += ": " + reason;
  if (!verify_error.empty()) m += " (" + verify_error + ")";
  return m;
}
}  // namespace

TlsError::TlsError(const std::string& what, std::string reason)
    : Error(describe(what, reason)), reason_(std::move(reason)) {}

TlsError::TlsError(WholeMessage, const std::string& message, const std::string& reason)
    : Error(message), reason_(reason) {}

TlsHandshakeError::TlsHandshakeError(Cause cause, std::string reason, std::string verify_error)
    : TlsError(WholeMessage{}, handshake_message(cause, reason, verify_error), reason),
      cause_(cause),
      verify_error_(std::move(verify_error)) {}

const char* to_string(TlsHandshakeError::Cause cause) noexcept {
  switch (cause) {
    case TlsHandshakeError::Cause::protocol:
      return "protocol";
    case TlsHandshakeError::Cause::certificate:
      return "certificate";
    case TlsHandshakeError::Cause::closed:
      return "closed";
    case TlsHandshakeError::Cause::timeout:
      return "timeout";
  }
  return "?";
}

}  // namespace weft
