// RFC 9113 conformance of weft's own HTTP/2 server session (src/codec/http2/session.cc), played by
// a hostile client with raw frames (h2spec's ground): each rule broken is answered as the RFC says,
// a connection error with GOAWAY(code) and the connection closed, or a stream error with
// RST_STREAM(code) and the connection still serving the next request.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/h2_frames.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/http2/server_codec.h"

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::frame;
using test::indexed_literal;
using test::kGetBlock;
using test::literal;
using test::raw_preface;
using test::request_block;
using test::ServerFrames;
using test::setting;
using test::u32;

constexpr std::uint8_t kEndHeaders = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kEndStream = NGHTTP2_FLAG_END_STREAM;
constexpr std::uint8_t kPadded = NGHTTP2_FLAG_PADDED;
constexpr std::uint8_t kPriority = NGHTTP2_FLAG_PRIORITY;

std::shared_ptr<http::Router> router() {
  auto r = std::make_shared<http::Router>();
  r->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
  r->post("/echo", [](Context& ctx, HttpRequest& request) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
  });
  r->get("/hold", [](Context&, HttpRequest&) {});  // never answered: the stream stays open
  r->get("/big", [](Context& ctx, HttpRequest& request) {
    const std::size_t n = std::stoul(std::string(request.query().substr(2)));  // ?n=...
    ctx.write(HttpResponse(200).body(std::string(n, 'b')));
  });
  r->get("/bigheader", [](Context& ctx, HttpRequest&) {
    ctx.write(HttpResponse(200).header("x-big", std::string(40 * 1024, 'h')).body_view("ok"));
  });
  r->get("/bye", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("bye").close_connection()); });
  return r;
}

// The codec in an EmbeddedChannel; what it writes is read into `frames`.
struct Conn {
  explicit Conn(Settings settings = {}, std::optional<std::uint32_t> table_size = std::nullopt)
      : frames({}, table_size) {
    settings.idle_timeout = std::chrono::hours(1);
    ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
    ch.pipeline().add_last("app", router());
  }
  void send(std::string_view bytes) {
    if (ch.is_open()) ch.write_inbound(ByteBuf::copy_of(bytes));
    read();
  }
  void read() {
    while (auto b = ch.read_outbound<ByteBuf>()) frames.feed(b->to_string());
  }
  // A connection error: GOAWAY(code), then the connection closes.
  void expect_connection_error(std::uint32_t code) {
    EXPECT_EQ(frames.goaway, code);
    EXPECT_FALSE(ch.is_open());
  }
  // GET /plaintext on stream `id` is answered: the connection serves on.
  void expect_serves(std::uint32_t id) {
    send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, id, request_block("GET", "/plaintext")));
    EXPECT_EQ(frames.status[id], 200) << "stream " << id;
    EXPECT_EQ(frames.data[id], "Hello, World!") << "stream " << id;
    EXPECT_FALSE(frames.goaway.has_value());
    EXPECT_TRUE(ch.is_open());
  }
  // A stream error: RST_STREAM(code) on `id`, no GOAWAY, and stream `next` is served.
  void expect_stream_error(std::uint32_t id, std::uint32_t code, std::uint32_t next) {
    ASSERT_TRUE(frames.resets.count(id)) << "no RST_STREAM on " << id;
    EXPECT_EQ(frames.resets[id], code);
    EXPECT_FALSE(frames.status.count(id)) << "the request was not served";
    expect_serves(next);
  }
  EmbeddedChannel ch;
  ServerFrames frames;
};

// ---- the preface ----------------------------------------------------------------------------------

TEST(Http2SessionTest, ABadMagicClosesTheConnection) {
  Conn c;
  c.send("PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n" + test::frame(NGHTTP2_SETTINGS, 0, 0, ""));
  EXPECT_FALSE(c.ch.is_open());
  EXPECT_TRUE(c.frames.status.empty());
  if (c.frames.goaway) {
    EXPECT_EQ(*c.frames.goaway, std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  }
}

TEST(Http2SessionTest, AFirstFrameOtherThanSettingsIsAProtocolError) {
  Conn c;
  c.send(std::string(test::kH2Preface) + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, kGetBlock));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(c.frames.status.empty());
}

TEST(Http2SessionTest, ASettingsAckAsTheFirstFrameIsAProtocolError) {
  Conn c;
  c.send(std::string(test::kH2Preface) + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

// ---- frame sizes ----------------------------------------------------------------------------------

// A PADDED HEADERS payload of exactly `size` bytes: 255 bytes of padding and a GET /plaintext with
// an x: vvv... field that fills the rest.
std::string headers_payload_of(std::size_t size) {
  std::string p = std::string(1, static_cast<char>(255)) + request_block("GET", "/plaintext");
  const std::size_t value = size - p.size() - 255 - 6;  // 6: the literal's own bytes
  p += std::string("\x00\x01x\x7f", 4) + static_cast<char>(0x80 | ((value - 127) & 0x7f)) +
       static_cast<char>((value - 127) >> 7) + std::string(value, 'v') + std::string(255, '\0');
  return p;
}

TEST(Http2SessionTest, AFrameLargerThanMaxFrameSizeIsAFrameSizeError) {
  Conn c;
  const std::string payload = headers_payload_of(16385);  // one over the default SETTINGS_MAX_FRAME_SIZE
  ASSERT_EQ(payload.size(), 16385u);
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream | kPadded, 1, payload));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
  EXPECT_TRUE(c.frames.status.empty());
}

