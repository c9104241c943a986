// The client role of weft's own HTTP/2 session (src/codec/http2/session.cc), through
// http2::ClientCodec in an EmbeddedChannel: a hostile server plays raw frames, and the frames the
// client writes are read back (RFC 9113 from the client's side). A malformed response is a stream
// error (RST_STREAM(PROTOCOL_ERROR), the request fails, the connection serves on); a frame no
// server may send is a connection error (GOAWAY(PROTOCOL_ERROR), everything fails, the connection
// closes).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "support/h2_frames.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/client_stream.h"
#include "weft/core/spawn.h"

namespace weft::http2 {
namespace {

using test::frame;
using test::literal;
using test::setting;
using test::u32;

constexpr std::uint8_t kClientEndHeaders = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kClientEndStream = NGHTTP2_FLAG_END_STREAM;
constexpr std::string_view kStatus200 = "\x88";  // HPACK: static index 8, ":status: 200"

// The codec in an EmbeddedChannel; what it writes (after the preface's magic) is read into `frames`.
struct ClientConn {
  explicit ClientConn(ClientSettings settings = {}) {
    codec = std::make_shared<ClientCodec>(std::move(settings));
    ch.pipeline().add_last("http2", codec);
    read();
  }
  // The server's bytes.
  void send(std::string_view bytes) {
    if (ch.is_open()) ch.write_inbound(ByteBuf::copy_of(bytes));
    read();
  }
  // The server's preface: its SETTINGS (with `settings` entries), and the ACK of the client's.
  void settle(std::string_view settings = {}) {
    send(frame(NGHTTP2_SETTINGS, 0, 0, settings) + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  }
  void read() {
    ch.run_pending();
    while (auto b = ch.read_outbound<ByteBuf>()) {
      std::string bytes = b->to_string();
      if (magic.size() < test::kH2Preface.size()) {
        const std::size_t take = std::min(bytes.size(), test::kH2Preface.size() - magic.size());
        magic += bytes.substr(0, take);
        bytes.erase(0, take);
      }
      frames.feed(bytes);
    }
  }
  Future<http::HttpClientResponse> request(std::string_view method, std::string_view path, std::string_view body = {}) {
    Promise<http::HttpClientResponse> done(&ch.loop());
    Future<http::HttpClientResponse> f = done.future();
    http::HttpClientRequest r{std::string(method), std::string(path)};
    if (!body.empty()) r.body(ByteBuf::copy_of(body));
    codec->request(std::move(r), done);
    read();
    return f;
  }
  // A connection error: GOAWAY(code), then the connection closes.
  void expect_connection_error(std::uint32_t code) {
    ASSERT_TRUE(frames.goaway.has_value()) << "no GOAWAY";
    EXPECT_EQ(*frames.goaway, code);
    EXPECT_FALSE(ch.is_open());
  }

  EmbeddedChannel ch;
  std::shared_ptr<ClientCodec> codec;
  std::string magic;
  test::ServerFrames frames;
};

std::string client_stream_error_of(const Future<http::HttpClientResponse>& f) {
  if (!f.is_done()) return "(not done)";
  try {
    f.get();
    return "(succeeded)";
  } catch (const ClientStreamError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(other error) ") + e.what();
  }
}

// ---- the preface ------------------------------------------------------------------------------------

TEST(Http2ClientSessionTest, ThePrefaceAndSettingsLeaveFirst) {
  ClientConn c;
  EXPECT_EQ(c.magic, test::kH2Preface);
  ASSERT_GE(c.frames.frames.size(), 2u);
  const test::ServerFrame& settings = c.frames.frames[0];
  EXPECT_EQ(settings.type, NGHTTP2_SETTINGS);
  EXPECT_EQ(settings.flags, 0);
  EXPECT_NE(settings.payload.find(setting(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)), std::string::npos);
  EXPECT_NE(settings.payload.find(setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20)), std::string::npos);
  EXPECT_NE(settings.payload.find(setting(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64 * 1024)), std::string::npos);
  // The connection's window grows to the streams' size.
  EXPECT_EQ(c.frames.frames[1].type, NGHTTP2_WINDOW_UPDATE);
  EXPECT_EQ(c.frames.window_updates[0], (1u << 20) - 65535u);
  EXPECT_FALSE(c.codec->ready().is_done());
  c.settle();
  EXPECT_TRUE(c.codec->ready().is_done());
  EXPECT_EQ(c.frames.settings_acks, 1u);
}

TEST(Http2ClientSessionTest, AServersFirstFrameOtherThanSettingsIsAProtocolError) {
  ClientConn c;
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_PING, 0, 0, "12345678"));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
}

