#pragma once
/// @file
/// What the HTTP/2 server codec reports, into Registry::global():
///   weft_http2_server_streams_opened_total                     counter: streams a client opened
///   weft_http2_server_streams_closed_total                     counter
///   weft_http2_server_streams_active                           gauge: opened - closed, when scraped
///   weft_http2_server_rst_stream_total{direction, code}        counter: RST_STREAM `sent` or `received`
///   weft_http2_server_goaway_sent_total{code}                  counter
///   weft_http2_server_glitch_budget_exceeded_total             counter: connections ended for it
/// `code` is the error code's name (NO_ERROR .. HTTP_1_1_REQUIRED, RFC 9113 7), OTHER for codes
/// outside it. The stream counts are batched by the codec and written at its flushes; the rest are
/// one write each, on frames a healthy connection rarely sends.

#include <array>
#include <cstdint>
#include <string_view>

#include "weft/metrics/instrumentation.h"
#include "weft/metrics/registry.h"

namespace weft::metrics {

/// Which way an HTTP/2 frame went.
enum class Http2Direction : std::uint8_t {
  sent,      ///< the server sent it
  received,  ///< the client sent it
};

/// The name of HTTP/2 error code `code` (RFC 9113 7): "NO_ERROR" .. "HTTP_1_1_REQUIRED", else "OTHER".
/// Thread-safe.
std::string_view http2_error_code_name(std::uint32_t code) noexcept;

namespace detail {

inline constexpr std::size_t kHttp2ErrorCodes = 15;  // 0x0 .. 0xd, then OTHER
// A thread's handles, made together on the thread's first use (constant-initialised).
struct Http2ServerHandles {
  bool made = false;
  Counter streams_opened;
  Counter streams_closed;
  std::array<std::array<Counter, kHttp2ErrorCodes>, 2> rst_stream{};
  std::array<Counter, kHttp2ErrorCodes> goaway_sent{};
  Counter glitch_budget_exceeded;
};
inline thread_local constinit Http2ServerHandles t_http2_server_handles{};
// Fills `handles`; false without memory (nothing is counted then).
bool make_http2_server_handles(Http2ServerHandles& handles) noexcept;

// This thread's handles, or nullptr while instrumentation is off (or without memory for them).
inline Http2ServerHandles* http2_server_handles() noexcept {
  if (!instrumentation_enabled()) return nullptr;
  Http2ServerHandles& h = t_http2_server_handles;
  if (!h.made && !make_http2_server_handles(h)) [[unlikely]]
    return nullptr;
  return &h;
}
inline std::size_t http2_code_index(std::uint32_t code) noexcept {
  return code < kHttp2ErrorCodes - 1 ? code : kHttp2ErrorCodes - 1;
}

}  // namespace detail

/// Counts `opened` streams opened and `closed` closed (a codec's batch). Thread-safe: the calling
/// thread's cells; nothing while instrumentation is off.
inline void record_http2_server_streams(std::uint32_t opened, std::uint32_t closed) noexcept {
  if (detail::Http2ServerHandles* h = detail::http2_server_handles()) {
    if (opened != 0) h->streams_opened.inc(opened);
    if (closed != 0) h->streams_closed.inc(closed);
  }
}
/// Counts one RST_STREAM with `code`, sent or received. Thread-safe, as record_http2_server_streams.
inline void record_http2_server_rst_stream(Http2Direction direction, std::uint32_t code) noexcept {
  if (detail::Http2ServerHandles* h = detail::http2_server_handles()) {
    h->rst_stream[static_cast<std::size_t>(direction)][detail::http2_code_index(code)].inc();
  }
}
/// Counts one GOAWAY sent with `code`. Thread-safe, as record_http2_server_streams.
inline void record_http2_server_goaway_sent(std::uint32_t code) noexcept {
  if (detail::Http2ServerHandles* h = detail::http2_server_handles())
    h->goaway_sent[detail::http2_code_index(code)].inc();
}
/// Counts one connection ended for spending its glitch budget. Thread-safe, as record_http2_server_streams.
inline void record_http2_server_glitch_budget_exceeded() noexcept {
  if (detail::Http2ServerHandles* h = detail::http2_server_handles()) h->glitch_budget_exceeded.inc();
}

}  // namespace weft::metrics