TEST(Http2SessionTest, AFrameOfExactlyMaxFrameSizeIsServed) {
  Conn c;
  const std::string payload = headers_payload_of(16384);
  ASSERT_EQ(payload.size(), 16384u);
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream | kPadded, 1, payload));
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_TRUE(c.ch.is_open());
}

TEST(Http2SessionTest, APingOfSevenBytesIsAFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_PING, 0, 0, "1234567"));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
  EXPECT_EQ(c.frames.count(NGHTTP2_PING), 0u);
}

TEST(Http2SessionTest, SettingsOfALengthNotAMultipleOfSixIsAFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 0) + "x"));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
}

TEST(Http2SessionTest, ASettingsAckWithAPayloadIsAFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
}

TEST(Http2SessionTest, AWindowUpdateOfThreeBytesIsAFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_WINDOW_UPDATE, 0, 0, "\x00\x00\x01"));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
}

TEST(Http2SessionTest, ARstStreamOfFiveBytesIsAFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/hold")) +
         frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_CANCEL) + "x"));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
}

TEST(Http2SessionTest, APriorityOfFourBytesIsAStreamFrameSizeError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/hold")) +
         frame(NGHTTP2_PRIORITY, 0, 1, u32(0)));
  c.expect_stream_error(1, NGHTTP2_FRAME_SIZE_ERROR, 3);
}

// RFC 9113 6.3 makes it a stream error, but RST_STREAM may not be sent on an idle stream (6.4): a
// connection error, as 5.4.1 allows.
TEST(Http2SessionTest, APriorityOfFourBytesOnAnIdleStreamIsAConnectionError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_PRIORITY, 0, 5, u32(0)));
  c.expect_connection_error(NGHTTP2_FRAME_SIZE_ERROR);
  EXPECT_FALSE(c.frames.resets.count(5));
}

TEST(Http2SessionTest, AValidPriorityOnAnIdleStreamIsIgnored) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_PRIORITY, 0, 9, u32(0) + "\x10"));
  c.expect_serves(1);
  EXPECT_TRUE(c.frames.resets.empty());
}

// ---- stream ids -----------------------------------------------------------------------------------

TEST(Http2SessionTest, HeadersOnStreamZeroIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 0, kGetBlock));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, HeadersOnAnEvenStreamIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 2, kGetBlock));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(c.frames.status.empty());
}

// RFC 9113 5.1.1: a new stream id lower than one already used is a PROTOCOL_ERROR. The session
// tells it from a stream it reset (whose late frames 5.1 says to ignore) by its record of the
// client's recent streams.
TEST(Http2SessionTest, HeadersOnALowerNeverUsedStreamIdAreAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 5, request_block("GET", "/plaintext")));
  ASSERT_EQ(c.frames.status[5], 200);
  c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/plaintext")));
  EXPECT_FALSE(c.frames.status.count(3));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

// Past the record (the last 64 streams), how a stream ended is forgotten: trailers on a stream the
// server reset long ago are decoded for HPACK's sake and dropped, as nghttp2 does, and the
// connection serves on.
TEST(Http2SessionTest, TrailersOnAStreamResetLongAgoAreDroppedAndHpackStaysInStep) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo", literal("content-length", "1"))) +
         frame(NGHTTP2_DATA, 0, 1, "too long"));
  ASSERT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  for (std::uint32_t id = 3; id <= 3 + 2 * 70; id += 2) {
    c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, id, request_block("GET", "/plaintext")));
    ASSERT_EQ(c.frames.status[id], 200) << id;
  }
  // Trailers on stream 1 add "x-late: 1" to the dynamic table.
  c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, indexed_literal("x-late", "1")));
  // Stream 145 refers to it (index 62): decoded, so the table was kept in step.
  c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 145, request_block("GET", "/plaintext") + "\xbe"));
  EXPECT_EQ(c.frames.status[145], 200);
  EXPECT_FALSE(c.frames.goaway.has_value());
}

TEST(Http2SessionTest, DataOnAnIdleStreamIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_DATA, 0, 1, "x"));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, DataOnAnUnopenedEvenStreamIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/plaintext")) +
         frame(NGHTTP2_DATA, 0, 2, "x"));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, RstStreamOnAnIdleStreamIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_CANCEL)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, WindowUpdateOnAnIdleStreamIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(100)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, DataAfterTheServerResetTheStreamIsIgnored) {
  Conn c;
  // POST with a malformed field and no END_STREAM: reset; the client's DATA already in flight (in
  // the same read, then in a later one, once the reset left) is dropped.
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo", literal("Bad", "x"))) +
         frame(NGHTTP2_DATA, 0, 1, std::string(1000, 'd')));
  EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  c.send(frame(NGHTTP2_DATA, 0, 1, std::string(1000, 'd')) + frame(NGHTTP2_DATA, kEndStream, 1, "d"));
  c.expect_serves(3);
  EXPECT_EQ(c.frames.resets.size(), 1u);
}

TEST(Http2SessionTest, AWindowUpdateAfterTheStreamClosedIsIgnored) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/plaintext")));
  ASSERT_TRUE(c.frames.ended[1]);
  c.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(1000)) + frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_CANCEL)) +
         frame(NGHTTP2_PRIORITY, 0, 1, u32(0) + "\x10"));
  c.expect_serves(3);
  EXPECT_TRUE(c.frames.resets.empty());
}

