#pragma once
/// @file
/// What the TLS handler reports, into Registry::global():
///   weft_tls_handshakes_total{side, result}  counter: `side` server or client; `result` full,
///                                            resumed (a session resumed) or failed
/// One write to the thread's own cell per handshake.

#include <array>
#include <cstdint>

#include "weft/metrics/instrumentation.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// How a TLS handshake ended.
enum class TlsHandshakeResult : std::uint8_t {
  full,     ///< completed, with a new session
  resumed,  ///< completed, resuming an earlier session
  failed,   ///< failed (a protocol or certificate error, a timeout, the peer left)
};

namespace detail {
// A thread's handles, [server?][result], made on the thread's first handshake (constant-initialised).
struct TlsHandles {
  bool made = false;
  std::array<std::array<Counter, 3>, 2> handshakes{};
};
inline thread_local constinit TlsHandles t_tls_handles{};
// Fills `handles`; false without memory (nothing is counted then).
bool make_tls_handles(TlsHandles& handles) noexcept;
}  // namespace detail

/// Counts one handshake of a TLS server (`server`) or client. Thread-safe: the calling thread's
/// cell; nothing while instrumentation is off.
inline void record_tls_handshake(bool server, TlsHandshakeResult result) noexcept {
  if (!instrumentation_enabled()) return;
  detail::TlsHandles& h = detail::t_tls_handles;
  if (!h.made && !detail::make_tls_handles(h)) [[unlikely]]
    return;
  h.handshakes[server ? 1 : 0][static_cast<std::size_t>(result)].inc();
}

}  // namespace weft::metrics
