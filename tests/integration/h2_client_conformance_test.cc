// RFC 9113 (§§3-8) and RFC 7541 conformance of weft's HTTP/2 client (client::Http2Connection), against a
// scripted server (support/h2_scripted_server.h): one row per rule a client must enforce on a
// server, or a thing it must accept, named by its section. Each row scripts the server's answer to
// one request (GET /, stream 1) and says what the client must do:
//
//   accepted             the request succeeds; the client resets nothing, sends no GOAWAY, and the
//                        connection serves a next request;
//   stream_error         the request fails with ClientStreamError(code), the client sends
//                        RST_STREAM(code) on its stream, and the connection serves a next request;
//   connection_error     the request fails, the client sends GOAWAY(code) and closes the connection;
//   stream_or_connection_error
//                        either of the two (where the RFC lets this stream error be a connection error);
//   reset_by_server      the server resets the stream: the request fails with ClientStreamError(code),
//                        the client sends no RST_STREAM back (RFC 9113 5.4.2), and the connection goes on;
//   closed_stream_error  the request succeeds; a frame that follows on its closed stream gets
//                        RST_STREAM(code) or GOAWAY(code).
//
// WEFT_H2_CLIENT_PATIENCE_S shortens the waits (30 s) that only a hang reaches.
// The accepted and stream_error rows run again on streamed requests (Http2Connection::open). Apart from the
// table: the client's own obligations (its preface, SETTINGS_ENABLE_PUSH 0, ACKs of the server's
// SETTINGS, the server's concurrency limit and its flow-control windows). Everything runs on epoll,
// io_uring and blocking, over h2c and over TLS (h2 by ALPN), a server and a connection per row.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "support/h2_frames.h"
#include "support/h2_matrix.h"
#include "support/h2_scripted_server.h"
#include "support/sanitizers.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http2::client_conformance {
namespace {

using client::Http2Connection;
using test::ClientFrame;
using test::frame;
using test::literal;
using test::ScriptedH2Seen;
using test::setting;
using test::u32;

// How long a wait may take before the test fails instead of hanging: 30 s, or
// WEFT_H2_CLIENT_PATIENCE_S seconds (shorter to go through known gaps that hang quickly).
std::chrono::milliseconds patience() {
  static const std::chrono::milliseconds p = [] {
    const char* s = std::getenv("WEFT_H2_CLIENT_PATIENCE_S");
    const int seconds = s != nullptr ? std::atoi(s) : 0;
    return std::chrono::milliseconds(std::chrono::seconds(seconds > 0 ? seconds : 30));
  }();
  return p;
}

constexpr std::uint8_t kEH = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kES = NGHTTP2_FLAG_END_STREAM;
constexpr std::uint8_t kPadded = NGHTTP2_FLAG_PADDED;
constexpr std::uint8_t kPriority = NGHTTP2_FLAG_PRIORITY;

constexpr std::uint32_t PROTOCOL = NGHTTP2_PROTOCOL_ERROR, FLOW = NGHTTP2_FLOW_CONTROL_ERROR,
                        STREAM_CLOSED = NGHTTP2_STREAM_CLOSED, FRAME_SIZE = NGHTTP2_FRAME_SIZE_ERROR,
                        COMPRESSION = NGHTTP2_COMPRESSION_ERROR;

// ---- the server's frames -------------------------------------------------------------------------

std::string head(std::uint32_t id, std::string_view block, std::uint8_t flags = kEH | kES) {
  return frame(NGHTTP2_HEADERS, flags, id, block);
}
// ":status 200" (HPACK static index 8), with END_STREAM unless `flags` say otherwise.
std::string ok_head(std::uint32_t id, std::uint8_t flags = kEH | kES) { return head(id, "\x88", flags); }
std::string body(std::uint32_t id, std::string_view text, std::uint8_t flags = 0) {
  return frame(NGHTTP2_DATA, flags, id, text);
}
std::string rst_stream(std::uint32_t id, std::uint32_t code) { return frame(NGHTTP2_RST_STREAM, 0, id, u32(code)); }
std::string window(std::uint32_t id, std::uint32_t increment) {
  return frame(NGHTTP2_WINDOW_UPDATE, 0, id, u32(increment));
}
std::string one_setting(std::uint16_t id, std::uint32_t value) {
  return frame(NGHTTP2_SETTINGS, 0, 0, setting(id, value));
}
std::string ping(std::string_view payload, std::uint8_t flags = 0) { return frame(NGHTTP2_PING, flags, 0, payload); }
// ":status 200", then "hello" and END_STREAM: a whole response.
std::string hello(std::uint32_t id) { return ok_head(id, kEH) + body(id, "hello", kES); }

// An HPACK integer (RFC 7541 5.1) in a first byte `first` with a `prefix_bits`-bit prefix.
std::string hpack_int(std::uint8_t first, int prefix_bits, std::uint32_t value) {
  const std::uint32_t max = (1u << prefix_bits) - 1;
  std::string out;
  if (value < max) return std::string(1, static_cast<char>(first | value));
  out += static_cast<char>(first | max);
  for (value -= max; value >= 128; value >>= 7) out += static_cast<char>((value & 0x7f) | 0x80);
  out += static_cast<char>(value);
  return out;
}
// A literal field without indexing, new name, of any length.
std::string long_literal(std::string_view name, std::string_view value) {
  return std::string(1, '\0') + hpack_int(0, 7, static_cast<std::uint32_t>(name.size())) + std::string(name) +
         hpack_int(0, 7, static_cast<std::uint32_t>(value.size())) + std::string(value);
}
// A literal without indexing of ":status" (static name index 8) with `value`.
std::string status_literal(std::string_view value) {
  return "\x08" + hpack_int(0, 7, static_cast<std::uint32_t>(value.size())) + std::string(value);
}
// A literal without indexing of content-length (static name index 28).
std::string content_length(std::string_view value) {
  return hpack_int(0, 4, 28) + hpack_int(0, 7, static_cast<std::uint32_t>(value.size())) + std::string(value);
}
// A dynamic table size update (RFC 7541 6.3).
std::string table_size_update(std::uint32_t size) { return hpack_int(0x20, 5, size); }
// A literal without indexing, new name "x", whose value is the Huffman code `code` (RFC 7541 5.2).
std::string huffman_x(std::string_view code) {
  return std::string("\x00\x01x", 3) + static_cast<char>(0x80 | code.size()) + std::string(code);
}

// ---- the table ---------------------------------------------------------------------------------

enum class Outcome {
  accepted,
  stream_error,
  connection_error,
  stream_or_connection_error,
  reset_by_server,
  closed_stream_error,
};

struct ClientCase {
  const char* name;                                  // "section rule"
  std::function<std::string(std::uint32_t)> answer;  // the server's answer to the request on that stream
  Outcome outcome;
  std::uint32_t code = 0;  // the HTTP/2 error code of the outcome
  std::function<void(const http::HttpClientResponse&)> check_response = nullptr;  // accepted: (default: 200)
  std::function<void(const ScriptedH2Seen&)> check_seen = nullptr;  // more to assert on what the client sent
  std::function<std::string()> greeting = nullptr;                  // replaces the server's first SETTINGS
  std::function<std::string(const ClientFrame&)> react = nullptr;   // the server's answer to the client's frames
};

auto body_is(std::string expected) {
  return [expected](const http::HttpClientResponse& r) {
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body_view(), expected);
  };
}