// ---- streams the client opens --------------------------------------------------------------------------

TEST(Http2ClientSessionTest, RequestsOpenOddStreamsInOrder) {
  ClientConn c;
  c.settle();
  auto a = c.request("GET", "/a");
  auto b = c.request("POST", "/b", "body");
  auto d = c.request("GET", "/d");
  ASSERT_EQ(c.frames.count(NGHTTP2_HEADERS), 3u);
  std::vector<std::uint32_t> ids;
  for (const auto& f : c.frames.frames) {
    if (f.type == NGHTTP2_HEADERS) ids.push_back(f.stream);
  }
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{1, 3, 5}));
  EXPECT_TRUE(c.frames.ended[1]);  // no body: END_STREAM on HEADERS
  EXPECT_EQ(c.frames.data[3], "body");
  EXPECT_TRUE(c.frames.ended[3]);
  EXPECT_EQ(c.frames.header(1, ":path"), "/a");
  EXPECT_EQ(c.frames.header(3, "content-length"), "4");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders, 3, std::string(kStatus200)) +
         frame(NGHTTP2_DATA, kClientEndStream, 3, "ok"));
  ASSERT_TRUE(b.is_done());
  EXPECT_EQ(b.get().status(), 200);
  EXPECT_EQ(b.get().body_view(), "ok");
  EXPECT_FALSE(a.is_done());
  EXPECT_FALSE(d.is_done());
}

TEST(Http2ClientSessionTest, RequestsPastTheServersConcurrencyLimitWaitForAStreamToClose) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  auto a = c.request("GET", "/a");
  auto b = c.request("GET", "/b");
  EXPECT_EQ(c.frames.count(NGHTTP2_HEADERS), 1u);
  EXPECT_EQ(c.codec->outstanding(), 2u);
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)));
  ASSERT_TRUE(a.is_done());
  EXPECT_EQ(a.get().status(), 200);
  ASSERT_EQ(c.frames.count(NGHTTP2_HEADERS, 3), 1u) << "the waiting request opens as stream 3";
  EXPECT_EQ(c.frames.header(3, ":path"), "/b");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 3, std::string(kStatus200)));
  ASSERT_TRUE(b.is_done());
  EXPECT_EQ(b.get().status(), 200);
}

// ---- responses ------------------------------------------------------------------------------------

TEST(Http2ClientSessionTest, InterimHeadsThenTheFinalHeadThenTrailersAreAResponse) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, literal(":status", "100")) +
         frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, literal(":status", "103") + literal("link", "</a>")) +
         frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, std::string(kStatus200) + literal("content-length", "5")) +
         frame(NGHTTP2_DATA, 0, 1, "hello") +
         frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal("x-checksum", "1")));
  ASSERT_TRUE(r.is_done());
  ASSERT_TRUE(r.is_success()) << client_stream_error_of(r);
  EXPECT_EQ(r.get().status(), 200);
  EXPECT_EQ(r.get().body_view(), "hello");
  EXPECT_FALSE(r.get().header("link").has_value()) << "an interim head's fields are not the response's";
  EXPECT_TRUE(c.frames.resets.empty());
  EXPECT_TRUE(c.ch.is_open());
}

TEST(Http2ClientSessionTest, AHeadResponsesContentLengthNeedsNoBody) {
  ClientConn c;
  c.settle();
  auto r = c.request("HEAD", "/");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
               std::string(kStatus200) + literal("content-length", "1234")));
  ASSERT_TRUE(r.is_done());
  ASSERT_TRUE(r.is_success()) << client_stream_error_of(r);
  EXPECT_TRUE(c.frames.resets.empty());
}

struct MalformedResponse {
  const char* what;
  std::string frames;  // on stream 1
};

