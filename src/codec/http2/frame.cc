#include "frame.h"

namespace weft::http2::detail {

// The texts libnghttp2's nghttp2_strerror gives the same codes: logs and errors read as before.
const char* describe(int result) noexcept {
  switch (result) {
    case 0: return "Success";
    case Result::invalid_argument: return "Invalid argument";
    case Result::wrong_role: return "Protocol error";
    case Result::deferred: return "Data transfer deferred";
    case Result::stream_ids_exhausted: return "No more Stream ID available";
    case Result::no_new_streams: return "request HEADERS is not allowed";
    case Result::reset_stream: return "The user callback function failed due to the temporal error";
    case Result::end_session: return "The user callback function failed";
    case Result::bad_preface: return "Received bad client magic byte string";
    case Result::flooded: return "Flooding was detected in this HTTP/2 session, and it must be closed";
    case Result::too_many_continuations: return "Too many CONTINUATION frames following a HEADER frame";
    default: return "Unknown error code";
  }
}

}  // namespace weft::http2::detail