// ---- CONTINUATION ---------------------------------------------------------------------------------

TEST(Http2SessionTest, AFrameInsideAHeaderBlockIsAProtocolError) {
  Conn c;
  const std::string block = request_block("GET", "/plaintext");
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndStream, 1, block.substr(0, 5)) +
         frame(NGHTTP2_PING, 0, 0, "12345678") + frame(NGHTTP2_CONTINUATION, kEndHeaders, 1, block.substr(5)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_EQ(c.frames.count(NGHTTP2_PING), 0u);
  EXPECT_TRUE(c.frames.status.empty());
}

TEST(Http2SessionTest, AContinuationOnAnotherStreamIsAProtocolError) {
  Conn c;
  const std::string block = request_block("GET", "/plaintext");
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndStream, 1, block.substr(0, 5)) +
         frame(NGHTTP2_CONTINUATION, kEndHeaders, 3, block.substr(5)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(c.frames.status.empty());
}

TEST(Http2SessionTest, AContinuationWithoutHeadersIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_CONTINUATION, kEndHeaders, 1, request_block("GET", "/plaintext")));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, AContinuationAfterEndHeadersIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_CONTINUATION, kEndHeaders, 1, literal("x-late", "1")));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, AHeaderBlockOverSeveralContinuationsDecodes) {
  Conn c;
  const std::string block = request_block("POST", "/echo", literal("x-a", "1") + literal("x-b", "2"));
  std::string bytes = raw_preface() + frame(NGHTTP2_HEADERS, 0, 1, block.substr(0, 10)) +
                      frame(NGHTTP2_CONTINUATION, 0, 1, block.substr(10, 10)) +
                      frame(NGHTTP2_CONTINUATION, 0, 1, "") +  // empty pieces are allowed
                      frame(NGHTTP2_CONTINUATION, kEndHeaders, 1, block.substr(20)) +
                      frame(NGHTTP2_DATA, kEndStream, 1, "body");
  c.send(bytes);
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_EQ(c.frames.data[1], "body");
  c.expect_serves(3);
}

TEST(Http2SessionTest, AHeaderBlockOneBytePerFrameDecodes) {
  Conn c;
  // Nine bytes: HEADERS + 8 CONTINUATION frames (the most a block may have).
  const std::string block = std::string("\x82\x86\x84\x01\x04", 5) + "a.bc";
  ASSERT_EQ(block.size(), 9u);
  std::string bytes = raw_preface() + frame(NGHTTP2_HEADERS, kEndStream, 1, block.substr(0, 1));
  for (std::size_t i = 1; i < block.size(); ++i) {
    bytes += frame(NGHTTP2_CONTINUATION, i + 1 == block.size() ? kEndHeaders : 0, 1, block.substr(i, 1));
  }
  c.send(bytes);
  EXPECT_EQ(c.frames.status[1], 404);  // GET / is no route: served all the same
  EXPECT_TRUE(c.ch.is_open());
  c.expect_serves(3);
}

TEST(Http2SessionTest, PaddingAndPriorityOnHeadersAreSkipped) {
  Conn c;
  const std::string block = request_block("GET", "/plaintext");
  // PADDED | PRIORITY: pad length 7, stream dependency 0 (exclusive bit set), weight 200, block, padding.
  const std::string payload = std::string(1, '\x07') + u32(0x80000000u) + "\xc8" + block + std::string(7, '\0');
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream | kPadded | kPriority, 1, payload));
  EXPECT_EQ(c.frames.status[1], 200);
  // ... split over a CONTINUATION as well (the padding stays in the HEADERS frame).
  const std::string p3 = std::string(1, '\x03') + block.substr(0, 4) + std::string(3, '\0');
  c.send(frame(NGHTTP2_HEADERS, kEndStream | kPadded, 3, p3) + frame(NGHTTP2_CONTINUATION, kEndHeaders, 3, block.substr(4)));
  EXPECT_EQ(c.frames.status[3], 200);
  c.expect_serves(5);
}

TEST(Http2SessionTest, HeadersPaddingLongerThanThePayloadIsAProtocolError) {
  Conn c;
  const std::string block = request_block("GET", "/plaintext");
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream | kPadded, 1,
                               std::string(1, static_cast<char>(block.size() + 1)) + block));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, AStreamDependingOnItselfIsAStreamError) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream | kPriority, 1, u32(1) + "\x10" + request_block("GET", "/plaintext")));
  c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
}

// ---- DATA padding ---------------------------------------------------------------------------------

TEST(Http2SessionTest, DataPaddingIsSkippedAndItsWindowReturned) {
  Conn c;
  // 250 DATA frames of 256 bytes: 1 byte of body, 254 of padding: 64,000 bytes of the stream's and
  // the connection's windows, 250 of them body.
  std::string bytes = raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo"));
  std::string body;
  for (int i = 0; i < 250; ++i) {
    const char b = static_cast<char>('a' + i % 26);
    body += b;
    bytes += frame(NGHTTP2_DATA, kPadded, 1, std::string(1, '\xfe') + b + std::string(254, '\0'));
  }
  c.send(bytes);
  EXPECT_TRUE(c.frames.resets.empty());
  // The windows were returned with the padding: both got back at least what exceeded half a window.
  EXPECT_GE(c.frames.window_updates[0], 64000u - 32767u);
  EXPECT_GE(c.frames.window_updates[1], 64000u - 32767u) << "the stream's padding was not returned";
  // Another 64,000 bytes fit only if they were.
  bytes.clear();
  for (int i = 0; i < 250; ++i) {
    const char b = static_cast<char>('A' + i % 26);
    body += b;
    bytes += frame(NGHTTP2_DATA, kPadded, 1, std::string(1, '\xfe') + b + std::string(254, '\0'));
  }
  c.send(bytes + frame(NGHTTP2_DATA, kPadded | kEndStream, 1, std::string(1, '\x05') + "!" + std::string(5, '\0')));
  body += "!";
  EXPECT_TRUE(c.frames.resets.empty());
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_TRUE(c.frames.data[1] == body) << c.frames.data[1].size() << " bytes";
  c.expect_serves(3);
}