std::vector<ClientCase> make_client_cases() {
  using O = Outcome;
  std::vector<ClientCase> c;
  // ---- §3.4, §4: the preface, frames, header blocks
  c.push_back({.name = "3.4 the server's first frame not SETTINGS",
               .answer = hello,
               .outcome = O::connection_error,
               .code = PROTOCOL,
               .greeting = [] { return ping("weftping") + frame(NGHTTP2_SETTINGS, 0, 0, ""); }});
  c.push_back(
      {.name = "4.1 frames of unknown types are ignored",
       .answer = [](std::uint32_t id) { return frame(0xfa, 0xff, 0, "abc") + frame(0xfb, 0, id, "xyz") + hello(id); },
       .outcome = O::accepted,
       .check_response = body_is("hello")});
  c.push_back({.name = "4.1 unknown flags are ignored",
               .answer =
                   [](std::uint32_t id) {
                     return head(id, "\x88", kEH | 0x40 | 0x80 | 0x10 | 0x02) + body(id, "hello", kES | 0xf0);
                   },
               .outcome = O::accepted,
               .check_response = body_is("hello")});
  c.push_back({.name = "4.1 the reserved bit of a stream id is ignored",
               .answer = [](std::uint32_t id) { return hello(id | 0x80000000u); },
               .outcome = O::accepted,
               .check_response = body_is("hello")});
  c.push_back({.name = "4.2 DATA over SETTINGS_MAX_FRAME_SIZE is FRAME_SIZE_ERROR",
               .answer = [](std::uint32_t id) { return ok_head(id, kEH) + body(id, std::string(16385, 'd'), kES); },
               .outcome = O::stream_or_connection_error,
               .code = FRAME_SIZE});
  c.push_back(
      {.name = "4.2 HEADERS over SETTINGS_MAX_FRAME_SIZE is a connection error FRAME_SIZE_ERROR",
       .answer = [](std::uint32_t id) { return head(id, "\x88" + long_literal("x-big", std::string(16400, 'v'))); },
       .outcome = O::connection_error,
       .code = FRAME_SIZE});
  c.push_back({.name = "4.3 a response split across CONTINUATION is one head",
               .answer =
                   [](std::uint32_t id) {
                     const std::string block = "\x88" + literal("x-a", "1") + literal("x-b", "2");
                     return head(id, block.substr(0, 3), kES) + frame(NGHTTP2_CONTINUATION, 0, id, block.substr(3, 6)) +
                            frame(NGHTTP2_CONTINUATION, kEH, id, block.substr(9));
                   },
               .outcome = O::accepted,
               .check_response =
                   [](const http::HttpClientResponse& r) {
                     EXPECT_EQ(r.status(), 200);
                     EXPECT_EQ(r.header("x-a").value_or("(none)"), "1");
                     EXPECT_EQ(r.header("x-b").value_or("(none)"), "2");
                   }});
  // ---- §5.1 stream states
  c.push_back({.name = "5.1 HEADERS on an idle even stream is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return hello(2) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "5.1 DATA on an idle even stream is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return body(2, "x", kES) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "5.1 HEADERS on an idle odd stream the client did not open is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return hello(id + 4) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "5.1 DATA on an idle odd stream is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return body(id + 4, "x", kES) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "5.1 frames on a stream after the client's RST_STREAM are ignored",
               // An uppercase name: the client resets the stream; the server goes on with it once it has the reset.
               .answer = [](std::uint32_t id) { return head(id, "\x88" + literal("X-Upper", "v"), kEH); },
               .outcome = O::stream_error,
               .code = PROTOCOL,
               .check_seen =
                   [](const ScriptedH2Seen& s) {
                     EXPECT_EQ(s.count(NGHTTP2_RST_STREAM, 1), 1u) << "frames after the reset were answered";
                   },
               .react = [](const ClientFrame& f) -> std::string {
                 if (f.type != NGHTTP2_RST_STREAM) return "";
                 return body(f.stream, "late") + window(f.stream, 100) + head(f.stream, literal("x-trailer", "t")) +
                        rst_stream(f.stream, NGHTTP2_CANCEL);
               }});
  c.push_back({.name = "5.1 HEADERS on a stream closed both ways is STREAM_CLOSED",
               .answer = [](std::uint32_t id) { return hello(id) + ok_head(id); },
               .outcome = O::closed_stream_error,
               .code = STREAM_CLOSED});
  c.push_back({.name = "6.1 DATA on a closed stream is STREAM_CLOSED",
               .answer = [](std::uint32_t id) { return hello(id) + body(id, "more", kES); },
               .outcome = O::closed_stream_error,
               .code = STREAM_CLOSED});
  // ---- §6.1 DATA, §6.2 HEADERS, §6.3 PRIORITY, §6.4 RST_STREAM
  c.push_back({.name = "6.1 DATA on stream 0 is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return ok_head(id, kEH) + body(0, "x") + body(id, "hello", kES); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.1 padded DATA is read without its padding",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + frame(NGHTTP2_DATA, kPadded, id, std::string("\x03hel\0\0\0", 7)) +
                            frame(NGHTTP2_DATA, kPadded | kES, id, std::string("\x00lo", 3));
                   },
               .outcome = O::accepted,
               .check_response = body_is("hello")});
  c.push_back({.name = "6.1 DATA padding longer than the payload is a connection error PROTOCOL_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + frame(NGHTTP2_DATA, kPadded | kES, id,
                                                     "\x05"
                                                     "abc");
                   },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.2 HEADERS on stream 0 is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return ok_head(0) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.2 padded HEADERS with a priority are read",
               .answer =
                   [](std::uint32_t id) {
                     return head(id, std::string("\x02\x00\x00\x00\x00\x10\x88\x00\x00", 9),
                                 kEH | kPadded | kPriority) +
                            body(id, "hello", kES);
                   },
               .outcome = O::accepted,
               .check_response = body_is("hello")});
  c.push_back({.name = "6.2 HEADERS padding longer than the payload is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x09\x88", kEH | kES | kPadded); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.3 PRIORITY of a length other than 5 is FRAME_SIZE_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + frame(NGHTTP2_PRIORITY, 0, id, u32(0)) + body(id, "hello", kES);
                   },
               .outcome = O::stream_or_connection_error,
               .code = FRAME_SIZE});
  c.push_back({.name = "6.4 RST_STREAM fails the request with its code",
               .answer = [](std::uint32_t id) { return ok_head(id, kEH) + rst_stream(id, NGHTTP2_INTERNAL_ERROR); },
               .outcome = O::reset_by_server,
               .code = NGHTTP2_INTERNAL_ERROR});
  c.push_back({.name = "7 an unknown error code in RST_STREAM is not special",
               .answer = [](std::uint32_t id) { return rst_stream(id, 0x7e57); },
               .outcome = O::reset_by_server,
               .code = 0x7e57});
  c.push_back({.name = "6.4 RST_STREAM of a length other than 4 is a connection error FRAME_SIZE_ERROR",
               .answer = [](std::uint32_t id) { return frame(NGHTTP2_RST_STREAM, 0, id, "\x00\x00\x02") + hello(id); },
               .outcome = O::connection_error,
               .code = FRAME_SIZE});
  c.push_back({.name = "6.4 RST_STREAM on stream 0 is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return rst_stream(0, NGHTTP2_CANCEL) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  // ---- §6.5 SETTINGS
  c.push_back({.name = "6.5 SETTINGS with a stream id is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return frame(NGHTTP2_SETTINGS, 0, id, "") + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back(
      {.name = "6.5 SETTINGS of a length not a multiple of 6 is a connection error FRAME_SIZE_ERROR",
       .answer = [](std::uint32_t id) { return frame(NGHTTP2_SETTINGS, 0, 0, std::string(5, '\0')) + hello(id); },
       .outcome = O::connection_error,
       .code = FRAME_SIZE});
  c.push_back({.name = "6.5 a SETTINGS ACK with a payload is a connection error FRAME_SIZE_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)) +
                            hello(id);
                   },
               .outcome = O::connection_error,
               .code = FRAME_SIZE});
  c.push_back({.name = "6.5.2 SETTINGS_ENABLE_PUSH 1 from a server is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 1) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.5.2 SETTINGS_ENABLE_PUSH 2 is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 2) + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back(
      {.name = "6.5.2 SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1 is a connection error FLOW_CONTROL_ERROR",
       .answer =
           [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0x80000000u) + hello(id); },
       .outcome = O::connection_error,
       .code = FLOW});
  c.push_back(
      {.name = "6.5.2 SETTINGS_MAX_FRAME_SIZE under 16384 is a connection error PROTOCOL_ERROR",
       .answer = [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16383) + hello(id); },
       .outcome = O::connection_error,
       .code = PROTOCOL});
  c.push_back(
      {.name = "6.5.2 SETTINGS_MAX_FRAME_SIZE over 2^24-1 is a connection error PROTOCOL_ERROR",
       .answer = [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1u << 24) + hello(id); },
       .outcome = O::connection_error,
       .code = PROTOCOL});
  c.push_back(
      {.name = "6.5.2 unknown SETTINGS ids are ignored and the SETTINGS acknowledged",
       .answer =
           [](std::uint32_t id) {
             return frame(NGHTTP2_SETTINGS, 0, 0, setting(0x99, 7) + setting(0xf00d, 1)) + hello(id);
           },
       .outcome = O::accepted,
       .check_response = body_is("hello"),
       .check_seen = [](const ScriptedH2Seen& s) { EXPECT_EQ(s.settings_acks, 2u) << "the server's two SETTINGS"; }});
  c.push_back({.name = "6.9.2 a SETTINGS_INITIAL_WINDOW_SIZE that overflows a stream window is a connection error "
                       "FLOW_CONTROL_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + window(id, 0x7fffffffu - 65535) +
                            one_setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536) + body(id, "hello", kES);
                   },
               .outcome = O::connection_error,
               .code = FLOW});
  // ---- §6.6 PUSH_PROMISE, §6.7 PING
  c.push_back({.name = "6.6 PUSH_PROMISE although the client disabled push is a connection error PROTOCOL_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return frame(NGHTTP2_PUSH_PROMISE, kEH, id, u32(2) + std::string(test::kGetBlock)) + hello(id);
                   },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.7 PING is answered by an ACK with the same payload",
               .answer = [](std::uint32_t id) { return ping("weftping") + hello(id); },
               .outcome = O::accepted,
               .check_response = body_is("hello"),
               .check_seen =
                   [](const ScriptedH2Seen& s) {
                     std::size_t acks = 0;
                     for (const ClientFrame& f : s.frames) {
                       if (f.type != NGHTTP2_PING) continue;
                       EXPECT_EQ(f.flags & NGHTTP2_FLAG_ACK, NGHTTP2_FLAG_ACK) << "a PING the server did not ask for";
                       EXPECT_EQ(f.payload, "weftping");
                       EXPECT_EQ(f.stream, 0u);
                       ++acks;
                     }
                     EXPECT_EQ(acks, 1u) << "PING ACKs";
                   }});
  c.push_back({.name = "6.7 PING of a length other than 8 is a connection error FRAME_SIZE_ERROR",
               .answer = [](std::uint32_t id) { return ping("weftpin") + hello(id); },
               .outcome = O::connection_error,
               .code = FRAME_SIZE});
  c.push_back({.name = "6.7 PING with a stream id is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return frame(NGHTTP2_PING, 0, id, "weftping") + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  // ---- §6.9 WINDOW_UPDATE
  // (RFC 9113 5.4.1: an endpoint may treat a stream error as a connection error; the server does here too.)
  c.push_back({.name = "6.9 WINDOW_UPDATE of 0 on a stream is a stream error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return ok_head(id, kEH) + window(id, 0) + body(id, "hello", kES); },
               .outcome = O::stream_or_connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.9 WINDOW_UPDATE of 0 on the connection is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return ok_head(id, kEH) + window(0, 0) + body(id, "hello", kES); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back({.name = "6.9 WINDOW_UPDATE of a length other than 4 is a connection error FRAME_SIZE_ERROR",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + frame(NGHTTP2_WINDOW_UPDATE, 0, id, "\x00\x00\x01") +
                            body(id, "hello", kES);
                   },
               .outcome = O::connection_error,
               .code = FRAME_SIZE});
  c.push_back(
      {.name = "6.9.1 a stream window past 2^31-1 is a stream error FLOW_CONTROL_ERROR",
       .answer = [](std::uint32_t id) { return ok_head(id, kEH) + window(id, 0x7fffffffu) + body(id, "hello", kES); },
       .outcome = O::stream_error,
       .code = FLOW});
  c.push_back(
      {.name = "6.9.1 the connection window past 2^31-1 is a connection error FLOW_CONTROL_ERROR",
       .answer = [](std::uint32_t id) { return ok_head(id, kEH) + window(0, 0x7fffffffu) + body(id, "hello", kES); },
       .outcome = O::connection_error,
       .code = FLOW});
  // ---- §6.10 CONTINUATION
  c.push_back({.name = "6.10 CONTINUATION without a preceding HEADERS is a connection error PROTOCOL_ERROR",
               .answer = [](std::uint32_t id) { return frame(NGHTTP2_CONTINUATION, kEH, id, "\x88") + hello(id); },
               .outcome = O::connection_error,
               .code = PROTOCOL});
  c.push_back(
      {.name = "6.10 a frame of another type between HEADERS and CONTINUATION is a connection error PROTOCOL_ERROR",
       .answer =
           [](std::uint32_t id) {
             return ok_head(id, kES) + ping("weftping") + frame(NGHTTP2_CONTINUATION, kEH, id, "");
           },
       .outcome = O::connection_error,
       .code = PROTOCOL});
  c.push_back(
      {.name = "6.10 CONTINUATION of another stream is a connection error PROTOCOL_ERROR",
       .answer = [](std::uint32_t id) { return ok_head(id, kES) + frame(NGHTTP2_CONTINUATION, kEH, id + 2, ""); },
       .outcome = O::connection_error,
       .code = PROTOCOL});
  // ---- §8.1 HTTP message framing
  c.push_back({.name = "8.1 1xx interim heads come before the final head",
               .answer =
                   [](std::uint32_t id) {
                     return head(id, status_literal("103") + literal("link", "</a.css>"), kEH) +
                            head(id, status_literal("100"), kEH) + head(id, "\x88" + literal("x-final", "yes"), kEH) +
                            body(id, "hello", kES);
                   },
               .outcome = O::accepted,
               .check_response =
                   [](const http::HttpClientResponse& r) {
                     EXPECT_EQ(r.status(), 200);
                     EXPECT_EQ(r.header("x-final").value_or("(none)"), "yes");
                     EXPECT_FALSE(r.header("link").has_value()) << "an interim head's field";
                     EXPECT_EQ(r.body_view(), "hello");
                   }});
  c.push_back({.name = "8.1 DATA in many frames is one body",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + body(id, "he") + body(id, "") + body(id, "l") + body(id, "lo") +
                            body(id, "", kES);
                   },
               .outcome = O::accepted,
               .check_response = body_is("hello")});
  c.push_back(
      {.name = "8.1 trailers end the response",
       .answer =
           [](std::uint32_t id) { return ok_head(id, kEH) + body(id, "hello") + head(id, literal("x-trailer", "t")); },
       .outcome = O::accepted,
       .check_response = body_is("hello")});
  c.push_back({.name = "8.1 an interim head with END_STREAM is malformed",
               .answer = [](std::uint32_t id) { return head(id, status_literal("103")); },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back({.name = "8.1 DATA before the head is malformed",
               .answer = [](std::uint32_t id) { return body(id, "early") + hello(id); },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back({.name = "8.1 trailers with a pseudo-header are malformed",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + body(id, "hello") + head(id, "\x88" + literal("x-trailer", "t"));
                   },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back({.name = "8.1 trailers without END_STREAM are malformed",
               .answer =
                   [](std::uint32_t id) {
                     return ok_head(id, kEH) + body(id, "hello") + head(id, literal("x-trailer", "t"), kEH) +
                            body(id, "", kES);
                   },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back(
      {.name = "8.1.1 content-length not matching the DATA is malformed",
       .answer = [](std::uint32_t id) { return head(id, "\x88" + content_length("10"), kEH) + body(id, "hello", kES); },
       .outcome = O::stream_error,
       .code = PROTOCOL});
  c.push_back(
      {.name = "8.1.1 content-length matching the DATA is accepted",
       .answer = [](std::uint32_t id) { return head(id, "\x88" + content_length("5"), kEH) + body(id, "hello", kES); },
       .outcome = O::accepted,
       .check_response = body_is("hello")});
  // ---- §8.2, §8.3 fields
  c.push_back(
      {.name = "8.2.1 an uppercase field name is malformed",
       .answer =
           [](std::uint32_t id) { return head(id, "\x88" + literal("X-Upper", "v"), kEH) + body(id, "hello", kES); },
       .outcome = O::stream_error,
       .code = PROTOCOL});
  c.push_back({.name = "8.2.2 a connection-specific field is malformed",
               .answer =
                   [](std::uint32_t id) {
                     return head(id, "\x88" + literal("connection", "keep-alive"), kEH) + body(id, "hello", kES);
                   },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back(
      {.name = "8.3 a pseudo-header after a regular field is malformed",
       .answer = [](std::uint32_t id) { return head(id, literal("x-a", "b") + "\x88", kEH) + body(id, "hello", kES); },
       .outcome = O::stream_error,
       .code = PROTOCOL});
  c.push_back({.name = "8.3 a request pseudo-header in a response is malformed",
               .answer = [](std::uint32_t id) { return head(id, "\x88\x84", kEH) + body(id, "hello", kES); },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back({.name = "8.3.2 a response without status is malformed",
               .answer = [](std::uint32_t id) { return head(id, literal("x-a", "b"), kEH) + body(id, "hello", kES); },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  c.push_back({.name = "8.3.2 a response with two status is malformed",
               .answer = [](std::uint32_t id) { return head(id, "\x88\x8d", kEH) + body(id, "hello", kES); },
               .outcome = O::stream_error,
               .code = PROTOCOL});
  // ---- RFC 7541 HPACK
  c.push_back({.name = "RFC7541 2.3.3 an index past the tables is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88\xbe"); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back({.name = "RFC7541 6.1 index 0 is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88\x80"); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back(
      {.name =
           "RFC7541 6.3 a table size update over SETTINGS_HEADER_TABLE_SIZE is a connection error COMPRESSION_ERROR",
       .answer = [](std::uint32_t id) { return head(id, table_size_update(8192) + "\x88"); },
       .outcome = O::connection_error,
       .code = COMPRESSION});
  c.push_back({.name = "RFC7541 4.2 a table size update after a field is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88" + table_size_update(0)); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back({.name = "RFC7541 5.2 Huffman with EOS is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88" + huffman_x("\xff\xff\xff\xff")); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back({.name = "RFC7541 5.2 Huffman padding longer than 7 bits is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88" + huffman_x("\x1f\xff")); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back({.name = "RFC7541 5.2 Huffman padding not of EOS bits is a connection error COMPRESSION_ERROR",
               .answer = [](std::uint32_t id) { return head(id, "\x88" + huffman_x("\x18")); },
               .outcome = O::connection_error,
               .code = COMPRESSION});
  c.push_back({.name = "RFC7541 size updates, the dynamic table and Huffman are decoded",
               .answer =
                   [](std::uint32_t id) {
                     // Trailers refer to the entry the head added (dynamic index 62).
                     return head(id,
                                 table_size_update(0) + table_size_update(4096) + "\x88" +
                                     test::indexed_literal("x-dyn", "v") + huffman_x("\x1f"),
                                 kEH) +
                            body(id, "hello") + head(id, "\xbe");
                   },
               .outcome = O::accepted,
               .check_response =
                   [](const http::HttpClientResponse& r) {
                     EXPECT_EQ(r.status(), 200);
                     EXPECT_EQ(r.header("x-dyn").value_or("(none)"), "v");
                     EXPECT_EQ(r.header("x").value_or("(none)"), "a");
                     EXPECT_EQ(r.body_view(), "hello");
                   }});
  return c;
}

const std::vector<ClientCase>& client_cases() {
  static const std::vector<ClientCase> cases = make_client_cases();
  return cases;
}

// The error code of a ClientStreamError; nullopt for another failure.
std::optional<std::uint32_t> stream_error_code(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ClientStreamError& e) {
    return e.error_code();
  } catch (...) {
    return std::nullopt;
  }
}
std::string what_of(const std::exception_ptr& error) {
  if (!error) return "(no failure)";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "(not a std::exception)";
  }
}

// ---- running a row -------------------------------------------------------------------------------

using CaseParam = std::tuple<Transport*, bool, std::size_t>;

class H2ClientConformanceTest : public ::testing::TestWithParam<CaseParam> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }
  const ClientCase& row() const { return client_cases()[std::get<2>(GetParam())]; }
};

// Closes the client and the server however a test ends.
struct ConnectionsCloser {
  std::shared_ptr<Http2Connection>& client;
  ChannelPtr& server;
  test::ScriptedH2Log& log;
  ~ConnectionsCloser() {
    if (client) client->close().wait();
    log.close_connections();  // (a connection the client never had: its first frame was wrong)
    if (server) server->close().wait();
  }
};

// A next request on the connection is served.
void expect_next_request_served(Http2Connection& client) {
  Future<http::HttpClientResponse> next = client.request(http::HttpClientRequest("GET", "/next"));
  ASSERT_TRUE(next.wait_for(patience())) << "the next request was not answered";
  if (auto error = next.error()) {
    ADD_FAILURE() << "the next request on the connection failed: " << what_of(error);
    return;
  }
  EXPECT_EQ(next.get().status(), 200);
  EXPECT_EQ(next.get().body_view(), "hello");
}

TEST_P(H2ClientConformanceTest, Rule) {
  const ClientCase& c = row();
  SCOPED_TRACE(std::string("RFC 9113 ") + c.name);

  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  test::ScriptedH2Script script;
  if (c.greeting) script.greeting = c.greeting();
  script.answer = [answer = c.answer](std::uint32_t stream) { return stream == 1 ? answer(stream) : hello(stream); };
  script.react = c.react;
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};

  // Connect, and send the request once the connection is ready. A connection error's GOAWAY may come
  // before that (the server's first frame was wrong): waiting for the request is left to the outcomes.
  auto connected = std::make_shared<std::atomic<bool>>(false);
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  connecting.add_listener([connected, log](const Future<std::shared_ptr<Http2Connection>>&) {
    connected->store(true);
    log->update([](ScriptedH2Seen&) {});  // (wakes the wait below)
  });
  log->wait_for(patience(), [connected](const ScriptedH2Seen& s) { return connected->load() || s.goaway; });
  Future<http::HttpClientResponse> done;
  if (connected->load() && connecting.error() == nullptr) {
    client = connecting.get();
    done = client->request(http::HttpClientRequest("GET", "/"));
  }
  // The request's result: its response, or its failure (the connection's, when it never became ready).
  std::exception_ptr failure;
  std::optional<http::HttpClientResponse> response;
  std::optional<bool> ended;  // whether it ended within patience(), once waited for
  auto request_ended = [&]() -> bool {
    if (ended) return *ended;
    ended = false;
    if (!done.valid()) {
      if (!connecting.wait_for(patience())) return false;
      if (auto error = connecting.error()) {
        failure = error;
        return *(ended = true);
      }
      client = connecting.get();
      done = client->request(http::HttpClientRequest("GET", "/"));
    }
    if (!done.wait_for(patience())) return false;
    if (auto error = done.error()) {
      failure = error;
    } else {
      response = done.take();
    }
    return *(ended = true);
  };

  // GOAWAY(code), then the close (RFC 9113 5.4.1), and the request fails.
  auto expect_connection_error = [&] {
    const bool goaway = log->wait_for(patience(), [](const ScriptedH2Seen& s) { return s.goaway.has_value(); });
    const ScriptedH2Seen seen = log->snapshot();
    ASSERT_TRUE(goaway) << "no GOAWAY (RST_STREAMs: " << seen.resets.size() << ", closed: " << seen.closed << ")";
    EXPECT_EQ(seen.goaway.value_or(~0u), c.code) << "GOAWAY's code";
    EXPECT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) { return s.closed; }))
        << "the client did not close the connection after its GOAWAY";
    EXPECT_TRUE(request_ended()) << (client ? "the request neither ended nor failed"
                                            : "the connection was never ready (nor failed)");
    if (request_ended()) {
      EXPECT_TRUE(failure != nullptr) << "the request succeeded (status " << response->status() << ")";
    }
  };
  // RST_STREAM(code) on the stream, the request fails with ClientStreamError(code), and the connection goes on.
  auto expect_stream_error = [&] {
    ASSERT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) {
      return s.resets.count(1) != 0 || s.goaway || s.closed;
    })) << "the client did not reset the stream";
    const ScriptedH2Seen seen = log->snapshot();
    ASSERT_EQ(seen.resets.count(1), 1u) << "no RST_STREAM on the stream; GOAWAY: "
                                        << (seen.goaway ? std::to_string(*seen.goaway) : std::string("none"));
    EXPECT_EQ(seen.resets.at(1), c.code) << "RST_STREAM's code";
    ASSERT_TRUE(request_ended()) << "the request neither ended nor failed";
    ASSERT_TRUE(failure != nullptr) << "the request succeeded (status " << response->status() << ")";
    EXPECT_EQ(stream_error_code(failure).value_or(~0u), c.code) << "the request's failure: " << what_of(failure);
    expect_next_request_served(*client);
    EXPECT_FALSE(log->snapshot().goaway.has_value()) << "a stream error ended the connection";
  };

  switch (c.outcome) {
    case Outcome::accepted: {
      ASSERT_TRUE(request_ended()) << "the request neither ended nor failed";
      ASSERT_TRUE(failure == nullptr) << "the request failed: " << what_of(failure);
      if (c.check_response) {
        c.check_response(*response);
      } else {
        EXPECT_EQ(response->status(), 200);
      }
      expect_next_request_served(*client);
      // (What the client sent about stream 1 came before the next request.)
      const ScriptedH2Seen s = log->snapshot();
      EXPECT_TRUE(s.resets.empty()) << "the client reset stream " << s.resets.begin()->first << " with "
                                    << s.resets.begin()->second;
      EXPECT_FALSE(s.goaway.has_value()) << "the client sent GOAWAY " << s.goaway.value_or(0);
      EXPECT_FALSE(s.closed);
      break;
    }
    case Outcome::stream_error: expect_stream_error(); break;
    case Outcome::connection_error: expect_connection_error(); break;
    case Outcome::stream_or_connection_error: {
      ASSERT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) {
        return s.resets.count(1) != 0 || s.goaway || s.closed;
      })) << "the client neither reset the stream nor ended the connection";
      if (log->snapshot().resets.count(1) != 0) {
        expect_stream_error();
      } else {
        expect_connection_error();
      }
      break;
    }
    case Outcome::reset_by_server: {
      ASSERT_TRUE(request_ended()) << "the request neither ended nor failed";
      ASSERT_TRUE(failure != nullptr) << "the request succeeded (status " << response->status() << ")";
      EXPECT_EQ(stream_error_code(failure).value_or(~0u), c.code) << "the request's failure: " << what_of(failure);
      expect_next_request_served(*client);
      const ScriptedH2Seen s = log->snapshot();
      EXPECT_EQ(s.resets.count(1), 0u) << "the client answered RST_STREAM with RST_STREAM";
      EXPECT_FALSE(s.goaway.has_value()) << "the client sent GOAWAY " << s.goaway.value_or(0);
      break;
    }
    case Outcome::closed_stream_error: {
      ASSERT_TRUE(request_ended()) << "the request neither ended nor failed";
      ASSERT_TRUE(failure == nullptr) << "the request failed: " << what_of(failure);
      EXPECT_EQ(response->body_view(), "hello");
      ASSERT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) {
        return s.resets.count(1) != 0 || s.goaway || s.closed;
      })) << "the frame on the closed stream was let pass";
      const ScriptedH2Seen seen = log->snapshot();
      if (seen.resets.count(1) != 0) {
        EXPECT_EQ(seen.resets.at(1), c.code) << "RST_STREAM's code";
      } else {
        ASSERT_TRUE(seen.goaway.has_value()) << "the connection closed without GOAWAY";
        EXPECT_EQ(*seen.goaway, c.code) << "GOAWAY's code";
      }
      break;
    }
  }
  if (c.check_seen && !IsSkipped()) c.check_seen(log->snapshot());
}

std::string case_param_name(const ::testing::TestParamInfo<CaseParam>& info) {
  std::string name = std::string(std::get<0>(info.param)->name()) + (std::get<1>(info.param) ? "_tls_" : "_h2c_");
  bool underscore = true;
  for (const char ch : std::string_view(client_cases()[std::get<2>(info.param)].name)) {
    const bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (alnum) {
      name += ch;
      underscore = false;
    } else if (!underscore) {
      name += '_';
      underscore = true;
    }
  }
  if (underscore) name.pop_back();
  return name;
}

// Every row on every transport, in the clear and over TLS. The rows check the engine's answers, which
// the transport does not change; under a sanitizer, which looks for races and lifetimes, the rows run
// in the clear on every transport and over TLS on epoll (a third of the 420 rows' time).
#if !defined(WEFT_TEST_SANITIZED)
INSTANTIATE_TEST_SUITE_P(On, H2ClientConformanceTest,
                         ::testing::Combine(::testing::Values(&::weft::epoll(), &::weft::io_uring(),
                                                              &::weft::blocking()),
                                            ::testing::Bool(), ::testing::Range<std::size_t>(0, client_cases().size())),
                         case_param_name);
#else
INSTANTIATE_TEST_SUITE_P(
    On, H2ClientConformanceTest,
    ::testing::Combine(::testing::Values(&::weft::epoll(), &::weft::io_uring(), &::weft::blocking()),
                       ::testing::Values(false), ::testing::Range<std::size_t>(0, client_cases().size())),
    case_param_name);
INSTANTIATE_TEST_SUITE_P(OnTls, H2ClientConformanceTest,
                         ::testing::Combine(::testing::Values(&::weft::epoll()), ::testing::Values(true),
                                            ::testing::Range<std::size_t>(0, client_cases().size())),
                         case_param_name);
#endif

// ---- the rows on streamed requests ----------------------------------------------------------------

// What a streamed request (Http2Connection::open: GET /, ended at once) showed: its status and body, or its failure.
struct StreamedOutcome {
  int status = 0;
  std::string body;
  bool failed = false;
  std::optional<std::uint32_t> error_code;  // a ClientStreamError's
  std::string error;
};

Task<StreamedOutcome> streamed_get(Http2Connection& client) {
  StreamedOutcome out;
  ClientStream s = client.open("GET", "/", {});
  s.end();
  try {
    out.status = co_await s.response();
    while (std::optional<ByteBuf> chunk = co_await s.read()) out.body += chunk->to_string();
  } catch (const ClientStreamError& e) {
    out.failed = true;
    out.error_code = e.error_code();
    out.error = e.what();
  } catch (const std::exception& e) {
    out.failed = true;
    out.error = e.what();
  }
  co_return out;
}

class H2ClientStreamedConformanceTest : public ::testing::TestWithParam<std::tuple<Transport*, bool>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }
};

