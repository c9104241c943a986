// drain_server on an HTTP/2 server, on every transport over h2c and TLS, seen by a raw client: the
// two GOAWAYs of RFC 9113 6.8 -- the first with last-stream-id 2^31-1 and a PING, the second, once
// the PING's ACK is back, with the last stream processed. A stream the client opened before it saw
// the first GOAWAY (here: sent after it, as if it had crossed it on the wire) is served; one opened
// after the second is not; the stream in flight when the drain began is answered, and then the
// connection closes and the drain completes. Settings::max_connection_age ends a connection the same
// way, by itself; with a grace, the streams still open when it has passed are closed with it.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/h2_matrix.h"
#include "weft/channel/drain.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using test::frame;
using test::ServerFrames;

std::uint32_t word(const std::string& s, std::size_t at) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data() + at);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

struct Goaway {
  std::uint32_t last_stream_id;
  std::uint32_t code;
};

std::vector<Goaway> goaways(const ServerFrames& f) {
  std::vector<Goaway> out;
  for (const auto& fr : f.frames) {
    if (fr.type == NGHTTP2_GOAWAY && fr.payload.size() >= 8) {
      out.push_back({word(fr.payload, 0) & 0x7fffffffu, word(fr.payload, 4)});
    }
  }
  return out;
}

// The payload of the server's first PING (not an ACK).
std::string first_ping(const ServerFrames& f) {
  for (const auto& fr : f.frames) {
    if (fr.type == NGHTTP2_PING && (fr.flags & NGHTTP2_FLAG_ACK) == 0) return fr.payload;
  }
  return {};
}

struct SlowRoute {
  Promise<void> dispatched;
  Promise<void> release;
};

class Http2DrainTest : public test::H2MatrixTest {
 protected:
  void serve_slow_and_plaintext(Settings settings = {}) {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext",
                [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body_view("Hello")); });
    router->get("/slow", [slow = slow_](Context& ctx, http::HttpRequest& request) {
      slow->release.future().add_listener([&ctx, stream = request.sequence()](const Future<void>& released) {
        if (released.error()) return;  // never released: the connection is gone
        ctx.loop().execute([&ctx, stream] {
          ctx.write_and_flush(http::HttpResponse(200).body_view("late answer").for_request(stream));
        });
      });
      slow->dispatched.set_value();
    });
    serve(router, settings);
  }

  std::shared_ptr<SlowRoute> slow_ = std::make_shared<SlowRoute>();
};

TEST_P(Http2DrainTest, TwoGoawaysThenTheStreamsInFlightAreAnsweredAndTheConnectionCloses) {
  serve_slow_and_plaintext();
  auto owned = std::make_unique<test::RawH2Connection>(port(), tls());
  test::RawH2Connection& conn = *owned;
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                        frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 1, test::request_block("GET", "/slow"))));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));

  Future<DrainReport> drained = drain_server(server_, 3600s);
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) {
    return !goaways(fr).empty() && !first_ping(fr).empty();
  })) << "no GOAWAY and PING";
  std::vector<Goaway> seen = goaways(f);
  ASSERT_EQ(seen.size(), 1u) << "the last GOAWAY came before the PING's ACK";
  EXPECT_EQ(seen[0].last_stream_id, 0x7fffffffu);
  EXPECT_EQ(seen[0].code, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));

  // A stream that crossed the first GOAWAY on the wire, then the PING's ACK.
  ASSERT_TRUE(
      conn.send(frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 3, test::request_block("GET", "/plaintext")) +
                frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, first_ping(f))));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return goaways(fr).size() >= 2 && fr.ended.count(3); }))
      << "no second GOAWAY, or stream 3 not answered";
  seen = goaways(f);
  EXPECT_EQ(seen[1].last_stream_id, 3u) << "the last GOAWAY names the last stream processed";
  EXPECT_EQ(seen[1].code, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(f.status[3], 200);
  EXPECT_EQ(f.data[3], "Hello");

  // After the last GOAWAY a new stream is not served; the one in flight still is, then the close.
  ASSERT_TRUE(
      conn.send(frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 5, test::request_block("GET", "/plaintext"))));
  EXPECT_FALSE(drained.is_done()) << "the drain completed with stream 1 unanswered";
  slow_->release.set_value();
  conn.read_until(f, [](const ServerFrames&) { return false; });  // to the end
  EXPECT_TRUE(conn.eof()) << "the connection stayed open";
  EXPECT_EQ(f.status[1], 200);
  EXPECT_EQ(f.data[1], "late answer");
  EXPECT_EQ(f.status.count(5), 0u) << "a stream opened after the last GOAWAY was served";
  EXPECT_EQ(goaways(f).size(), 2u);
  owned.reset();  // the client's FIN ends the server's linger after its own

  ASSERT_TRUE(drained.wait_for(20s));
  EXPECT_EQ(drained.get().open, 1u);
  EXPECT_EQ(drained.get().drained, 1u);
  EXPECT_EQ(drained.get().forced, 0u);
}