TEST(Http2SessionTest, DataPaddingAsLongAsTheFrameIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, kPadded | kEndStream, 1, std::string(1, '\x05') + "abcd"));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(c.frames.status.empty());
}

TEST(Http2SessionTest, DataThatIsAllPaddingIsServed) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, kPadded, 1, std::string(1, '\x04') + std::string(4, '\0')) +
         frame(NGHTTP2_DATA, kPadded | kEndStream, 1, std::string(1, '\x00') + "xy"));
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_EQ(c.frames.data[1], "xy");
}

TEST(Http2SessionTest, PaddedDataWithoutItsPadLengthIsAnError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, kPadded | kEndStream, 1, ""));
  EXPECT_TRUE(c.frames.goaway == std::uint32_t{NGHTTP2_FRAME_SIZE_ERROR} ||
              c.frames.goaway == std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  EXPECT_FALSE(c.ch.is_open());
}

// ---- the request's fields: each a stream error (RST_STREAM(PROTOCOL_ERROR)) ------------------------

struct Malformed {
  const char* what;
  std::string block;
  bool end_stream = true;
};

std::vector<Malformed> malformed_requests() {
  const std::string path = literal(":path", "/plaintext");
  const std::string authority = "\x01\x0ctest.example";
  return {
      {"an uppercase name", request_block("GET", "/plaintext", literal("X-Upper", "1"))},
      {"a name with a space", request_block("GET", "/plaintext", literal("x y", "1"))},
      {"an empty name", request_block("GET", "/plaintext", literal("", "1"))},
      {"a pseudo-header after a regular field", "\x82\x86" + literal("x-a", "1") + path + authority},
      {"an unknown pseudo-header", request_block("GET", "/plaintext", literal(":bogus", "1"))},
      {"a response pseudo-header", "\x82\x86" + path + literal(":status", "200") + authority},
      {"a duplicated :path", "\x82\x86" + path + path + authority},
      {"a duplicated :method", "\x82\x82\x86" + path + authority},
      {"no :method", "\x86" + path + authority},
      {"no :scheme", "\x82" + path + authority},
      {"no :path", std::string("\x82\x86") + authority},
      {"an empty :path", "\x82\x86" + literal(":path", "") + authority},
      {"connection:", request_block("GET", "/plaintext", literal("connection", "keep-alive"))},
      {"keep-alive:", request_block("GET", "/plaintext", literal("keep-alive", "timeout=5"))},
      {"transfer-encoding:", request_block("GET", "/plaintext", literal("transfer-encoding", "chunked"))},
      {"upgrade:", request_block("GET", "/plaintext", literal("upgrade", "h2c"))},
      {"proxy-connection:", request_block("GET", "/plaintext", literal("proxy-connection", "close"))},
      {"te: gzip", request_block("GET", "/plaintext", literal("te", "gzip"))},
      {"te: trailers, gzip", request_block("GET", "/plaintext", literal("te", "trailers, gzip"))},
      {"a value with CR", request_block("GET", "/plaintext", literal("x-a", "a\rb"))},
      {"a value with LF", request_block("GET", "/plaintext", literal("x-a", "a\nb"))},
      {"a value with NUL", request_block("GET", "/plaintext", literal("x-a", std::string("a\0b", 3)))},
      {"a long value with NUL", request_block("GET", "/plaintext", literal("x-a", std::string(20, 'a') + '\0' + "bc"))},
      {"a value with a leading space", request_block("GET", "/plaintext", literal("x-a", " ab"))},
      {"a value with a trailing tab", request_block("GET", "/plaintext", literal("x-a", "ab\t"))},
      {"a :path with CR", "\x82\x86" + literal(":path", "/plain\rtext") + authority},
      {"content-length not a number", request_block("GET", "/plaintext", literal("content-length", "1x"))},
      {"content-length with GET and no DATA", request_block("GET", "/plaintext", literal("content-length", "5"))},
      {"CONNECT with :path", literal(":method", "CONNECT") + "\x86" + path + authority},
      {"CONNECT without :authority", literal(":method", "CONNECT")},
  };
}

TEST(Http2SessionTest, MalformedRequestsAreStreamErrors) {
  for (const Malformed& m : malformed_requests()) {
    SCOPED_TRACE(m.what);
    Conn c;
    c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | (m.end_stream ? kEndStream : 0), 1, m.block));
    c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
  }
}

