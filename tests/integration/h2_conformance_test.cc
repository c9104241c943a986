// RFC 9113 (§§3-8) and RFC 7541 conformance of weft's HTTP/2 server, from outside: one raw-frame
// case per MUST or MUST NOT a server can be checked on, named by its section, each with the answer
// the RFC asks for (a connection error: GOAWAY(code), then the connection closes; a stream error:
// RST_STREAM(code), then the connection serves the next request; or a frame that must be served or
// ignored). The table runs against a real server on epoll, io_uring and blocking, over h2c and
// over TLS (h2 by ALPN), one connection per case. A request that breaks a rule asks for /never:
// the application must never see it.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "support/blocking_client.h"
#include "support/h2_frames.h"
#include "support/h2_matrix.h"
#include "support/transports.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::frame;
using test::literal;
using test::request_block;
using test::ServerFrames;
using test::setting;
using test::StreamEnd;
using test::u32;

constexpr std::uint8_t kEH = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kES = NGHTTP2_FLAG_END_STREAM;

// ---- the frames of the cases -----------------------------------------------------------------------

std::string headers(std::uint32_t id, std::string_view block, std::uint8_t flags = kEH | kES) {
  return frame(NGHTTP2_HEADERS, flags, id, block);
}
std::string get(std::uint32_t id, std::string_view path = "/plaintext") { return headers(id, request_block("GET", path)); }
// A request for /never whose body follows (no END_STREAM), with `extra` fields.
std::string post_never(std::uint32_t id, std::string_view extra = {}) {
  return headers(id, request_block("POST", "/never", extra), kEH);
}
std::string data(std::uint32_t id, std::size_t n, std::uint8_t flags = 0) {
  return frame(NGHTTP2_DATA, flags, id, std::string(n, 'd'));
}
std::string trailers(std::uint32_t id, std::uint8_t flags = kEH | kES) {
  return frame(NGHTTP2_HEADERS, flags, id, literal("x-trailer", "t"));
}
std::string rst(std::uint32_t id, std::uint32_t code) { return frame(NGHTTP2_RST_STREAM, 0, id, u32(code)); }
std::string window_update(std::uint32_t id, std::uint32_t increment) {
  return frame(NGHTTP2_WINDOW_UPDATE, 0, id, u32(increment));
}
std::string priority(std::uint32_t id, std::uint32_t depends_on) {
  return frame(NGHTTP2_PRIORITY, 0, id, u32(depends_on) + std::string(1, '\x10'));
}
std::string settings(std::uint16_t id, std::uint32_t value) { return frame(NGHTTP2_SETTINGS, 0, 0, setting(id, value)); }
// A request block whose pseudo-headers are given whole (HPACK literals).
std::string block_of(std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  std::string b;
  for (const auto& [name, value] : fields) b += literal(name, value);
  return b;
}
// A literal field without indexing, new name "x", whose value is Huffman-coded `huffman` (RFC 7541 5.2).
std::string huffman_value(std::string_view huffman) {
  return std::string("\x00\x01x", 3) + static_cast<char>(0x80 | huffman.size()) + std::string(huffman);
}

// ---- the table ------------------------------------------------------------------------------------

enum class Answer {
  connection_error,  // GOAWAY(code), then the connection closes
  stream_error,      // RST_STREAM(code) on `stream`; then a request on `next` is served
  either_error,      // RFC 9113 5.4.1 lets a stream error be answered as a connection error
  serves,            // no error: a request on `next` is served
};

struct Case {
  const char* section;
  const char* rule;
  std::function<std::string()> frames;  // after the preface and an empty SETTINGS
  Answer answer;
  std::uint32_t code = 0;
  std::uint32_t stream = 0;  // the stream reset (stream_error / either_error)
  std::uint32_t next = 0;    // the request that must then be served (0: none)
  // A second part, sent once `stream` has been answered or reset (a stream closed by then).
  std::function<std::string()> then = nullptr;
  std::function<void(const ServerFrames&)> check = nullptr;  // more to assert
  bool own_preface = false;  // `frames` replace the preface
};

