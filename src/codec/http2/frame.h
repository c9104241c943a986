#pragma once
// The vocabulary of weft's HTTP/2 engine (session.h, the server and client codecs): frame types,
// flags, error codes and settings as RFC 9113 names them, the results a Session and its hooks
// return, a header field to encode, and a body's source. Private to the library.
//
// Each set is an unscoped enum inside a struct: `FrameType::headers` is scoped like an enum class
// but converts to the integer the wire carries (the frame's type byte, the RST_STREAM or GOAWAY
// code), which is what the engine stores and compares. The results keep the values and texts
// (describe) that libnghttp2 gave them, so that logs read as before.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace weft::http2::detail {

// Frame types (RFC 9113 section 6).
struct FrameType {
  enum : std::uint8_t {
    data = 0x0,
    headers = 0x1,
    priority = 0x2,
    rst_stream = 0x3,
    settings = 0x4,
    push_promise = 0x5,
    ping = 0x6,
    goaway = 0x7,
    window_update = 0x8,
    continuation = 0x9,
  };
};

// Frame flags (RFC 9113 section 6); what a bit means depends on the frame's type.
struct FrameFlag {
  enum : std::uint8_t {
    end_stream = 0x1,   // DATA, HEADERS
    ack = 0x1,          // SETTINGS, PING
    end_headers = 0x4,  // HEADERS, CONTINUATION
    padded = 0x8,       // DATA, HEADERS
    priority = 0x20,    // HEADERS
  };
};

// Error codes of RST_STREAM and GOAWAY (RFC 9113 section 7).
struct ErrorCode {
  enum {
    no_error = 0x0,
    protocol_error = 0x1,
    internal_error = 0x2,
    flow_control_error = 0x3,
    settings_timeout = 0x4,
    stream_closed = 0x5,
    frame_size_error = 0x6,
    refused_stream = 0x7,
    cancel = 0x8,
    compression_error = 0x9,
    connect_error = 0xa,
    enhance_your_calm = 0xb,
    inadequate_security = 0xc,
    http_1_1_required = 0xd,
  };
};

// SETTINGS identifiers (RFC 9113 6.5.2; enable_connect_protocol: RFC 8441).
struct SettingId {
  enum : std::uint16_t {
    header_table_size = 0x1,
    enable_push = 0x2,
    max_concurrent_streams = 0x3,
    initial_window_size = 0x4,
    max_frame_size = 0x5,
    max_header_list_size = 0x6,
    enable_connect_protocol = 0x8,
  };
};

// What a Session's functions return besides 0 (or a count), and what its hooks return to it.
struct Result {
  enum {
    invalid_argument = -501,        // a submit_* or upgrade() the stream's state does not allow
    wrong_role = -505,              // submit_request on the server's side
    deferred = -508,                // a data source has nothing yet: resume_data() asks it again
    stream_ids_exhausted = -509,    // submit_request: every odd stream id is used
    no_new_streams = -516,          // submit_request after a GOAWAY (either way)
    reset_stream = -521,            // a hook: reset this stream (INTERNAL_ERROR), go on
    end_session = -902,             // a hook: stop; recv() / send() return it and the session ends
    bad_preface = -903,             // the client's 24-byte preface is wrong
    flooded = -904,                 // a peer that does not read while acknowledgements pile up
    too_many_continuations = -905,  // a header block in too many CONTINUATION frames
  };
};

// A result's text, for logs and errors ("Success" for 0).
const char* describe(int result) noexcept;

// A header field to encode (HEADERS): views of bytes that outlive the submit_* call.
struct HeaderField {
  enum : std::uint8_t {
    indexed = 0x0,   // may enter HPACK's dynamic table
    no_index = 0x1,  // a literal never indexed (RFC 7541 6.2.3)
  };
  std::uint8_t* name;
  std::uint8_t* value;
  std::size_t namelen;
  std::size_t valuelen;
  std::uint8_t flags;
};

// What a data source's read() sets in *flags.
struct DataFlag {
  enum : std::uint32_t {
    eof = 0x1,            // the body ends with these bytes
    no_end_stream = 0x2,  // ... but trailers follow (submit_trailer): no END_STREAM on DATA
    no_copy = 0x4,        // the payload is written by SessionHooks::send_data
  };
};

// A body's source (a response's, or a client's request's): read(stream_id, max, flags, ptr) returns
// the bytes the next DATA frame may carry (0..max), Result::deferred to wait for resume_data,
// Result::reset_stream, or Result::end_session; it sets DataFlag::eof at the end (and
// DataFlag::no_end_stream when trailers follow). The payload itself is written by
// SessionHooks::send_data.
struct DataSource {
  void* ptr = nullptr;
  ssize_t (*read)(std::int32_t stream_id, std::size_t max, std::uint32_t* flags, void* ptr) = nullptr;
};

}  // namespace weft::http2::detail
