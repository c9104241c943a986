#include "weft/metrics/http2_metrics.h"

namespace weft::metrics {

namespace {
constexpr std::array<std::string_view, detail::kHttp2ErrorCodes> kCodeNames = {"NO_ERROR",
                                                                               "PROTOCOL_ERROR",
                                                                               "INTERNAL_ERROR",
                                                                               "FLOW_CONTROL_ERROR",
                                                                               "SETTINGS_TIMEOUT",
                                                                               "STREAM_CLOSED",
                                                                               "FRAME_SIZE_ERROR",
                                                                               "REFUSED_STREAM",
                                                                               "CANCEL",
                                                                               "COMPRESSION_ERROR",
                                                                               "CONNECT_ERROR",
                                                                               "ENHANCE_YOUR_CALM",
                                                                               "INADEQUATE_SECURITY",
                                                                               "HTTP_1_1_REQUIRED",
                                                                               "OTHER"};
constexpr std::array<std::string_view, 2> kDirections = {"sent", "received"};
}  // namespace

std::string_view http2_error_code_name(std::uint32_t code) noexcept {
  return kCodeNames[detail::http2_code_index(code)];
}

namespace detail {

bool make_http2_server_handles(Http2ServerHandles& h) noexcept {
  try {
    Registry& registry = Registry::global();
    Http2ServerHandles made;
    made.streams_opened =
        registry.counter("weft_http2_server_streams_opened", "HTTP/2 streams clients opened on servers.").counter();
    made.streams_closed =
        registry.counter("weft_http2_server_streams_closed", "HTTP/2 server streams closed.").counter();
    const Counter opened = made.streams_opened, closed = made.streams_closed;
    // Made again by each thread: setting the same function again changes nothing.
    registry.gauge("weft_http2_server_streams_active", "HTTP/2 server streams open now.")
        .set_function({}, [opened, closed] {
          // Closed first: a stream counted open and closed between the two reads never shows negative.
          const std::uint64_t closed_now = closed.value();
          return static_cast<double>(opened.value() - closed_now);
        });
    Family& rst =
        registry.counter("weft_http2_server_rst_stream",
                         "HTTP/2 RST_STREAM frames servers sent or received, by error code.", {"direction", "code"});
    Family& goaway = registry.counter("weft_http2_server_goaway_sent",
                                      "HTTP/2 GOAWAY frames servers sent, by error code.", {"code"});
    for (std::size_t c = 0; c < kHttp2ErrorCodes; ++c) {
      for (std::size_t d = 0; d < 2; ++d) made.rst_stream[d][c] = rst.counter({kDirections[d], kCodeNames[c]});
      made.goaway_sent[c] = goaway.counter({kCodeNames[c]});
    }
    made.glitch_budget_exceeded =
        registry
            .counter("weft_http2_server_glitch_budget_exceeded",
                     "HTTP/2 server connections ended (GOAWAY ENHANCE_YOUR_CALM) for spending their glitch budget.")
            .counter();
    made.made = true;
    h = made;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace detail
}  // namespace weft::metrics