std::vector<Case> server_cases() {
  constexpr std::uint32_t PROTOCOL = NGHTTP2_PROTOCOL_ERROR, STREAM_CLOSED = NGHTTP2_STREAM_CLOSED,
                          FRAME_SIZE = NGHTTP2_FRAME_SIZE_ERROR, FLOW = NGHTTP2_FLOW_CONTROL_ERROR,
                          COMPRESSION = NGHTTP2_COMPRESSION_ERROR;
  const auto conn = Answer::connection_error;
  const auto strm = Answer::stream_error;
  std::vector<Case> c;
  // §3.4 the preface
  c.push_back({"3.4", "a wrong preface is a connection error PROTOCOL_ERROR",
               [] { return std::string("PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n") + frame(NGHTTP2_SETTINGS, 0, 0, ""); }, conn,
               PROTOCOL, 0, 0, nullptr, nullptr, true});
  c.push_back({"3.4", "a preface whose first frame is not SETTINGS is a connection error",
               [] { return std::string(test::kH2Preface) + get(1); }, conn, PROTOCOL, 0, 0, nullptr, nullptr, true});
  // §4.1 frame format
  c.push_back({"4.1", "a frame of unknown type is ignored", [] { return frame(0x20, 0, 0, "abcd") + frame(0xfa, 0xff, 1, ""); },
               Answer::serves, 0, 0, 1});
  c.push_back({"4.1", "unknown flags are ignored", [] { return headers(1, request_block("GET", "/plaintext"), kEH | kES | 0x10 | 0x40 | 0x80); },
               Answer::serves, 0, 0, 3, nullptr, [](const ServerFrames& f) { EXPECT_EQ(f.status.count(1), 1u); }});
  c.push_back({"4.1", "the reserved bit of a stream id is ignored", [] { return headers(0x80000001u, request_block("GET", "/plaintext")); },
               Answer::serves, 0, 0, 3, nullptr, [](const ServerFrames& f) { EXPECT_EQ(f.status.count(1), 1u); }});
  // §4.2 frame size
  c.push_back({"4.2", "DATA over SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR",
               [] { return post_never(1) + data(1, 16385); }, Answer::either_error, FRAME_SIZE, 1, 3});
  c.push_back({"4.2", "HEADERS over SETTINGS_MAX_FRAME_SIZE is a connection error FRAME_SIZE_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext", literal("x", std::string(100, 'v'))) + std::string(16400, '\0')); },
               conn, FRAME_SIZE});
  // §4.3 header compression and decompression
  c.push_back({"4.3", "an undecodable header block is a connection error COMPRESSION_ERROR",
               [] { return headers(1, "\xff\xff\xff\xff\xff"); }, conn, COMPRESSION});
  c.push_back({"4.3", "a PRIORITY frame inside a header block is a connection error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext"), kES) + priority(1, 0) + frame(NGHTTP2_CONTINUATION, kEH, 1, ""); },
               conn, PROTOCOL});
  c.push_back({"4.3", "HEADERS of another stream inside a header block is a connection error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext"), kES) + get(3); }, conn, PROTOCOL});
  // §5.1 stream states
  c.push_back({"5.1", "idle: DATA is a connection error PROTOCOL_ERROR", [] { return data(1, 4, kES); }, conn, PROTOCOL});
  c.push_back({"5.1", "idle: RST_STREAM is a connection error PROTOCOL_ERROR", [] { return rst(1, NGHTTP2_CANCEL); }, conn, PROTOCOL});
  c.push_back({"5.1", "idle: WINDOW_UPDATE is a connection error PROTOCOL_ERROR", [] { return window_update(1, 100); }, conn, PROTOCOL});
  c.push_back({"5.1", "idle: CONTINUATION is a connection error PROTOCOL_ERROR",
               [] { return frame(NGHTTP2_CONTINUATION, kEH, 1, request_block("GET", "/plaintext")); }, conn, PROTOCOL});
  c.push_back({"5.1", "half-closed (remote): DATA is an error STREAM_CLOSED",
               [] { return get(1, "/hold") + data(1, 4); }, Answer::either_error, STREAM_CLOSED, 1, 3});
  c.push_back({"5.1", "half-closed (remote): HEADERS is an error STREAM_CLOSED",
               [] { return get(1, "/hold") + trailers(1); }, Answer::either_error, STREAM_CLOSED, 1, 3});
  c.push_back({"5.1", "closed by the client's RST_STREAM: DATA is a stream error STREAM_CLOSED",
               [] { return post_never(1) + rst(1, NGHTTP2_CANCEL) + data(1, 4); }, strm, STREAM_CLOSED, 1, 3});
  c.push_back({"5.1", "closed by the client's RST_STREAM: HEADERS is a stream error STREAM_CLOSED",
               [] { return post_never(1) + rst(1, NGHTTP2_CANCEL) + trailers(1); }, strm, STREAM_CLOSED, 1, 3});
  c.push_back({"5.1", "closed by the client's RST_STREAM: PRIORITY is allowed",
               [] { return post_never(1) + rst(1, NGHTTP2_CANCEL) + priority(1, 0); }, Answer::serves, 0, 0, 3,
               nullptr, [](const ServerFrames& f) { EXPECT_EQ(f.resets.count(1), 0u); }});
  c.push_back({"5.1", "closed by END_STREAM both ways: DATA is a connection error STREAM_CLOSED",
               [] { return get(1); }, conn, STREAM_CLOSED, 1, 0, [] { return data(1, 4); }});
  c.push_back({"5.1", "closed by END_STREAM both ways: HEADERS is a connection error STREAM_CLOSED",
               [] { return get(1); }, conn, STREAM_CLOSED, 1, 0, [] { return trailers(1); }});
  c.push_back({"5.1", "closed by END_STREAM both ways: WINDOW_UPDATE is ignored",
               [] { return get(1); }, Answer::serves, 0, 1, 3, [] { return window_update(1, 100); }});
  c.push_back({"5.1", "closed by the server's RST_STREAM: DATA and trailers still in flight are ignored",
               [] { return post_never(1, literal("content-length", "5")) + data(1, 10); }, Answer::serves, 0, 1, 3,
               [] { return data(1, 4) + trailers(1); },
               [](const ServerFrames& f) { EXPECT_EQ(f.resets.at(1), std::uint32_t{NGHTTP2_PROTOCOL_ERROR}); }});
  // §5.1.1 stream identifiers
  c.push_back({"5.1.1", "HEADERS on an even stream is a connection error PROTOCOL_ERROR", [] { return get(2); }, conn, PROTOCOL});
  c.push_back({"5.1.1", "HEADERS opening a stream below one already opened is a connection error PROTOCOL_ERROR",
               [] { return get(5) + get(3); }, conn, PROTOCOL});
  // §5.1.2 stream concurrency
  c.push_back({"5.1.2", "a stream past SETTINGS_MAX_CONCURRENT_STREAMS is refused",
               [] {
                 std::string f;
                 for (std::uint32_t id = 1; id <= 201; id += 2) f += get(id, "/hold");
                 return f;
               },
               strm, NGHTTP2_REFUSED_STREAM, 201});
  // §5.3.1 stream dependencies
  c.push_back({"5.3.1", "HEADERS depending on its own stream is a stream error PROTOCOL_ERROR",
               [] { return headers(1, u32(1) + std::string(1, '\x10') + request_block("GET", "/never"), kEH | kES | NGHTTP2_FLAG_PRIORITY); },
               strm, PROTOCOL, 1, 3});
  c.push_back({"5.3.1", "PRIORITY depending on its own (idle) stream is an error PROTOCOL_ERROR (no RST_STREAM on an idle stream: 6.4)",
               [] { return priority(1, 1); }, conn, PROTOCOL});
  c.push_back({"5.3.1", "PRIORITY depending on its own (open) stream is a stream error PROTOCOL_ERROR",
               [] { return post_never(1) + priority(1, 1); }, strm, PROTOCOL, 1, 3});
  // §5.5 extensions
  c.push_back({"5.5", "an unknown frame inside a header block is a connection error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext"), kES) + frame(0x20, 0, 1, "") + frame(NGHTTP2_CONTINUATION, kEH, 1, ""); },
               conn, PROTOCOL});
  // §6.1 DATA
  c.push_back({"6.1", "DATA on stream 0 is a connection error PROTOCOL_ERROR", [] { return data(0, 4); }, conn, PROTOCOL});
  c.push_back({"6.1", "DATA padding as long as the payload is a connection error PROTOCOL_ERROR",
               [] { return post_never(1) + frame(NGHTTP2_DATA, NGHTTP2_FLAG_PADDED, 1, std::string(1, '\x05') + "abcd"); },
               conn, PROTOCOL});
  // §6.2 HEADERS
  c.push_back({"6.2", "HEADERS on stream 0 is a connection error PROTOCOL_ERROR", [] { return get(0); }, conn, PROTOCOL});
  c.push_back({"6.2", "HEADERS padding past the payload is a connection error PROTOCOL_ERROR",
               [] { return headers(1, std::string(1, '\xff') + request_block("GET", "/plaintext"), kEH | kES | NGHTTP2_FLAG_PADDED); },
               conn, PROTOCOL});
  // §6.3 PRIORITY
  c.push_back({"6.3", "PRIORITY on stream 0 is a connection error PROTOCOL_ERROR", [] { return priority(0, 1); }, conn, PROTOCOL});
  c.push_back({"6.3", "PRIORITY of another length than 5 is a stream error FRAME_SIZE_ERROR",
               [] { return post_never(1) + frame(NGHTTP2_PRIORITY, 0, 1, u32(0)); }, strm, FRAME_SIZE, 1, 3});
  c.push_back({"6.3", "PRIORITY of another length than 5 on an idle stream is an error FRAME_SIZE_ERROR",
               [] { return frame(NGHTTP2_PRIORITY, 0, 1, u32(0)); }, conn, FRAME_SIZE});
  // §6.4 RST_STREAM
  c.push_back({"6.4", "RST_STREAM on stream 0 is a connection error PROTOCOL_ERROR", [] { return rst(0, 0); }, conn, PROTOCOL});
  c.push_back({"6.4", "RST_STREAM of another length than 4 is a connection error FRAME_SIZE_ERROR",
               [] { return post_never(1) + frame(NGHTTP2_RST_STREAM, 0, 1, "abc"); }, conn, FRAME_SIZE});
  // §6.5 SETTINGS
  c.push_back({"6.5", "a SETTINGS ACK with a payload is a connection error FRAME_SIZE_ERROR",
               [] { return frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "abcdef"); }, conn, FRAME_SIZE});
  c.push_back({"6.5", "SETTINGS on a stream is a connection error PROTOCOL_ERROR",
               [] { return frame(NGHTTP2_SETTINGS, 0, 1, ""); }, conn, PROTOCOL});
  c.push_back({"6.5", "SETTINGS not a multiple of 6 bytes is a connection error FRAME_SIZE_ERROR",
               [] { return frame(NGHTTP2_SETTINGS, 0, 0, "abc"); }, conn, FRAME_SIZE});
  c.push_back({"6.5.2", "SETTINGS_ENABLE_PUSH other than 0 or 1 is a connection error PROTOCOL_ERROR",
               [] { return settings(NGHTTP2_SETTINGS_ENABLE_PUSH, 2); }, conn, PROTOCOL});
  c.push_back({"6.5.2", "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 is a connection error FLOW_CONTROL_ERROR",
               [] { return settings(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0x80000000u); }, conn, FLOW});
  c.push_back({"6.5.2", "SETTINGS_MAX_FRAME_SIZE below 16384 is a connection error PROTOCOL_ERROR",
               [] { return settings(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16383); }, conn, PROTOCOL});
  c.push_back({"6.5.2", "SETTINGS_MAX_FRAME_SIZE above 2^24-1 is a connection error PROTOCOL_ERROR",
               [] { return settings(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1u << 24); }, conn, PROTOCOL});
  c.push_back({"6.5.2", "an unknown setting is ignored", [] { return settings(0xff, 1); }, Answer::serves, 0, 0, 1});
  c.push_back({"6.5.3", "SETTINGS are acknowledged", [] { return settings(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 10); },
               Answer::serves, 0, 0, 1, nullptr, [](const ServerFrames& f) { EXPECT_GE(f.settings_acks, 2u); }});
  // §6.7 PING
  c.push_back({"6.7", "a PING is answered with an ACK carrying its payload",
               [] { return frame(NGHTTP2_PING, 0, 0, "weft-pin"); }, Answer::serves, 0, 0, 1, nullptr,
               [](const ServerFrames& f) {
                 bool acked = false;
                 for (const auto& fr : f.frames) acked |= fr.type == NGHTTP2_PING && fr.flags == NGHTTP2_FLAG_ACK && fr.payload == "weft-pin";
                 EXPECT_TRUE(acked);
               }});
  c.push_back({"6.7", "a PING ACK is not answered", [] { return frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, "weft-ack"); },
               Answer::serves, 0, 0, 1, nullptr, [](const ServerFrames& f) { EXPECT_EQ(f.count(NGHTTP2_PING), 0u); }});
  c.push_back({"6.7", "PING on a stream is a connection error PROTOCOL_ERROR",
               [] { return frame(NGHTTP2_PING, 0, 1, "12345678"); }, conn, PROTOCOL});
  c.push_back({"6.7", "PING of another length than 8 is a connection error FRAME_SIZE_ERROR",
               [] { return frame(NGHTTP2_PING, 0, 0, "1234567"); }, conn, FRAME_SIZE});
  // §6.8 GOAWAY
  c.push_back({"6.8", "GOAWAY on a stream is a connection error PROTOCOL_ERROR",
               [] { return frame(NGHTTP2_GOAWAY, 0, 1, u32(0) + u32(0)); }, conn, PROTOCOL});
  // §6.9 WINDOW_UPDATE
  c.push_back({"6.9", "a connection WINDOW_UPDATE of 0 is a connection error PROTOCOL_ERROR",
               [] { return window_update(0, 0); }, conn, PROTOCOL});
  c.push_back({"6.9", "a stream WINDOW_UPDATE of 0 is an error PROTOCOL_ERROR",
               [] { return post_never(1) + window_update(1, 0); }, Answer::either_error, PROTOCOL, 1, 3});
  c.push_back({"6.9", "WINDOW_UPDATE of another length than 4 is a connection error FRAME_SIZE_ERROR",
               [] { return frame(NGHTTP2_WINDOW_UPDATE, 0, 0, "abc"); }, conn, FRAME_SIZE});
  c.push_back({"6.9.1", "a connection window past 2^31-1 is a connection error FLOW_CONTROL_ERROR",
               [] { return window_update(0, 0x7fffffffu); }, conn, FLOW});
  c.push_back({"6.9.1", "a stream window past 2^31-1 is a stream error FLOW_CONTROL_ERROR",
               [] { return post_never(1) + window_update(1, 0x7fffffffu); }, strm, FLOW, 1, 3});
  c.push_back({"6.9.2", "SETTINGS_INITIAL_WINDOW_SIZE pushing a stream window past 2^31-1 is a connection error FLOW_CONTROL_ERROR",
               [] { return post_never(1) + window_update(1, 0x7fffffffu - 65535) + settings(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536); },
               conn, FLOW});
  // §6.10 CONTINUATION
  c.push_back({"6.10", "CONTINUATION after END_HEADERS is a connection error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/hold")) + frame(NGHTTP2_CONTINUATION, kEH, 1, ""); }, conn, PROTOCOL});
  c.push_back({"6.10", "CONTINUATION on another stream is a connection error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext"), kES) + frame(NGHTTP2_CONTINUATION, kEH, 3, ""); }, conn, PROTOCOL});
  // §8.1 HTTP message framing
  c.push_back({"8.1", "trailers without END_STREAM are a stream error PROTOCOL_ERROR",
               [] { return post_never(1) + data(1, 4) + trailers(1, kEH); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.1.1", "DATA longer than content-length is a stream error PROTOCOL_ERROR",
               [] { return post_never(1, literal("content-length", "5")) + data(1, 10, kES); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.1.1", "DATA shorter than content-length is a stream error PROTOCOL_ERROR",
               [] { return post_never(1, literal("content-length", "5")) + data(1, 3, kES); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.1.1", "content-length with no DATA is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("POST", "/never", literal("content-length", "5"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.1.1", "DATA longer than content-length, then trailers: reset, never dispatched",
               [] { return post_never(1, literal("content-length", "5")) + data(1, 10) + trailers(1); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.1.1", "DATA shorter than content-length, ended by trailers: reset, never dispatched",
               [] { return post_never(1, literal("content-length", "100")) + data(1, 10) + trailers(1); }, strm, PROTOCOL, 1, 3});
  // §8.2 HTTP fields
  c.push_back({"8.2", "an uppercase field name is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal("X-Upper", "1"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.2.1", "a field value with CR, LF or NUL is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal("x-bad", std::string("a\nb")))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.2.2", "a connection-specific field is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal("connection", "keep-alive"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.2.2", "TE other than trailers is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal("te", "gzip"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.2.2", "TE: trailers is allowed",
               [] { return headers(1, request_block("GET", "/plaintext", literal("te", "trailers"))); }, Answer::serves, 0, 0, 3,
               nullptr, [](const ServerFrames& f) { EXPECT_EQ(f.status.count(1), 1u); }});
  // §8.3 pseudo-headers
  c.push_back({"8.3", "an unknown pseudo-header is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal(":foo", "bar"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3", "a response pseudo-header in a request is a stream error PROTOCOL_ERROR",
               [] { return headers(1, request_block("GET", "/never", literal(":status", "200"))); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3", "a pseudo-header in trailers is a stream error PROTOCOL_ERROR",
               [] { return post_never(1) + frame(NGHTTP2_HEADERS, kEH | kES, 1, literal(":path", "/")); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3", "a pseudo-header after a regular field is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "GET"}, {":scheme", "http"}, {"x-a", "1"}, {":path", "/never"}})); },
               strm, PROTOCOL, 1, 3});
  c.push_back({"8.3.1", "a repeated :path is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "GET"}, {":scheme", "http"}, {":path", "/never"}, {":path", "/never"}})); },
               strm, PROTOCOL, 1, 3});
  c.push_back({"8.3.1", "no :method is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":scheme", "http"}, {":path", "/never"}})); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3.1", "no :scheme is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "GET"}, {":path", "/never"}})); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3.1", "no :path is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "GET"}, {":scheme", "http"}})); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.3.1", "an empty :path is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "GET"}, {":scheme", "http"}, {":path", ""}})); }, strm, PROTOCOL, 1, 3});
  c.push_back({"8.5", "CONNECT with :scheme and :path is a stream error PROTOCOL_ERROR",
               [] { return headers(1, block_of({{":method", "CONNECT"}, {":authority", "a:1"}, {":scheme", "http"}, {":path", "/never"}})); },
               strm, PROTOCOL, 1, 3});
  // RFC 7541 (HPACK): every decoding error is a connection error COMPRESSION_ERROR (RFC 9113 4.3)
  c.push_back({"7541/2.3.3", "an index past the tables is a COMPRESSION_ERROR", [] { return headers(1, "\x82\x86\x84\xbe"); },
               conn, COMPRESSION});
  c.push_back({"7541/6.1", "index 0 is a COMPRESSION_ERROR", [] { return headers(1, std::string("\x80", 1)); }, conn, COMPRESSION});
  c.push_back({"7541/4.2", "a table size update above SETTINGS_HEADER_TABLE_SIZE is a COMPRESSION_ERROR",
               [] { return headers(1, std::string("\x3f\xe1\x3f", 3) + request_block("GET", "/plaintext")); }, conn, COMPRESSION});
  c.push_back({"7541/4.2", "a table size update after a field is a COMPRESSION_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext") + "\x20"); }, conn, COMPRESSION});
  c.push_back({"7541/5.1", "an integer past 2^32 is a COMPRESSION_ERROR",
               [] { return headers(1, std::string("\x0f\xff\xff\xff\xff\xff\xff\x7f", 8)); }, conn, COMPRESSION});
  c.push_back({"7541/5.2", "a string longer than the block is a COMPRESSION_ERROR",
               [] { return headers(1, std::string("\x00\x7e", 2) + "abc"); }, conn, COMPRESSION});
  c.push_back({"7541/5.2", "a Huffman string holding EOS is a COMPRESSION_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext") + huffman_value("\xff\xff\xff\xff")); }, conn, COMPRESSION});
  c.push_back({"7541/5.2", "Huffman padding longer than 7 bits is a COMPRESSION_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext") + huffman_value("\x1f\xff")); }, conn, COMPRESSION});
  c.push_back({"7541/5.2", "Huffman padding that is not EOS's prefix is a COMPRESSION_ERROR",
               [] { return headers(1, request_block("GET", "/plaintext") + huffman_value("\x18")); }, conn, COMPRESSION});
  return c;
}