TEST(Http2ClientSessionTest, MalformedResponsesAreStreamErrors) {
  const std::string head_cl5 = std::string(kStatus200) + literal("content-length", "5");
  const std::vector<MalformedResponse> cases = {
      {"a two-digit :status",
       frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal(":status", "20"))},
      {"a :status not digits",
       frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal(":status", "2x0"))},
      {":status twice", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                              std::string(kStatus200) + literal(":status", "204"))},
      {":status 101", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal(":status", "101"))},
      {"no :status", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal("server", "x"))},
      {"a request pseudo-header", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                                        std::string(kStatus200) + literal(":path", "/"))},
      {":method in a response", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                                      literal(":method", "GET") + std::string(kStatus200))},
      {"a field before :status", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                                       literal("server", "x") + std::string(kStatus200))},
      {"an uppercase name", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                                  std::string(kStatus200) + literal("Server", "x"))},
      {"a connection-specific field", frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1,
                                            std::string(kStatus200) + literal("connection", "close"))},
      {"an interim head with END_STREAM",
       frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal(":status", "100"))},
      {"DATA before the head", frame(NGHTTP2_DATA, kClientEndStream, 1, "early")},
      {"DATA shorter than content-length",
       frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, head_cl5) + frame(NGHTTP2_DATA, kClientEndStream, 1, "abc")},
      {"DATA longer than content-length",
       frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, head_cl5) + frame(NGHTTP2_DATA, kClientEndStream, 1, "abcdefg")},
      {"a content-length with END_STREAM on the head",
       frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, head_cl5)},
      {"trailers end a body shorter than content-length",
       frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, head_cl5) + frame(NGHTTP2_DATA, 0, 1, "abc") +
           frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, literal("x-t", "1"))},
      {"trailers without END_STREAM", frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, std::string(kStatus200)) +
                                          frame(NGHTTP2_DATA, 0, 1, "abc") +
                                          frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, literal("x-t", "1"))},
      {"a pseudo-header in trailers",
       frame(NGHTTP2_HEADERS, kClientEndHeaders, 1, std::string(kStatus200)) +
           frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200))},
  };
  for (const MalformedResponse& m : cases) {
    SCOPED_TRACE(m.what);
    ClientConn c;
    c.settle();
    auto r = c.request("GET", "/");
    auto next = c.request("GET", "/next");
    c.send(m.frames);
    ASSERT_TRUE(c.frames.resets.count(1)) << "no RST_STREAM on 1";
    EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
    ASSERT_TRUE(r.is_done());
    EXPECT_FALSE(r.is_success());
    EXPECT_NE(client_stream_error_of(r).find("malformed"), std::string::npos) << client_stream_error_of(r);
    // The connection serves on.
    EXPECT_FALSE(c.frames.goaway.has_value());
    c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 3, std::string(kStatus200)));
    ASSERT_TRUE(next.is_done());
    ASSERT_TRUE(next.is_success()) << client_stream_error_of(next);
    EXPECT_EQ(next.get().status(), 200);
  }
}

// ---- frames no server may send -------------------------------------------------------------------

TEST(Http2ClientSessionTest, APushPromiseIsAConnectionError) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_PUSH_PROMISE, kClientEndHeaders, 1, u32(2) + std::string("\x82\x86\x84\x01\x01x", 7)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  ASSERT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
}

TEST(Http2ClientSessionTest, HeadersOnAnEvenStreamAreAConnectionError) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 2, std::string(kStatus200)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(r.is_done());
}

TEST(Http2ClientSessionTest, HeadersOnAStreamTheClientDidNotOpenAreAConnectionError) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 3, std::string(kStatus200)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
  ASSERT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
}

TEST(Http2ClientSessionTest, DataAfterTheServersResetIsAStreamClosedError) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  c.send(frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_INTERNAL_ERROR)));
  ASSERT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
  c.send(frame(NGHTTP2_DATA, 0, 1, "late"));
  EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_STREAM_CLOSED});
  EXPECT_TRUE(c.ch.is_open());
}

// ---- the server's bounds hold for the client ---------------------------------------------------------

TEST(Http2ClientSessionTest, APingFloodEndsTheConnection) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  std::string pings;
  for (int i = 0; i < 1100; ++i) pings += frame(NGHTTP2_PING, 0, 0, "12345678");
  c.send(pings);
  EXPECT_FALSE(c.ch.is_open());
  ASSERT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
}

TEST(Http2ClientSessionTest, AHeaderBlockOfTooManyContinuationsEndsTheConnection) {
  ClientConn c;
  c.settle();
  auto r = c.request("GET", "/");
  std::string frames = frame(NGHTTP2_HEADERS, 0, 1, std::string(kStatus200));
  for (int i = 0; i < 20; ++i) frames += frame(NGHTTP2_CONTINUATION, 0, 1, literal("x", "y"));
  c.send(frames);
  EXPECT_FALSE(c.ch.is_open());
  ASSERT_TRUE(r.is_done());
  EXPECT_FALSE(r.is_success());
}

// ---- GOAWAY ---------------------------------------------------------------------------------------