// A client that never answers the PING gets the last GOAWAY after Settings::goaway_ping_timeout
// (short here: the bound is what is tested), and its idle connection then closes.
TEST_P(Http2DrainTest, AClientThatNeverAnswersThePingGetsTheLastGoawayAnyway) {
  Settings settings;
  settings.goaway_ping_timeout = 20ms;
  serve_slow_and_plaintext(settings);
  auto owned = std::make_unique<test::RawH2Connection>(port(), tls());
  test::RawH2Connection& conn = *owned;
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(
      conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 1, test::request_block("GET", "/plaintext"))));
  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) > 0; }));
  Future<DrainReport> drained = drain_server(server_, 3600s);
  conn.read_until(f, [](const ServerFrames&) { return false; });  // to the end
  EXPECT_TRUE(conn.eof());
  const std::vector<Goaway> seen = goaways(f);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].last_stream_id, 0x7fffffffu);
  EXPECT_EQ(seen[1].last_stream_id, 1u);
  owned.reset();
  ASSERT_TRUE(drained.wait_for(20s));
  EXPECT_EQ(drained.get().drained, 1u);
}

TEST_P(Http2DrainTest, AConnectionPastItsMaximumAgeIsToldToGoAndItsStreamInFlightIsAnswered) {
  Settings settings;
  settings.max_connection_age = 30ms;
  serve_slow_and_plaintext(settings);
  auto owned = std::make_unique<test::RawH2Connection>(port(), tls());
  test::RawH2Connection& conn = *owned;
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                        frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 1, test::request_block("GET", "/slow"))));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));

  ServerFrames f;
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) {
    return !goaways(fr).empty() && !first_ping(fr).empty();
  })) << "no GOAWAY and PING once the connection was past its age";
  std::vector<Goaway> seen = goaways(f);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].last_stream_id, 0x7fffffffu);
  ASSERT_TRUE(
      conn.send(frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 3, test::request_block("GET", "/plaintext")) +
                frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, first_ping(f))));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return goaways(fr).size() >= 2 && fr.ended.count(3); }));
  EXPECT_EQ(goaways(f)[1].last_stream_id, 3u);
  EXPECT_EQ(f.status[3], 200);

  slow_->release.set_value();  // no grace: the stream in flight has as long as it needs
  conn.read_until(f, [](const ServerFrames&) { return false; });  // to the end
  EXPECT_TRUE(conn.eof());
  EXPECT_EQ(f.status[1], 200);
  EXPECT_EQ(f.data[1], "late answer");
}

TEST_P(Http2DrainTest, PastItsMaximumAgeAndGraceAConnectionClosesWithItsStreamsStillOpen) {
  Settings settings;
  settings.max_connection_age = 20ms;
  settings.max_connection_age_grace = 20ms;
  serve_slow_and_plaintext(settings);
  auto owned = std::make_unique<test::RawH2Connection>(port(), tls());
  test::RawH2Connection& conn = *owned;
  ASSERT_TRUE(conn.is_open());
  ASSERT_TRUE(conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") +
                        frame(NGHTTP2_HEADERS, test::kEndHeadersAndStream, 1, test::request_block("GET", "/slow"))));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));
  ServerFrames f;
  conn.read_until(f, [](const ServerFrames&) { return false; });  // to the end: /slow is never answered
  EXPECT_TRUE(conn.eof()) << "the connection outlived its age and grace";
  ASSERT_FALSE(goaways(f).empty());
  EXPECT_EQ(goaways(f)[0].last_stream_id, 0x7fffffffu);
  EXPECT_EQ(f.status.count(1), 0u);
}

WEFT_H2_ON_EVERY_TRANSPORT(Http2DrainTest);

}  // namespace
}  // namespace weft::http2