// ---- the peer ------------------------------------------------------------------------------------

// ---- the server under test ---------------------------------------------------------------------

class Http2ConformanceTest : public test::H2MatrixTest {
 protected:
  void SetUp() override {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
    router->get("/hold", [](Context&, HttpRequest&) {});  // never answered: the stream stays open
    auto never = [this](Context& ctx, HttpRequest&) {
      never_dispatched_.fetch_add(1);
      ctx.write(HttpResponse(200).body_view("a request that broke a rule reached the application"));
    };
    router->get("/never", never);
    router->post("/never", never);
    serve(router);
  }

  void run(const Case& c) {
    SCOPED_TRACE(std::string("RFC 9113 ") + c.section + ": " + c.rule);
    const int dispatched_before = never_dispatched_.load();
    test::RawH2Connection conn(port(), tls());
    ASSERT_TRUE(conn.is_open());
    // The empty SETTINGS, and the ACK of the server's (which it sends first).
    const std::string preface = test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
    ASSERT_TRUE(conn.send(c.own_preface ? c.frames() : preface + c.frames()));
    ServerFrames f;
    if (c.then) {
      const std::uint32_t s = c.stream;
      ASSERT_TRUE(conn.read_until(f, [s](const ServerFrames& fr) { return fr.ended.count(s) || fr.resets.count(s); }))
          << "stream " << s << " was neither answered nor reset";
      ASSERT_TRUE(conn.send(c.then()));
    }
    switch (c.answer) {
      case Answer::connection_error:
        conn.read_until(f, [](const ServerFrames&) { return false; });  // to the end
        EXPECT_TRUE(conn.eof()) << "the connection must close";
        ASSERT_TRUE(f.goaway.has_value()) << "no GOAWAY";
        EXPECT_EQ(*f.goaway, c.code) << "GOAWAY's code";
        break;
      case Answer::either_error:
      case Answer::stream_error: {
        const std::uint32_t s = c.stream;
        conn.read_until(f, [s](const ServerFrames& fr) { return fr.resets.count(s) || fr.goaway; });
        if (c.answer == Answer::either_error && f.goaway) {
          EXPECT_EQ(*f.goaway, c.code) << "GOAWAY's code";
          break;
        }
        ASSERT_EQ(f.resets.count(s), 1u) << "no RST_STREAM on stream " << s;
        EXPECT_EQ(f.resets[s], c.code) << "RST_STREAM's code";
        EXPECT_FALSE(f.goaway.has_value()) << "a stream error must not end the connection";
        if (c.next != 0) expect_served(conn, f, c.next);
        break;
      }
      case Answer::serves:
        expect_served(conn, f, c.next);
        EXPECT_FALSE(f.goaway.has_value());
        break;
    }
    if (c.check) c.check(f);
    EXPECT_EQ(never_dispatched_.load(), dispatched_before) << "a request that broke a rule reached the application";
  }