// The server checks a field's bytes once, when the client first sends it: a dynamic table entry that
// failed them fails every reference to it, and one that passed serves every reference.
TEST(Http2SessionTest, AMalformedFieldInTheDynamicTableIsRefusedEachTimeItIsReferenced) {
  const std::pair<const char*, const char*> fields[] = {
      {"X-Upper", "1"}, {"x y", "1"},     {"connection", "close"},  {"te", "gzip"},
      {"x-a", "a\rb"},  {"x-a", " lead"}, {"content-length", "1x"}, {"upgrade", "h2c"}};
  for (const auto& [name, value] : fields) {
    SCOPED_TRACE(std::string(name) + ": " + value);
    Conn c;
    c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1,
                                 request_block("GET", "/plaintext", indexed_literal(name, value))));
    c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
    // 0xbe: index 62, the table's only entry (request_block's fields are not indexed).
    c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 5, request_block("GET", "/plaintext", "\xbe")));
    c.expect_stream_error(5, NGHTTP2_PROTOCOL_ERROR, 7);
  }
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1,
                               request_block("GET", "/plaintext", indexed_literal("x-a", "1"))));
  EXPECT_EQ(c.frames.status[1], 200);
  for (std::uint32_t id = 3; id <= 7; id += 2) {
    c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, id, request_block("GET", "/plaintext", "\xbe")));
    EXPECT_EQ(c.frames.status[id], 200) << "stream " << id;
  }
  EXPECT_TRUE(c.frames.resets.empty());
  // A pseudo-header's place is checked on every reference: the indexed :path, then after a field.
  Conn p;
  p.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1,
                               "\x82\x86" + indexed_literal(":path", "/plaintext") + "\x01\x0ctest.example"));
  EXPECT_EQ(p.frames.status[1], 200);
  p.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, "\x82\x86\x01\x0ctest.example\xbe" + literal("x-b", "1")));
  EXPECT_EQ(p.frames.status[3], 200);
  p.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 5,
               "\x82\x86" + literal("x-b", "1") + "\xbe\x01\x0ctest.example"));
  p.expect_stream_error(5, NGHTTP2_PROTOCOL_ERROR, 7);
}

TEST(Http2SessionTest, WellFormedOddRequestsAreServed) {
  struct Ok {
    const char* what;
    std::string extra;
  };
  const std::vector<Ok> ok = {{"te: trailers", literal("te", "trailers")},
                              {"an empty value", literal("x-empty", "")},
                              {"inner whitespace", literal("x-a", "a \t b")},
                              {"obs-text", literal("x-a", "caf\xc3\xa9")},
                              {"a long plain value", literal("x-a", std::string(100, 'q'))}};
  for (const Ok& o : ok) {
    SCOPED_TRACE(o.what);
    Conn c;
    c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/plaintext", o.extra)));
    EXPECT_EQ(c.frames.status[1], 200);
    EXPECT_TRUE(c.frames.resets.empty());
  }
}

TEST(Http2SessionTest, ConnectWithAuthorityOnlyIsAccepted) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, literal(":method", "CONNECT") + "\x01\x0ctest.example"));
  EXPECT_FALSE(c.frames.resets.count(1) && c.frames.resets[1] == NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(c.frames.status.count(1)) << "the request reached the application";
  c.expect_serves(3);
}

TEST(Http2SessionTest, APseudoHeaderInTrailersIsAStreamError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, 0, 1, "abc") +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, literal(":path", "/x")));
  c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
}

TEST(Http2SessionTest, TrailersWithoutEndStreamAreAStreamError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, 0, 1, "abc") + frame(NGHTTP2_HEADERS, kEndHeaders, 1, literal("x-t", "1")));
  c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
}

TEST(Http2SessionTest, TrailersAreAccepted) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, 0, 1, "abc") + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, literal("x-t", "1")));
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_EQ(c.frames.data[1], "abc");
  c.expect_serves(3);
}

TEST(Http2SessionTest, DataShorterThanContentLengthIsAStreamError) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo", literal("content-length", "5"))) +
         frame(NGHTTP2_DATA, kEndStream, 1, "abc"));
  c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
}

TEST(Http2SessionTest, DataLongerThanContentLengthIsAStreamError) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo", literal("content-length", "5"))) +
         frame(NGHTTP2_DATA, 0, 1, "abc") + frame(NGHTTP2_DATA, 0, 1, "defg"));  // reset before END_STREAM
  c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
}

TEST(Http2SessionTest, DataOfExactlyContentLengthIsServed) {
  Conn c;
  c.send(raw_preface() +
         frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo", literal("content-length", "5"))) +
         frame(NGHTTP2_DATA, 0, 1, "abc") + frame(NGHTTP2_DATA, kEndStream, 1, "de"));
  EXPECT_EQ(c.frames.data[1], "abcde");
  EXPECT_TRUE(c.frames.resets.empty());
}

TEST(Http2SessionTest, TheFormOfPathAndMethodIsChecked) {
  struct Case {
    const char* what;
    std::string block;
    bool ok;
  };
  const std::string authority = "\x01\x0ctest.example";
  const std::vector<Case> cases = {
      {"a path without a leading slash", "\x82\x86" + literal(":path", "plaintext") + authority, false},
      {"an absolute URI as the path", "\x82\x86" + literal(":path", "http://evil.example/plaintext") + authority, false},
      {"* with GET", "\x82\x86" + literal(":path", "*") + authority, false},
      {"* with OPTIONS", literal(":method", "OPTIONS") + "\x86" + literal(":path", "*") + authority, true},
      {"a method with a space", literal(":method", "GE T") + "\x86" + literal(":path", "/plaintext") + authority, false},
      {"a method with a slash", literal(":method", "GET/") + "\x86" + literal(":path", "/plaintext") + authority, false},
      {"an extension method", literal(":method", "PURGE") + "\x86" + literal(":path", "/plaintext") + authority, true},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Conn c;
    c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, k.block));
    if (k.ok) {
      EXPECT_TRUE(c.frames.status.count(1));
      EXPECT_TRUE(c.frames.resets.empty());
    } else {
      c.expect_stream_error(1, NGHTTP2_PROTOCOL_ERROR, 3);
    }
  }
}