// The rows whose request must succeed or fail with a stream error, on a streamed request (the head,
// DATA and trailers as they come: another path through the client): the same outcome.
TEST_P(H2ClientStreamedConformanceTest, StreamAndAcceptRowsOnAStreamedRequest) {
  for (const ClientCase& c : client_cases()) {
    if (c.outcome != Outcome::accepted && c.outcome != Outcome::stream_error) continue;
    SCOPED_TRACE(std::string("RFC 9113 ") + c.name + " (streamed)");
    EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
    auto log = std::make_shared<test::ScriptedH2Log>();
    test::ScriptedH2Script script;
    if (c.greeting) script.greeting = c.greeting();
    script.answer = [answer = c.answer](std::uint32_t stream) { return stream == 1 ? answer(stream) : hello(stream); };
    script.react = c.react;
    ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
    std::shared_ptr<Http2Connection> client;
    ConnectionsCloser closer{client, server, *log};
    Future<std::shared_ptr<Http2Connection>> connecting =
        Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
    ASSERT_TRUE(connecting.wait_for(patience())) << "the connection was never ready";
    client = connecting.get();
    Future<StreamedOutcome> done = spawn(client->loop(), streamed_get(*client));
    ASSERT_TRUE(done.wait_for(patience())) << "the streamed request neither ended nor failed";
    const StreamedOutcome& out = done.get();
    if (c.outcome == Outcome::accepted) {
      EXPECT_FALSE(out.failed) << "the request failed: " << out.error;
      EXPECT_EQ(out.status, 200);
    } else {
      EXPECT_TRUE(out.failed) << "the request succeeded (status " << out.status << ")";
      EXPECT_EQ(out.error_code.value_or(~0u), c.code) << "the request's failure: " << out.error;
      EXPECT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) {
        return s.resets.count(1) != 0 || s.goaway || s.closed;
      })) << "the client did not reset the stream";
      const ScriptedH2Seen seen = log->snapshot();
      EXPECT_EQ(seen.resets.count(1), 1u) << "no RST_STREAM on the stream";
      if (seen.resets.count(1) != 0) {
        EXPECT_EQ(seen.resets.at(1), c.code) << "RST_STREAM's code";
      }
    }
    expect_next_request_served(*client);
    const ScriptedH2Seen s = log->snapshot();
    EXPECT_FALSE(s.goaway.has_value()) << "the client sent GOAWAY " << s.goaway.value_or(0);
    if (c.outcome == Outcome::accepted) {
      EXPECT_TRUE(s.resets.empty()) << "the client reset a stream";
    }
  }
}