  void expect_served(test::RawH2Connection& conn, ServerFrames& f, std::uint32_t id) {
    ASSERT_TRUE(conn.send(get(id)));
    ASSERT_TRUE(conn.read_until(f, [id](const ServerFrames& fr) { return fr.ended.count(id) || fr.goaway; }))
        << "stream " << id << " was not answered";
    EXPECT_EQ(f.status[id], 200) << "stream " << id;
    EXPECT_EQ(f.data[id], "Hello, World!") << "stream " << id;
  }

  std::atomic<int> never_dispatched_{0};
};

TEST_P(Http2ConformanceTest, EveryServerRuleIsAnsweredAsTheRfcSays) {
  for (const Case& c : server_cases()) run(c);
}

WEFT_H2_ON_EVERY_TRANSPORT(Http2ConformanceTest);

// §3.4 on the port that tells HTTP/1.1 from h2c by the first bytes: HTTP/2's request line with the
// rest of the preface wrong is answered as HTTP/2's connection error, not as an HTTP/1.1 request.
class Http2DetectedPrefaceTest : public test::TransportTest {};

TEST_P(Http2DetectedPrefaceTest, AWrongPrefaceAfterHttp2sRequestLineGetsGoawayProtocolError) {
  EventLoopGroup group(transport(), loops(1, 3));
  auto router = std::make_shared<http::Router>();
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([router](Channel& ch) {
                            ch.pipeline().add_last("detect", std::make_shared<CleartextDetector>());
                            ch.pipeline().add_last("router", router);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  test::RawH2Connection conn(server->local_address().port(), false);
  ASSERT_TRUE(conn.send(std::string("PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n") + frame(NGHTTP2_SETTINGS, 0, 0, "")));
  ServerFrames f;
  conn.read_until(f, [](const ServerFrames&) { return false; });
  EXPECT_TRUE(conn.eof());
  ASSERT_TRUE(f.goaway.has_value()) << "no GOAWAY";
  EXPECT_EQ(*f.goaway, std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  server->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(Http2DetectedPrefaceTest);

}  // namespace
}  // namespace weft::http2
