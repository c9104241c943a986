#pragma once
/// @file
/// The switch for weft's own instrumentation: the HTTP servers' request metrics and the server
/// connection counts (http_server_metrics.h, connection_metrics.h). On by default; off, they
/// record nothing (the series already made stay, with what they counted).

#include <atomic>

namespace weft::metrics {

namespace detail {
inline std::atomic<bool> g_instrumentation_enabled{true};
}  // namespace detail

/// Whether weft's own instrumentation records. Thread-safe.
inline bool instrumentation_enabled() noexcept {
  return detail::g_instrumentation_enabled.load(std::memory_order_relaxed);
}
/// Turns weft's own instrumentation on or off for the process. Thread-safe; best called before serving.
inline void set_instrumentation_enabled(bool on) noexcept {
  detail::g_instrumentation_enabled.store(on, std::memory_order_relaxed);
}

}  // namespace weft::metrics