TEST(Http2SessionTest, HeadersOnAHalfClosedStreamAreAStreamClosedError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/hold")) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, literal("x-t", "1")));
  ASSERT_TRUE(c.frames.resets.count(1) || c.frames.goaway.has_value());
  if (c.frames.goaway) {
    c.expect_connection_error(NGHTTP2_STREAM_CLOSED);
  } else {
    EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_STREAM_CLOSED});
    c.expect_serves(3);
  }
}

TEST(Http2SessionTest, ATableSizeUpdateAfterAFieldIsACompressionError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, "\x82\x20\x86\x84\x01\x0ctest.example"));
  c.expect_connection_error(NGHTTP2_COMPRESSION_ERROR);
}

TEST(Http2SessionTest, ATableSizeUpdateAboveTheSettingIsACompressionError) {
  Conn c;
  // 4,097 > SETTINGS_HEADER_TABLE_SIZE 4,096: 0x3f then 4097 - 31 = 4066 in 7-bit groups.
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1,
                               std::string("\x3f\xe2\x1f", 3) + std::string(kGetBlock)));
  c.expect_connection_error(NGHTTP2_COMPRESSION_ERROR);
}

TEST(Http2SessionTest, AnIndexPastTheTablesIsACompressionError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, std::string(kGetBlock) + "\xbe"));
  c.expect_connection_error(NGHTTP2_COMPRESSION_ERROR);
}

// ---- flow control ---------------------------------------------------------------------------------

// The server's SETTINGS, acknowledged: a stream window of 1,000 bytes.
std::string acked_preface() { return raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""); }

TEST(Http2SessionTest, DataPastTheStreamWindowIsAStreamFlowControlError) {
  Settings settings;
  settings.initial_window_size = 1000;
  Conn c(settings);
  c.send(acked_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, 0, 1, std::string(1001, 'd')));
  c.expect_stream_error(1, NGHTTP2_FLOW_CONTROL_ERROR, 3);
}

TEST(Http2SessionTest, TheServersSettingsApplyOnceAcknowledged) {
  Settings settings;
  settings.initial_window_size = 1000;
  Conn c(settings);
  // Before the ACK the client may assume 65,535 (RFC 9113 6.9.2): 10,000 bytes are no error.
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, 0, 1, std::string(10000, 'd')));
  EXPECT_TRUE(c.frames.resets.empty());
  // With the ACK the client's window on stream 1 is 1,000 - 10,000: the server must give back what
  // it consumed, or the client can never finish.
  c.send(frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  EXPECT_GE(c.frames.window_updates[1], 9001u) << "the stream's window stays shut";
  c.send(frame(NGHTTP2_DATA, kEndStream, 1, "e"));
  EXPECT_TRUE(c.frames.resets.empty());
  EXPECT_TRUE(c.frames.data[1] == std::string(10000, 'd') + "e") << c.frames.data[1].size() << " bytes";
  // A stream opened after the ACK has 1,000.
  c.send(frame(NGHTTP2_HEADERS, kEndHeaders, 3, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, kEndStream, 3, std::string(1001, 'd')));
  c.expect_stream_error(3, NGHTTP2_FLOW_CONTROL_ERROR, 5);
}

TEST(Http2SessionTest, DataPastTheConnectionWindowIsAConnectionFlowControlError) {
  Settings settings;
  settings.initial_window_size = 1 << 20;
  settings.max_frame_size = 1 << 20;
  Conn c(settings);
  // The stream's window is 1 MiB, the connection's 65,535.
  c.send(acked_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_DATA, kEndStream, 1, std::string(65536, 'd')));
  c.expect_connection_error(NGHTTP2_FLOW_CONTROL_ERROR);
}

TEST(Http2SessionTest, AConnectionWindowPastTheMaximumIsAFlowControlError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(0x7fffffffu - 65535)));
  EXPECT_TRUE(c.ch.is_open());
  c.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(1)));
  c.expect_connection_error(NGHTTP2_FLOW_CONTROL_ERROR);
}

TEST(Http2SessionTest, AStreamWindowPastTheMaximumIsAStreamFlowControlError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/hold")) +
         frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(0x7fffffffu - 65535)));
  EXPECT_TRUE(c.frames.resets.empty());
  c.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(1)));
  c.expect_stream_error(1, NGHTTP2_FLOW_CONTROL_ERROR, 3);
}

TEST(Http2SessionTest, AnInitialWindowChangeMidStreamMovesTheSendWindow) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 100)) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/big?n=1000")));
  EXPECT_EQ(c.frames.data[1].size(), 100u);
  // 50: the window is 50 - 100 = -50; nothing may leave, not even after 40 more bytes of window.
  c.send(frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 50)) +
         frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(40)));
  EXPECT_EQ(c.frames.data[1].size(), 100u) << "sent on a negative window";
  c.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(20)));  // -10 + 20 = 10
  EXPECT_EQ(c.frames.data[1].size(), 110u);
  // 1,000: the window grows by 950.
  c.send(frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1000)));
  EXPECT_EQ(c.frames.data[1].size(), 1000u);
  EXPECT_TRUE(c.frames.ended[1]);
  EXPECT_EQ(c.frames.settings_acks, 4u);
  c.expect_serves(3);
}