WEFT_H2_ON_EVERY_TRANSPORT(H2ClientStreamedConformanceTest);

// ---- the client's own obligations ----------------------------------------------------------------

class H2ClientObligationsTest : public ::testing::TestWithParam<std::tuple<Transport*, bool>> {
 protected:
  Transport& transport() const { return *std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }
};

// §3.4: the preface's magic, then SETTINGS as the client's first frame, with SETTINGS_ENABLE_PUSH 0
// (§6.5.2, 8.4); §6.5.3: each SETTINGS of the server acknowledged.
TEST_P(H2ClientObligationsTest, PrefaceSettingsAndAcks) {
  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  test::ScriptedH2Script script;
  script.greeting = frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100));
  script.answer = [](std::uint32_t id) { return one_setting(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 8192) + hello(id); };
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  Future<http::HttpClientResponse> done = client->request(http::HttpClientRequest("GET", "/"));
  ASSERT_TRUE(done.wait_for(patience()));
  EXPECT_EQ(done.get().body_view(), "hello");

  ASSERT_TRUE(log->wait_for(patience(), [](const ScriptedH2Seen& s) { return s.settings_acks >= 2; }))
      << "the client did not acknowledge both SETTINGS of the server";
  const ScriptedH2Seen s = log->snapshot();
  EXPECT_TRUE(s.preface) << "the connection preface's magic";
  EXPECT_FALSE(s.preface_wrong);
  ASSERT_FALSE(s.frames.empty());
  EXPECT_EQ(s.frames[0].type, NGHTTP2_SETTINGS) << "the client's first frame";
  EXPECT_EQ(s.frames[0].flags & NGHTTP2_FLAG_ACK, 0) << "the client's first frame is its SETTINGS, not an ACK";
  EXPECT_EQ(s.frames[0].stream, 0u);
  ASSERT_EQ(s.settings.count(NGHTTP2_SETTINGS_ENABLE_PUSH), 1u) << "SETTINGS_ENABLE_PUSH not advertised";
  EXPECT_EQ(s.settings.at(NGHTTP2_SETTINGS_ENABLE_PUSH), 0u);
  EXPECT_EQ(s.settings_acks, 2u);
  EXPECT_EQ(s.count(NGHTTP2_HEADERS, 1), 1u);
  EXPECT_FALSE(s.goaway.has_value());
}

