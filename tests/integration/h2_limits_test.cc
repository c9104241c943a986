// The bounds an HTTP/2 server keeps against slow and greedy clients, over real sockets on every
// transport, h2c and TLS: a preface that trickles in is cut off at Settings::preface_timeout, a
// request whose body never finishes is answered 408 at Settings::request_timeout while the
// connection serves others, and the request bodies one connection holds at once stop at
// Settings::max_connection_body (503 for the stream that would pass it), not at
// max_concurrent_streams x max_body.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <tuple>

#include "support/h2_frames.h"
#include "support/h2_matrix.h"
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

constexpr std::uint8_t kLimitsEH = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kLimitsES = NGHTTP2_FLAG_END_STREAM;

class Http2LimitsTest : public test::H2MatrixTest {
 protected:
  void start(Settings settings) {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
    router->post("/echo", [](Context& ctx, HttpRequest& request) {
      ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
    });
    router->get("/never", [](Context&, HttpRequest&) {});  // an application that never answers
    settings.idle_timeout = std::chrono::hours(1);
    serve(router, settings);
  }

  static std::string preface() {
    return test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
  }
  static std::string post_echo(std::uint32_t id, std::string_view extra = {}) {
    return frame(NGHTTP2_HEADERS, kLimitsEH, id, request_block("POST", "/echo", extra));
  }
  static std::string data(std::uint32_t id, std::size_t n, std::uint8_t flags = 0) {
    return frame(NGHTTP2_DATA, flags, id, std::string(n, 'b'));
  }
};

TEST_P(Http2LimitsTest, APrefaceThatTricklesInIsCutOffAtThePrefaceTimeout) {
  Settings settings;
  settings.preface_timeout = 1s;  // (over TLS the handshake counts too)
  start(settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  // The preface but its last byte, a byte every 100 ms (the attack's pace, not a wait): it never
  // completes, and every byte is activity, so only a deadline from the connection's start ends it.
  const std::string_view preface = test::kH2Preface;
  for (std::size_t i = 0; i + 1 < preface.size(); ++i) {
    if (!conn.send(preface.substr(i, 1))) break;  // closed already
    std::this_thread::sleep_for(100ms);
  }
  ServerFrames f;
  conn.read_until(f, [](const ServerFrames&) { return false; });
  EXPECT_TRUE(conn.eof()) << "the server must close a connection whose preface does not arrive";
}

TEST_P(Http2LimitsTest, ARequestBodyThatNeverEndsIsAnswered408AndTheConnectionServesOn) {
  Settings settings;
  settings.request_timeout = 200ms;
  start(settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  // content-length 100, 10 bytes, then nothing.
  ASSERT_TRUE(conn.send(preface() + post_echo(1, literal("content-length", "100")) + data(1, 10)));
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) || fr.goaway; }));
  EXPECT_EQ(f.status[1], 408);
  EXPECT_FALSE(f.goaway.has_value());
  // Its upload is stopped (RFC 9113 8.1: the response ended the stream first), and others are served.
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.resets.count(1) > 0; }));
  EXPECT_EQ(f.resets[1], std::uint32_t{NGHTTP2_NO_ERROR});
  ASSERT_TRUE(conn.send(frame(NGHTTP2_HEADERS, kLimitsEH | kLimitsES, 3, request_block("GET", "/plaintext"))));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(3) || fr.goaway; }));
  EXPECT_EQ(f.status[3], 200);
}

// A client that half-closes gets the answers owed, but an application that never answers cannot
// hold the connection open: it closes at Settings::half_closed_timeout.
TEST_P(Http2LimitsTest, AHalfClosedConnectionWithAnUnansweredStreamClosesAtTheHalfClosedTimeout) {
  Settings settings;
  settings.half_closed_timeout = 200ms;
  start(settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(conn.send(preface() + frame(NGHTTP2_HEADERS, kLimitsEH | kLimitsES, 1, request_block("GET", "/never")) +
                        frame(NGHTTP2_HEADERS, kLimitsEH | kLimitsES, 3, request_block("GET", "/plaintext"))));
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(3) || fr.goaway; }));
  EXPECT_EQ(f.status[3], 200);
  conn.shutdown_write();
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.goaway.has_value(); }));
  conn.read_until(f, [](const ServerFrames&) { return false; });
  EXPECT_TRUE(conn.eof()) << "the server must close a half-closed connection whose stream is never answered";
  EXPECT_FALSE(f.ended.count(1));
}

// The budget counts what the bodies hold, declared lengths included: three uploads that declare
// 30,000 bytes and send one fit in 100,000 however the allocator rounds their buffers up (to 32 KiB
// at most); the fourth does not, and is answered 503 before it has sent its body.
TEST_P(Http2LimitsTest, TheBodiesOneConnectionHoldsStopAtItsBudget) {
  Settings settings;
  settings.max_body = 64 * 1024;
  settings.max_connection_body = 100000;
  start(settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  // (The client's windows are opened wide for the answers: 90,000 bytes of echo.)
  std::string out = test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                    frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)) +
                    frame(NGHTTP2_WINDOW_UPDATE, 0, 0, test::u32(1 << 20));
  for (std::uint32_t id = 1; id <= 7; id += 2) out += post_echo(id, literal("content-length", "30000")) + data(id, 1);
  ASSERT_TRUE(conn.send(out));
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(7) || fr.goaway; }));
  EXPECT_EQ(f.status[7], 503);
  EXPECT_FALSE(f.status.count(1));
  EXPECT_FALSE(f.status.count(3));
  EXPECT_FALSE(f.status.count(5));
  // The three within the budget are whole requests once the rest of their bodies arrives.
  for (std::uint32_t id = 1; id <= 5; id += 2) ASSERT_TRUE(conn.send(data(id, 16384) + data(id, 29999 - 16384, kLimitsES)));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) {
    return (fr.ended.count(1) && fr.ended.count(3) && fr.ended.count(5)) || fr.goaway;
  }));
  for (std::uint32_t id = 1; id <= 5; id += 2) {
    EXPECT_EQ(f.status[id], 200) << id << " GOAWAY " << (f.goaway ? std::to_string(*f.goaway) : "none") << " "
                                 << f.goaway_debug << " reset " << (f.resets.count(id) ? f.resets[id] : 0);
    EXPECT_EQ(f.data[id].size(), 30000u) << id;
  }
  EXPECT_FALSE(f.goaway.has_value());
}

WEFT_H2_ON_EVERY_TRANSPORT(Http2LimitsTest);

}  // namespace
}  // namespace weft::http2