TEST(Http2ClientSessionTest, AGoawayRefusesTheStreamsAboveItsLastId) {
  ClientConn c;
  c.settle();
  auto a = c.request("GET", "/a");
  auto b = c.request("GET", "/b");
  auto d = c.request("GET", "/d");
  c.send(frame(NGHTTP2_GOAWAY, 0, 0, u32(1) + u32(NGHTTP2_NO_ERROR)));
  EXPECT_TRUE(c.codec->goaway_received());
  for (auto* f : {&b, &d}) {
    ASSERT_TRUE(f->is_done());
    try {
      f->get();
      ADD_FAILURE() << "succeeded";
    } catch (const ClientStreamError& e) {
      EXPECT_TRUE(e.refused()) << e.what();
      EXPECT_EQ(e.error_code(), std::uint32_t{NGHTTP2_REFUSED_STREAM});
    }
  }
  EXPECT_FALSE(a.is_done());
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)));
  ASSERT_TRUE(a.is_done());
  EXPECT_EQ(a.get().status(), 200);
  auto late = c.request("GET", "/late");
  ASSERT_TRUE(late.is_done());
  EXPECT_FALSE(late.is_success());
}

TEST(Http2ClientSessionTest, AGoawayRefusesTheRequestsWaitingForTheConcurrencyLimit) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  auto a = c.request("GET", "/a");
  auto b = c.request("GET", "/b");
  c.send(frame(NGHTTP2_GOAWAY, 0, 0, u32(1) + u32(NGHTTP2_NO_ERROR)));
  ASSERT_TRUE(b.is_done());
  EXPECT_NE(client_stream_error_of(b).find("did not process"), std::string::npos) << client_stream_error_of(b);
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)));
  ASSERT_TRUE(a.is_done());
  EXPECT_TRUE(a.is_success());
  EXPECT_EQ(c.frames.count(NGHTTP2_HEADERS), 1u) << "the waiting request never left";
}

// ---- streamed requests ------------------------------------------------------------------------------

// A streamed request waiting for the concurrency limit has its id at once; reset before it opens,
// it never reaches the wire and the next waiting one takes its turn.
TEST(Http2ClientSessionTest, AStreamResetWhileWaitingToOpenNeverLeaves) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  auto a = c.request("GET", "/a");
  std::optional<ClientStream> waiting(c.codec->open("POST", "/waits", {}));
  auto b = c.request("GET", "/b");
  EXPECT_EQ(waiting->id(), 3);
  EXPECT_EQ(c.codec->outstanding(), 3u);
  waiting->reset();
  c.read();
  EXPECT_TRUE(waiting->response_ended());
  EXPECT_EQ(c.codec->outstanding(), 2u);
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)));
  ASSERT_TRUE(a.is_done());
  EXPECT_EQ(c.frames.count(NGHTTP2_HEADERS, 3), 0u) << "the reset stream never left";
  EXPECT_EQ(c.frames.count(NGHTTP2_RST_STREAM), 0u);
  ASSERT_EQ(c.frames.count(NGHTTP2_HEADERS, 5), 1u);
  EXPECT_EQ(c.frames.header(5, ":path"), "/b");
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 5, std::string(kStatus200)));
  ASSERT_TRUE(b.is_done());
  EXPECT_TRUE(b.is_success()) << client_stream_error_of(b);
  // The server may not use the id the client skipped (RFC 9113 5.1.1).
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 3, std::string(kStatus200)));
  c.expect_connection_error(NGHTTP2_PROTOCOL_ERROR);
}

// ClientCodec::cancel: a request given up resets its stream (CANCEL) and fails, freeing its place
// under the server's concurrency limit; one still waiting for that place never leaves; one answered
// already is left alone.
TEST(Http2ClientSessionTest, ACancelledRequestResetsItsStreamAndFreesItsPlace) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1));
  auto a = c.request("GET", "/a");  // stream 1, sent
  auto b = c.request("GET", "/b");  // stream 3, waits
  auto d = c.request("GET", "/d");  // stream 5, waits
  EXPECT_EQ(c.frames.count(NGHTTP2_HEADERS), 1u);
  c.codec->cancel(1);
  c.read();
  EXPECT_EQ(c.frames.resets.at(1), static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  ASSERT_TRUE(a.is_done());
  try {
    a.get();
    ADD_FAILURE() << "the cancelled request succeeded";
  } catch (const ClientStreamError& e) {
    EXPECT_EQ(e.error_code(), static_cast<std::uint32_t>(NGHTTP2_CANCEL));
    EXPECT_FALSE(e.refused());
  }
  ASSERT_EQ(c.frames.count(NGHTTP2_HEADERS, 3), 1u) << "the cancelled stream's place opens the next";
  c.codec->cancel(5);  // still waiting for the place: it never leaves
  c.read();
  ASSERT_TRUE(d.is_done());
  EXPECT_FALSE(d.is_success());
  EXPECT_EQ(c.codec->outstanding(), 1u);
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 3, std::string(kStatus200)));
  ASSERT_TRUE(b.is_done());
  EXPECT_TRUE(b.is_success()) << client_stream_error_of(b);
  c.codec->cancel(3);  // answered: nothing to reset
  c.codec->cancel(7);  // never opened
  c.read();
  EXPECT_EQ(c.frames.count(NGHTTP2_HEADERS, 5), 0u);
  EXPECT_EQ(c.frames.count(NGHTTP2_RST_STREAM), 1u);
  EXPECT_TRUE(c.ch.is_open());
}