// §5.1.2: with SETTINGS_MAX_CONCURRENT_STREAMS 1, three requests made at once open one at a time.
// The server holds each stream open until the client has answered a PING sent after its head (so a
// HEADERS the client sent past the limit would have come first); a HEADERS while one is held breaks the limit.
TEST_P(H2ClientObligationsTest, HonoursMaxConcurrentStreams) {
  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  struct Held {
    std::uint32_t stream = 0;  // the stream held open (server loop only)
    std::atomic<int> past_limit{0};
    std::atomic<int> opened{0};
  };
  auto held = std::make_shared<Held>();
  test::ScriptedH2Script script;
  script.greeting = frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  script.react = [held](const ClientFrame& f) -> std::string {
    if (f.type == NGHTTP2_HEADERS) {
      held->opened.fetch_add(1);
      if (held->stream != 0) held->past_limit.fetch_add(1);
      held->stream = f.stream;
      return ok_head(f.stream, kEH) + ping(u32(f.stream) + u32(0));
    }
    if (f.type == NGHTTP2_PING && (f.flags & NGHTTP2_FLAG_ACK) != 0 && held->stream != 0) {
      const std::uint32_t id = held->stream;
      held->stream = 0;
      return body(id, "hello", kES);
    }
    return "";
  };
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  std::vector<Future<http::HttpClientResponse>> requests;
  for (int i = 0; i < 3; ++i)
    requests.push_back(client->request(http::HttpClientRequest("GET", "/" + std::to_string(i))));
  for (auto& r : requests) {
    ASSERT_TRUE(r.wait_for(patience())) << "a request was never answered";
    if (auto error = r.error()) {
      ADD_FAILURE() << "a request failed: " << what_of(error);
      continue;
    }
    EXPECT_EQ(r.get().body_view(), "hello");
  }
  EXPECT_EQ(held->opened.load(), 3);
  EXPECT_EQ(held->past_limit.load(), 0) << "streams opened past SETTINGS_MAX_CONCURRENT_STREAMS 1";
  // §5.1.1: the client's streams are odd and increase.
  std::vector<std::uint32_t> streams;
  for (const ClientFrame& f : log->snapshot().frames) {
    if (f.type == NGHTTP2_HEADERS) streams.push_back(f.stream);
  }
  EXPECT_EQ(streams, (std::vector<std::uint32_t>{1, 3, 5}));
}