TEST(Http2SessionTest, AnInitialWindowSizePastTheMaximumIsAFlowControlError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0x80000000u)));
  c.expect_connection_error(NGHTTP2_FLOW_CONTROL_ERROR);
}

TEST(Http2SessionTest, AnInitialWindowChangeThatOverflowsAStreamWindowIsAFlowControlError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/hold")) +
         frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(0x7fffffffu - 65535)) +
         frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536)));
  c.expect_connection_error(NGHTTP2_FLOW_CONTROL_ERROR);
}

TEST(Http2SessionTest, MaxFrameSizeOutOfRangeIsAProtocolError) {
  for (const std::uint32_t v : {16383u, 16777216u, 0u}) {
    SCOPED_TRACE(v);
    Conn c;
    c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, v)));
    c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  }
}

TEST(Http2SessionTest, EnablePushOfTwoIsAProtocolError) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 2)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

TEST(Http2SessionTest, UnknownSettingsAreIgnoredAndAcknowledged) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_SETTINGS, 0, 0, setting(0x99, 7) + setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 1)));
  EXPECT_EQ(c.frames.settings_acks, 2u);
  c.expect_serves(1);
}

// ---- HPACK and frame sizes the client sets -----------------------------------------------------------

TEST(Http2SessionTest, AHeaderTableSizeOfZeroIsSignalledAtTheStartOfTheNextBlock) {
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/plaintext")));
  ASSERT_EQ(c.frames.status[1], 200);  // (sent before the client's change: the table may be used)
  c.frames.set_table_size(0);  // the checker's inflater now insists on the size update
  c.send(frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0)) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/plaintext")) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 5, request_block("GET", "/plaintext")));
  ASSERT_GE(c.frames.blocks.size(), 3u);
  const std::string& block = c.frames.blocks[1];
  ASSERT_FALSE(block.empty());
  EXPECT_EQ(static_cast<std::uint8_t>(block[0]) & 0xe0, 0x20) << "no dynamic table size update first";
  EXPECT_FALSE(c.frames.hpack_error);
  EXPECT_EQ(c.frames.status[3], 200);
  EXPECT_EQ(c.frames.status[5], 200);
  EXPECT_TRUE(c.frames.header(5, "content-length").has_value());
}

TEST(Http2SessionTest, AHeaderTableSizeFirstSetLowerThenRaisedIsSignalledAsItsMinimum) {
  // Two SETTINGS before a block: RFC 7541 4.2 wants the smallest size signalled, then the last.
  Conn c;
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/plaintext")));
  c.send(frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0)) +
         frame(NGHTTP2_SETTINGS, 0, 0, setting(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 4096)) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/plaintext")));
  ASSERT_GE(c.frames.blocks.size(), 2u);
  const std::string& block = c.frames.blocks[1];
  EXPECT_EQ(static_cast<std::uint8_t>(block[0]), 0x20) << "the minimum (0) first";
  EXPECT_FALSE(c.frames.hpack_error);
  EXPECT_EQ(c.frames.status[3], 200);
}

TEST(Http2SessionTest, ALargeResponseHeadIsSplitIntoContinuations) {
  for (const std::uint32_t max_frame : {16384u, 20000u}) {
    SCOPED_TRACE(max_frame);
    Conn c;
    std::string settings;
    if (max_frame != 16384) settings = setting(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, max_frame);
    c.send(std::string(test::kH2Preface) + frame(NGHTTP2_SETTINGS, 0, 0, settings) +
           frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/bigheader")));
    EXPECT_FALSE(c.frames.sequence_error);
    EXPECT_FALSE(c.frames.hpack_error);
    ASSERT_EQ(c.frames.status[1], 200);
    EXPECT_EQ(c.frames.header(1, "x-big"), std::string(40 * 1024, 'h'));
    EXPECT_EQ(c.frames.data[1], "ok");
    std::size_t pieces = 0, largest = 0;
    for (const auto& f : c.frames.frames) {
      if (f.stream != 1 || (f.type != NGHTTP2_HEADERS && f.type != NGHTTP2_CONTINUATION)) continue;
      ++pieces;
      largest = std::max(largest, f.payload.size());
    }
    EXPECT_EQ(largest, max_frame);
    EXPECT_GE(pieces, 3u);
    c.expect_serves(3);
  }
}

// ---- GOAWAY ---------------------------------------------------------------------------------------

TEST(Http2SessionTest, AfterTheServersGoawayNewStreamsAreIgnoredAndHpackStaysInStep) {
  Conn c;
  // Stream 1 stays open (a body follows); stream 3 asks the server to close: GOAWAY(last 3).
  c.send(raw_preface() + frame(NGHTTP2_HEADERS, kEndHeaders, 1, request_block("POST", "/echo")) +
         frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/bye")));
  ASSERT_EQ(c.frames.goaway, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(c.frames.goaway_last_id, 3u);
  ASSERT_TRUE(c.ch.is_open());
  // Stream 5 is past the last id: not served, but its block enters "x-new: 1" in the table ...
  c.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 5,
               request_block("GET", "/plaintext", indexed_literal("x-new", "1"))));
  EXPECT_FALSE(c.frames.status.count(5));
  EXPECT_FALSE(c.frames.resets.count(5) && c.frames.resets[5] != NGHTTP2_REFUSED_STREAM);
  // ... which stream 1's trailers refer to (index 62).
  c.send(frame(NGHTTP2_DATA, 0, 1, "body") + frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, "\xbe"));
  EXPECT_EQ(c.frames.status[1], 200);
  EXPECT_EQ(c.frames.data[1], "body");
  EXPECT_EQ(c.frames.goaway, std::uint32_t{NGHTTP2_NO_ERROR}) << "no COMPRESSION_ERROR";
  EXPECT_FALSE(c.ch.is_open()) << "closed once the last stream ended";
}