struct UploadOutcome {
  bool done = false;
  bool threw = false;
  std::string what;
  std::uint32_t ref_count_after = 0;  // of the chunk written, once the stream closed (handle held)
};

Task<> write_while_the_window_is_shut(ClientCodec& codec, ByteBuf chunk, const ByteBuf& original, UploadOutcome& out) {
  ClientStream stream = codec.open("POST", "/upload", {});
  try {
    co_await stream.write(std::move(chunk));  // more than max_buffered_upload: it waits
  } catch (const ClientStreamError& e) {
    out.threw = true;
    out.what = e.what();
  }
  out.ref_count_after = original.ref_count();
  out.done = true;
}

// The server ends its response and the stream (RST_STREAM(NO_ERROR), RFC 9113 8.1) while a write
// waits for a window that never opened: its bytes were never sent, so the write fails; and the
// stream's queued upload is let go when it closes, not when the handle is dropped.
TEST(Http2ClientSessionTest, AWriteWaitingWhenTheServerEndsTheStreamFailsAndItsBytesAreReleased) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0));
  const ByteBuf original = ByteBuf::copy_of(std::string(100 * 1024, 'u'));
  UploadOutcome out;
  Future<void> task = spawn(c.ch.loop(), write_while_the_window_is_shut(*c.codec, original.duplicate(), original, out));
  c.read();
  ASSERT_EQ(c.frames.count(NGHTTP2_HEADERS, 1), 1u);
  EXPECT_EQ(c.frames.count(NGHTTP2_DATA), 0u);
  EXPECT_FALSE(out.done) << "the write waits";
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)) +
         frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_NO_ERROR)));
  ASSERT_TRUE(out.done);
  EXPECT_TRUE(out.threw) << "the write returned as if its bytes were sent";
  EXPECT_NE(out.what.find("before the request body was sent"), std::string::npos) << out.what;
  EXPECT_EQ(out.ref_count_after, 1u) << "the closed stream still holds the chunk";
  EXPECT_EQ(c.codec->outstanding(), 0u);
  EXPECT_TRUE(task.is_done());
}

Task<> write_one_chunk(ClientStream& stream, ByteBuf chunk, bool& written) {
  co_await stream.write(std::move(chunk));  // within max_buffered_upload: returns at once
  written = true;
}

// A stream the server ends (its response, then RST_STREAM(NO_ERROR)) lets go of the request bytes
// it still had queued at once, not when its handle is dropped.
TEST(Http2ClientSessionTest, AClosedStreamReleasesItsQueuedUploadWhileItsHandleIsHeld) {
  ClientConn c;
  c.settle(setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0));
  const ByteBuf original = ByteBuf::copy_of(std::string(8 * 1024, 'q'));
  ClientStream stream = c.codec->open("POST", "/upload", {});
  bool written = false;
  Future<void> task = spawn(c.ch.loop(), write_one_chunk(stream, original.duplicate(), written));
  c.read();
  ASSERT_TRUE(written);
  EXPECT_EQ(original.ref_count(), 2u) << "queued: the window is shut";
  c.send(frame(NGHTTP2_HEADERS, kClientEndHeaders | kClientEndStream, 1, std::string(kStatus200)) +
         frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_NO_ERROR)));
  EXPECT_TRUE(stream.response_ended());
  EXPECT_EQ(original.ref_count(), 1u) << "the closed stream still holds the chunk";
  EXPECT_EQ(c.frames.count(NGHTTP2_DATA), 0u);
  EXPECT_TRUE(task.is_done());
}

}  // namespace
}  // namespace weft::http2