// §8.3.1, §8.2.2, §8.2: the request's head has :method, :scheme, :authority and :path once each,
// before its other fields; names in lowercase; no connection-specific fields (and TE only as "trailers").
TEST_P(H2ClientObligationsTest, RequestHeadIsWellFormed) {
  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  test::ScriptedH2Script script;
  script.answer = hello;
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  Future<http::HttpClientResponse> done = client->request(http::HttpClientRequest("GET", "/x?y=1")
                                                              .header("Connection", "keep-alive, upgrade")
                                                              .header("Keep-Alive", "timeout=5")
                                                              .header("Proxy-Connection", "keep-alive")
                                                              .header("Transfer-Encoding", "chunked")
                                                              .header("Upgrade", "h2c")
                                                              .header("X-Mixed-Case", "v"));
  ASSERT_TRUE(done.wait_for(patience()));
  ASSERT_TRUE(done.error() == nullptr) << what_of(done.error());
  EXPECT_EQ(done.get().body_view(), "hello");

  // The client's frames again as bytes, decoded (HPACK) by nghttp2's inflater.
  std::string bytes;
  for (const ClientFrame& f : log->snapshot().frames) bytes += frame(f.type, f.flags, f.stream, f.payload);
  const test::ServerFrames client_frames(bytes);
  EXPECT_FALSE(client_frames.hpack_error);
  EXPECT_FALSE(client_frames.sequence_error);
  ASSERT_EQ(client_frames.headers.count(1), 1u) << "no request head on stream 1";
  const auto& fields = client_frames.headers.at(1);
  std::map<std::string, int> pseudo;
  bool regular_seen = false;
  for (const auto& [name, value] : fields) {
    SCOPED_TRACE(name + ": " + value);
    if (!name.empty() && name[0] == ':') {
      EXPECT_FALSE(regular_seen) << "a pseudo-header after a regular field";
      ++pseudo[name];
      continue;
    }
    regular_seen = true;
    for (const char ch : name) EXPECT_FALSE(ch >= 'A' && ch <= 'Z') << "an uppercase field name";
    for (const char* banned :
         {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"}) {
      EXPECT_NE(name, banned) << "a connection-specific field";
    }
    if (name == "te") {
      EXPECT_EQ(value, "trailers");
    }
  }
  EXPECT_EQ(pseudo, (std::map<std::string, int>{{":authority", 1}, {":method", 1}, {":path", 1}, {":scheme", 1}}));
  EXPECT_EQ(client_frames.header(1, ":method").value_or(""), "GET");
  EXPECT_EQ(client_frames.header(1, ":path").value_or(""), "/x?y=1");
  EXPECT_EQ(client_frames.header(1, ":scheme").value_or(""), tls() ? "https" : "http");
  EXPECT_EQ(client_frames.header(1, "x-mixed-case").value_or("(none)"), "v");
}

// §8.2.2: TE other than "trailers" is never sent (the client drops the field, or fails the request).
TEST_P(H2ClientObligationsTest, NoTeOtherThanTrailers) {
  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  test::ScriptedH2Script script;
  script.answer = hello;
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  Future<http::HttpClientResponse> done = client->request(http::HttpClientRequest("GET", "/").header("TE", "gzip"));
  ASSERT_TRUE(done.wait_for(patience()));
  if (done.error() != nullptr) return;  // refused: nothing sent
  std::string bytes;
  for (const ClientFrame& f : log->snapshot().frames) bytes += frame(f.type, f.flags, f.stream, f.payload);
  const test::ServerFrames client_frames(bytes);
  const std::optional<std::string> te = client_frames.header(1, "te");
  EXPECT_EQ(te.value_or("trailers"), "trailers");
}

// §6.8: after a GOAWAY the client opens no stream on the connection; a request the GOAWAY's last
// stream id covers completes, one made later fails (ClientStreamError, refused: safe to retry).
TEST_P(H2ClientObligationsTest, NoNewStreamAfterGoaway) {
  EventLoopGroup group(transport(), transport().name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  test::ScriptedH2Script script;
  script.answer = [](std::uint32_t id) {
    return frame(NGHTTP2_GOAWAY, 0, 0, u32(id) + u32(NGHTTP2_NO_ERROR)) + hello(id);
  };
  ChannelPtr server = test::serve_scripted_h2(group, tls(), std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls()));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  Future<http::HttpClientResponse> first = client->request(http::HttpClientRequest("GET", "/"));
  ASSERT_TRUE(first.wait_for(patience()));
  ASSERT_TRUE(first.error() == nullptr) << what_of(first.error());
  EXPECT_EQ(first.get().body_view(), "hello");
  Future<http::HttpClientResponse> later = client->request(http::HttpClientRequest("GET", "/later"));
  ASSERT_TRUE(later.wait_for(patience())) << "a request after GOAWAY neither failed nor was answered";
  ASSERT_TRUE(later.error() != nullptr) << "a request after GOAWAY was answered";
  try {
    std::rethrow_exception(later.error());
  } catch (const ClientStreamError& e) {
    EXPECT_TRUE(e.refused()) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ClientStreamError: " << e.what();
  }
  EXPECT_EQ(log->snapshot().count(NGHTTP2_HEADERS), 1u) << "a stream opened after GOAWAY";
}

// §6.9, §6.9.2: a request body within the server's SETTINGS_INITIAL_WINDOW_SIZE (`stream_window`)
// and the connection's 65,535 bytes, more sent only as WINDOW_UPDATEs grant it: the server grants
// more on a stream (or the connection) only once most of the window is used; DATA past a window breaks it.
void expect_windows_honoured(Transport& transport, bool tls, std::uint32_t stream_window, std::size_t body_size) {
  EventLoopGroup group(transport, transport.name() == "blocking" ? 6 : 1);
  auto log = std::make_shared<test::ScriptedH2Log>();
  struct Windows {
    std::uint64_t stream_granted = 0, connection_granted = 65535, stream_used = 0,
                  connection_used = 0;  // server loop only
    std::atomic<int> past_window{0};
  };
  auto w = std::make_shared<Windows>();
  w->stream_granted = stream_window;
  test::ScriptedH2Script script;
  script.greeting = frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, stream_window));
  script.react = [w, stream_window](const ClientFrame& f) -> std::string {
    if (f.type != NGHTTP2_DATA || f.stream != 1) return "";
    w->stream_used += f.payload.size();
    w->connection_used += f.payload.size();
    if (w->stream_used > w->stream_granted || w->connection_used > w->connection_granted) w->past_window.fetch_add(1);
    if ((f.flags & kES) != 0) return ok_head(f.stream, kEH) + body(f.stream, std::to_string(w->stream_used), kES);
    // More only once less than half a step is left (a client that waited for more, with more
    // than that, would stall the test: none does).
    std::string out;
    if (w->stream_granted - std::min(w->stream_used, w->stream_granted) < stream_window / 2) {
      w->stream_granted += stream_window;
      out += window(f.stream, stream_window);
    }
    if (w->connection_granted - std::min(w->connection_used, w->connection_granted) < 65535 / 2) {
      w->connection_granted += 65535;
      out += window(0, 65535);
    }
    return out;
  };
  ChannelPtr server = test::serve_scripted_h2(group, tls, std::move(script), log);
  std::shared_ptr<Http2Connection> client;
  ConnectionsCloser closer{client, server, *log};
  Future<std::shared_ptr<Http2Connection>> connecting =
      Http2Connection::connect(group, server->local_address(), test::scripted_h2_client_options(tls));
  ASSERT_TRUE(connecting.wait_for(patience()));
  client = connecting.get();
  Future<http::HttpClientResponse> done =
      client->request(http::HttpClientRequest("POST", "/upload").body(ByteBuf::copy_of(std::string(body_size, 'u'))));
  ASSERT_TRUE(done.wait_for(patience())) << "the upload stalled";
  ASSERT_TRUE(done.error() == nullptr) << what_of(done.error());
  EXPECT_EQ(done.get().body_view(), std::to_string(body_size));
  EXPECT_EQ(w->past_window.load(), 0) << "DATA past a flow-control window";
  EXPECT_EQ(log->snapshot().data[1], std::string(body_size, 'u'));
}

TEST_P(H2ClientObligationsTest, RequestBodyWithinTheStreamWindow) {
  expect_windows_honoured(transport(), tls(), 16, 200);
}

TEST_P(H2ClientObligationsTest, RequestBodyWithinTheConnectionWindow) {
  expect_windows_honoured(transport(), tls(), 1u << 20, 150000);
}

WEFT_H2_ON_EVERY_TRANSPORT(H2ClientObligationsTest);

}  // namespace
}  // namespace weft::http2::client_conformance