class Holder final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  void channel_read(Context&, HttpRequest&& request) override { requests.push_back(std::move(request)); }
  std::vector<HttpRequest> requests;
};

TEST(Http2SessionTest, AfterTheClientsGoawayTheOpenStreamsFinish) {
  EmbeddedChannel ch;
  Settings settings;
  settings.idle_timeout = std::chrono::hours(1);
  ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
  auto holder = std::make_shared<Holder>();
  ch.pipeline().add_last("app", holder);
  ServerFrames frames;
  auto read = [&] {
    while (auto b = ch.read_outbound<ByteBuf>()) frames.feed(b->to_string());
  };
  ch.write_inbound(ByteBuf::copy_of(raw_preface() +
                                    frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, request_block("GET", "/a")) +
                                    frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/b")) +
                                    frame(NGHTTP2_GOAWAY, 0, 0, u32(0) + u32(NGHTTP2_NO_ERROR))));
  read();
  ASSERT_EQ(holder->requests.size(), 2u);
  EXPECT_TRUE(ch.is_open());
  ch.write_outbound(HttpResponse(200).body_view("b").for_request(holder->requests[1]));
  read();
  EXPECT_EQ(frames.data[3], "b");
  EXPECT_TRUE(ch.is_open()) << "stream 1 is still open";
  ch.write_outbound(HttpResponse(200).body_view("a").for_request(holder->requests[0]));
  read();
  EXPECT_EQ(frames.data[1], "a");
  EXPECT_TRUE(frames.ended[1]);
  EXPECT_FALSE(ch.is_open()) << "nothing left to do";
}

// ---- h2c upgrade ----------------------------------------------------------------------------------

// GET /big?n=100 by Upgrade: h2c with `settings` as HTTP2-Settings; returns what followed the 101
// (or everything, when there was no 101).
struct Upgrade {
  explicit Upgrade(const std::string& settings) {
    ch.pipeline().add_last("detect", std::make_shared<CleartextDetector>());
    ch.pipeline().add_last("router", router());
    const auto* p = reinterpret_cast<const std::uint8_t*>(settings.data());
    ch.write_inbound(ByteBuf::copy_of("GET /big?n=100 HTTP/1.1\r\nHost: up.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                                      "Upgrade: h2c\r\nHTTP2-Settings: " + test::base64url(p, settings.size()) +
                                      "\r\n\r\n" + raw_preface()));
    std::string out;
    while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
    const std::string k101 = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    upgraded = out.compare(0, k101.size(), k101) == 0;
    if (upgraded) frames.feed(std::string_view(out).substr(k101.size()));
    else http1 = out;
  }
  void send(std::string_view bytes) {
    if (ch.is_open()) ch.write_inbound(ByteBuf::copy_of(bytes));
    while (auto b = ch.read_outbound<ByteBuf>()) frames.feed(b->to_string());
  }
  EmbeddedChannel ch;
  ServerFrames frames;
  bool upgraded = false;
  std::string http1;
};

TEST(Http2SessionTest, AnUpgradesHttp2SettingsApplyToStreamOne) {
  Upgrade u(setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 10) + setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100));
  ASSERT_TRUE(u.upgraded);
  EXPECT_EQ(u.frames.status[1], 200);
  EXPECT_EQ(u.frames.data[1], std::string(10, 'b')) << "the window of 10 from HTTP2-Settings";
  u.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, u32(90)));
  EXPECT_EQ(u.frames.data[1], std::string(100, 'b'));
  EXPECT_TRUE(u.frames.ended[1]);
  // Stream 1 is taken; the next request is stream 3.
  u.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, request_block("GET", "/plaintext")));
  EXPECT_EQ(u.frames.data[3], "Hello, Wor") << "every stream starts with the window of 10";
  u.send(frame(NGHTTP2_WINDOW_UPDATE, 0, 3, u32(3)));
  EXPECT_EQ(u.frames.data[3], "Hello, World!");
  EXPECT_FALSE(u.frames.goaway.has_value());
}

// A value SETTINGS forbids: 101, then the connection closes; a payload not made of 6-byte entries:
// no upgrade (served as HTTP/1.1). Never an HTTP/2 answer.
TEST(Http2SessionTest, AnUpgradeWithInvalidHttp2SettingsIsNotServedAsHttp2) {
  {
    Upgrade u(setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 2));
    EXPECT_TRUE(u.frames.status.empty());
    EXPECT_FALSE(u.ch.is_open());
  }
  {
    Upgrade u(std::string("\x00\x04\x00", 3));
    EXPECT_FALSE(u.upgraded);
    EXPECT_EQ(u.http1.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  }
}

}  // namespace
}  // namespace weft::http2
