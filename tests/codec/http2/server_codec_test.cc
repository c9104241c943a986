// The HTTP/2 server codec in an EmbeddedChannel, driven by an nghttp2 client session (and by raw
// frames where a client would not send them): requests become the HttpRequests the HTTP/1.1 codec
// makes, answers find their streams in any order, flow control, limits and abuse budgets.

#include "weft/codec/http2/server_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/h2_client.h"
#include "support/h2_frames.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/cleartext_detector.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::H2Client;

// A body of n bytes that tells where each byte is (so that a reordered or lost piece shows).
std::string patterned(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

std::shared_ptr<http::Router> test_router() {
  auto router = std::make_shared<http::Router>();
  router->get("/plaintext", [](Context& ctx, HttpRequest&) {
    ctx.write(HttpResponse(200).header("Content-Type", "text/plain").header("X-Mixed-Case", "yes").body_view(
        "Hello, World!"));
  });
  router->post("/echo", [](Context& ctx, HttpRequest& request) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
  });
  router->get("/big", [](Context& ctx, HttpRequest& request) {
    const std::size_t n = std::stoul(std::string(request.query().substr(2)));  // ?n=...
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(patterned(n))));
  });
  router->get("/head", [](Context& ctx, HttpRequest& request) {
    std::string text = std::string(request.method()) + " " + std::string(request.target()) + " host=" +
                       std::string(request.header("Host").value_or("-")) + " authority=" +
                       std::string(request.head().authority) + " x=" + std::string(request.header("X-Test").value_or("-")) +
                       " h2=" + (request.version() == http::Version::http2 ? "yes" : "no") +
                       " seq=" + std::to_string(request.sequence());
    ctx.write(HttpResponse(200).body(text));
  });
  return router;
}

struct Fixture {
  explicit Fixture(Settings settings = {}, std::shared_ptr<Handler> app = test_router()) {
    ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
    ch.pipeline().add_last("app", std::move(app));
  }
  // Moves bytes both ways until neither side has anything to say; client bytes go in pieces of
  // `piece` bytes (0: as they come).
  void pump(H2Client& client, std::size_t piece = 0) {
    for (int round = 0; round < 1'000'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) {
        if (piece == 0) {
          ch.write_inbound(ByteBuf::copy_of(out));
        } else {
          for (std::size_t at = 0; at < out.size() && ch.is_open(); at += piece) {
            ch.write_inbound(ByteBuf::copy_of(std::string_view(out).substr(at, piece)));
          }
        }
      }
      const std::string in = output();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  std::string output() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  EmbeddedChannel ch;
};

TEST(Http2ServerCodecTest, AnswersAGetAndAPostWithABodyThroughTheRouter) {
  Fixture f;
  H2Client client;
  const auto get = client.request("GET", "/plaintext");
  const auto post = client.request("POST", "/echo", patterned(5000));
  f.pump(client);
  const auto& g = client.response(get);
  ASSERT_TRUE(g.closed);
  EXPECT_EQ(g.close_error, std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_EQ(g.status, 200);
  EXPECT_EQ(g.body, "Hello, World!");
  EXPECT_EQ(g.header("content-type"), "text/plain");
  EXPECT_EQ(g.header("x-mixed-case"), "yes") << "names are sent in lowercase";
  EXPECT_EQ(g.header("content-length"), "13");
  EXPECT_TRUE(g.header("date").has_value());
  const auto& p = client.response(post);
  ASSERT_TRUE(p.closed);
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.body, patterned(5000));
  EXPECT_TRUE(f.ch.is_open());
  EXPECT_EQ(client.error(), 0);
}

TEST(Http2ServerCodecTest, TheRequestCarriesThePseudoHeadersAsTheHttp1CodecWould) {
  Fixture f;
  H2Client client;
  const auto id = client.request("GET", "/head?q=1", "", {{"x-test", "v"}});
  const auto head = client.request("HEAD", "/head");
  f.pump(client);
  EXPECT_EQ(client.response(id).body,
            "GET /head?q=1 host=test.example authority=test.example x=v h2=yes seq=" + std::to_string(id));
  // HEAD goes to the GET route; its answer has the length of the GET body and no DATA.
  const auto& h = client.response(head);
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "");
  EXPECT_EQ(h.header("content-length"),
            std::to_string(std::string("HEAD /head host=test.example authority=test.example x=- h2=yes seq=3").size()));
}

TEST(Http2ServerCodecTest, AHundredConcurrentStreamsInOneWriteAreAllAnswered) {
  Fixture f;
  H2Client client;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 100; ++i) ids.push_back(client.request(i % 2 ? "GET" : "POST", i % 2 ? "/plaintext" : "/echo",
                                                             i % 2 ? "" : "body " + std::to_string(i)));
  f.pump(client);
  for (int i = 0; i < 100; ++i) {
    const auto& r = client.response(ids[i]);
    ASSERT_TRUE(r.closed) << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, i % 2 ? std::string("Hello, World!") : "body " + std::to_string(i));
  }
}

// Keeps every request; the test answers them later, in any order.
class Holder final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  void channel_read(Context&, HttpRequest&& request) override { requests.push_back(std::move(request)); }
  std::vector<HttpRequest> requests;
};

TEST(Http2ServerCodecTest, SharedHeaderBlocksAreSentLowercasedWhicheverCameBefore) {
  static const http::HeaderBlock kA = http::HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");
  static const http::HeaderBlock kB = http::HeaderBlock().add("X-Block", "b").add("Connection", "keep-alive");
  auto router = std::make_shared<http::Router>();
  router->get("/a", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).headers(kA).body_view("a")); });
  router->get("/b", [](Context& ctx, HttpRequest&) {
    ctx.write(HttpResponse(200).headers(kB).header("X-Own", "1").body_view("b"));
  });
  Fixture f({}, router);
  H2Client client;
  const std::vector<std::int32_t> ids = {client.request("GET", "/a"), client.request("GET", "/b"),
                                         client.request("GET", "/a"), client.request("GET", "/b")};
  f.pump(client);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& r = client.response(ids[i]);
    ASSERT_EQ(r.status, 200) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(r.header("server"), "weft") << i;
      EXPECT_EQ(r.header("content-type"), "text/plain") << i;
      EXPECT_FALSE(r.header("x-block").has_value()) << i;
    } else {
      EXPECT_EQ(r.header("x-block"), "b") << i;
      EXPECT_EQ(r.header("x-own"), "1") << i;
      EXPECT_FALSE(r.header("connection").has_value()) << i;
      EXPECT_FALSE(r.header("server").has_value()) << i;
    }
    EXPECT_EQ(r.header("content-length"), "1") << i;
  }
}

TEST(Http2ServerCodecTest, AnswersWrittenOutOfOrderFindTheirStreams) {
  auto holder = std::make_shared<Holder>();
  Fixture f({}, holder);
  H2Client client;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(client.request("GET", "/" + std::to_string(i)));
  f.pump(client);
  ASSERT_EQ(holder->requests.size(), 10u);
  for (int i = 9; i >= 0; --i) {  // the last first
    const HttpRequest& request = holder->requests[static_cast<std::size_t>(i)];
    f.ch.write_outbound(HttpResponse(200).body(std::string(request.path())).for_request(request));
  }
  f.pump(client);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(client.response(ids[i]).body, "/" + std::to_string(i));
}

TEST(Http2ServerCodecTest, AnswersWithoutAStreamNameGoToTheOldestUnansweredStream) {
  auto holder = std::make_shared<Holder>();
  Fixture f({}, holder);
  H2Client client;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(client.request("GET", "/" + std::to_string(i)));
  f.pump(client);
  // Stream 3 (the second) is answered by name first; the others in turn, as a coroutine would.
  f.ch.write_outbound(HttpResponse(200).body("named").for_request(holder->requests[1]));
  for (int i = 0; i < 3; ++i) f.ch.write_outbound(HttpResponse(200).body("turn " + std::to_string(i)));
  f.ch.write_outbound(HttpResponse(200).body("one too many"));  // dropped
  f.pump(client);
  EXPECT_EQ(client.response(ids[0]).body, "turn 0");
  EXPECT_EQ(client.response(ids[1]).body, "named");
  EXPECT_EQ(client.response(ids[2]).body, "turn 1");
  EXPECT_EQ(client.response(ids[3]).body, "turn 2");
  EXPECT_TRUE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AnAnswerForAStreamTheClientResetIsDropped) {
  auto holder = std::make_shared<Holder>();
  Fixture f({}, holder);
  H2Client client;
  const auto id = client.request("GET", "/gone");
  f.pump(client);
  client.reset(id);
  f.pump(client);
  f.ch.write_outbound(HttpResponse(200).body("late").for_request(holder->requests[0]));
  f.pump(client);
  EXPECT_EQ(client.response(id).close_error, std::uint32_t{NGHTTP2_CANCEL});
  EXPECT_EQ(client.response(id).body, "");
  EXPECT_TRUE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, ALargeBodyFollowsTheFlowControlWindows) {
  Fixture f;
  H2Client client;  // default windows: 64 KiB per stream and for the connection
  const auto id = client.request("GET", "/big?n=" + std::to_string(1 << 20));
  f.pump(client);
  ASSERT_TRUE(client.response(id).closed);
  EXPECT_EQ(client.response(id).body, patterned(1 << 20));
}

TEST(Http2ServerCodecTest, ABodyLeavesAByteAtATimeUnderAWindowOfOne) {
  Fixture f;
  H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1}});
  const auto big = client.request("GET", "/big?n=3000");
  const auto borrowed = client.request("GET", "/plaintext");  // a borrowed body, copied when it must wait
  f.pump(client);
  ASSERT_TRUE(client.response(big).closed);
  EXPECT_EQ(client.response(big).body, patterned(3000));
  EXPECT_EQ(client.response(borrowed).body, "Hello, World!");
}

TEST(Http2ServerCodecTest, InputInOneBytePiecesIsServedAlike) {
  Fixture f;
  H2Client client;
  const auto get = client.request("GET", "/plaintext");
  const auto post = client.request("POST", "/echo", patterned(20000));
  f.pump(client, 1);
  EXPECT_EQ(client.response(get).body, "Hello, World!");
  EXPECT_EQ(client.response(post).body, patterned(20000));
}

TEST(Http2ServerCodecTest, AHeaderListPastTheLimitIsAnswered431) {
  Fixture f;
  H2Client client;
  const auto big = client.request("GET", "/plaintext", "", {{"x-big", std::string(20000, 'b')}});
  const auto fine = client.request("GET", "/plaintext");
  f.pump(client);
  EXPECT_EQ(client.response(big).status, 431);
  EXPECT_EQ(client.response(fine).status, 200) << "the connection goes on";
  EXPECT_TRUE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, TooManyHeadersAreAnswered431) {
  Settings settings;
  settings.max_headers = 8;
  Fixture f(settings);
  H2Client client;
  std::vector<std::pair<std::string, std::string>> headers;
  for (int i = 0; i < 9; ++i) headers.emplace_back("x-h" + std::to_string(i), "v");
  const auto id = client.request("GET", "/plaintext", "", headers);
  f.pump(client);
  EXPECT_EQ(client.response(id).status, 431);
}

TEST(Http2ServerCodecTest, ABodyPastTheLimitIsAnswered413) {
  Settings settings;
  settings.max_body = 1000;
  Fixture f(settings);
  H2Client client;
  const auto big = client.request("POST", "/echo", patterned(5000));
  const auto fine = client.request("POST", "/echo", "small");
  f.pump(client);
  EXPECT_EQ(client.response(big).status, 413);
  EXPECT_EQ(client.response(fine).body, "small");
}

TEST(Http2ServerCodecTest, StreamsPastTheConcurrencyLimitAreRefused) {
  Settings settings;
  settings.max_concurrent_streams = 10;
  Fixture f(settings);
  H2Client client;
  std::vector<std::int32_t> ids;
  // Open streams (no END_STREAM), all sent before the server's SETTINGS reach the client.
  for (int i = 0; i < 11; ++i) ids.push_back(client.request("GET", "/plaintext", "", {}, false));
  f.pump(client);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(client.response(ids[i]).closed) << i;
  ASSERT_TRUE(client.response(ids[10]).closed);
  EXPECT_EQ(client.response(ids[10]).close_error, std::uint32_t{NGHTTP2_REFUSED_STREAM});
  EXPECT_EQ(f.ch.pipeline().get_as<ServerCodec>("http2")->open_streams(), 10u);
  EXPECT_TRUE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, RapidResetEndsTheConnectionWithEnhanceYourCalm) {
  Fixture f;
  H2Client client;
  std::string attack = client.take_output();
  for (int i = 0; i < 300; ++i) {
    const auto id = client.request("GET", "/plaintext");
    attack += client.take_output();  // HEADERS first: a reset of an unsent request would cancel it
    client.reset(id);
    attack += client.take_output();
  }
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  client.receive(f.output());
  EXPECT_EQ(client.goaway_error(), std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, APingFloodSpendsTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 50;
  Fixture f(settings);
  H2Client client;
  for (int i = 0; i < 60; ++i) client.ping();
  f.pump(client);
  EXPECT_EQ(client.goaway_error(), std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

// ---- raw frames: what a client library would not send ----------------------------------------------

using test::frame;
using test::kGetBlock;
using test::literal;
using test::raw_preface;
using test::ServerFrames;
using test::u32;

// A router whose /hold route never answers (the stream stays open, half-closed by the client).
std::shared_ptr<http::Router> holding_router() {
  auto router = test_router();
  router->get("/hold", [](Context&, HttpRequest&) {});
  return router;
}

// An answer complete before its request (here 413 for a body past the limit, while the body still
// comes) is followed by RST_STREAM(NO_ERROR): the client stops sending (RFC 9113 8.1), and the
// connection goes on.
TEST(Http2ServerCodecTest, AnAnswerBeforeTheRequestEndedIsFollowedByResetNoError) {
  Settings settings;
  settings.max_body = 1000;
  Fixture f(settings);
  H2Client client;
  std::string input = client.take_output();
  const auto id = client.request("POST", "/echo", "", {}, false);
  input += client.take_output();
  input += frame(NGHTTP2_DATA, 0, static_cast<std::uint32_t>(id), patterned(2000));  // no END_STREAM
  f.ch.write_inbound(ByteBuf::copy_of(input));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.status.at(static_cast<std::uint32_t>(id)), 413);
  ASSERT_EQ(frames.resets.count(static_cast<std::uint32_t>(id)), 1u);
  EXPECT_EQ(frames.resets.at(static_cast<std::uint32_t>(id)), std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_FALSE(frames.goaway.has_value());
  EXPECT_TRUE(f.ch.is_open());
}

// ---- abuse: each flood is answered with GOAWAY(ENHANCE_YOUR_CALM) and a close ---------------------

TEST(Http2ServerCodecTest, AContinuationFloodEndsTheConnectionWithEnhanceYourCalm) {
  Fixture f;
  // HEADERS without END_HEADERS, then CONTINUATION frames that never end the block, each with a
  // field: nghttp2 stops at 8 per block (CVE-2024-27316's class); the fields kept are bounded by
  // the header list limit meanwhile.
  std::string attack = raw_preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, kGetBlock);
  for (int i = 0; i < 10000; ++i) attack += frame(NGHTTP2_CONTINUATION, 0, 1, literal("x-c", "continued"));
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_TRUE(frames.status.empty());  // nothing was handed to the application
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AnHpackBombIsAnswered431WithoutKeepingItsFields) {
  Fixture f;
  // One 4000-byte field put in the dynamic table, then referenced 3000 times (one byte each): 12 MB
  // of header list from 7 KB on the wire.
  std::string block(kGetBlock);
  block += "\x40\x06x-bomb\x7f\xa1\x1e";  // literal with incremental indexing; value length 127 + 3873
  block += std::string(4000, 'b');
  block += std::string(3000, '\xbe');  // index 62: the newest dynamic entry
  ASSERT_LT(block.size(), 16384u);
  f.ch.write_inbound(ByteBuf::copy_of(raw_preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1, block)));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.status.at(1), 431);
  EXPECT_FALSE(frames.goaway.has_value());
  EXPECT_TRUE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, RepeatedHpackBombsSpendTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 20;
  Fixture f(settings);
  std::string attack = raw_preface();
  for (std::uint32_t i = 0; i < 30; ++i) {
    std::string block(kGetBlock);
    if (i == 0) {
      block += "\x40\x06x-bomb\x7f\xa1\x1e";
      block += std::string(4000, 'b');
    }
    block += std::string(100, '\xbe');
    attack += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1 + 2 * i, block);
  }
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, ASettingsFloodSpendsTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 50;
  Fixture f(settings);
  std::string attack = raw_preface();
  for (int i = 0; i < 60; ++i) attack += frame(NGHTTP2_SETTINGS, 0, 0, std::string("\x00\x03", 2) + u32(100));
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AnEmptyDataFloodSpendsTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 50;
  Fixture f(settings);
  std::string attack = raw_preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, kGetBlock);
  for (int i = 0; i < 60; ++i) attack += frame(NGHTTP2_DATA, 0, 1, "");
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AWindowUpdateFloodSpendsTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 50;
  Fixture f(settings);
  // Increments of 1 on the connection: valid frames, none earned by DATA the server sent.
  std::string attack = raw_preface();
  for (int i = 0; i < 100; ++i) attack += frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(1));
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, WindowUpdatesThatReturnConsumedDataAreNoGlitches) {
  Settings settings;
  settings.max_glitches = 5;
  Fixture f(settings);
  // A client that returns every byte it reads (a window of 1: one DATA frame, one pair of updates).
  H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1}});
  const auto id = client.request("GET", "/big?n=3000");
  f.pump(client);
  EXPECT_EQ(client.response(id).body, patterned(3000));
  EXPECT_FALSE(client.goaway_error().has_value());
  EXPECT_TRUE(f.ch.is_open());
}

// grpc++ returns windows in more updates than two per DATA frame (prefix and body apart): updates
// that return DATA the server sent are free however they are split, as long as each returns at
// least 512 bytes; returning more than was sent is a flood again.
TEST(Http2ServerCodecTest, WindowUpdatesReturningSentDataAreNoGlitchesHoweverSplit) {
  Settings settings;
  settings.max_glitches = 5;
  Fixture f(settings);
  H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 24}});  // the stream's window never runs out
  const auto id = client.request("GET", "/big?n=" + std::to_string(1 << 20));  // 64 DATA frames
  f.pump(client);
  ASSERT_EQ(client.response(id).body.size(), std::size_t{1} << 20);
  // 256 updates of 4 KiB on the connection: 1 MiB returned in far more than 2 x 64 frames.
  std::string updates;
  for (int i = 0; i < 256; ++i) updates += frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(4096));
  f.ch.write_inbound(ByteBuf::copy_of(updates));
  EXPECT_FALSE(ServerFrames(f.output()).goaway.has_value());
  EXPECT_TRUE(f.ch.is_open());
  // Returning what was never sent: past 2 MiB in all (both windows), the updates are glitches.
  updates.clear();
  for (int i = 0; i < 600; ++i) updates += frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(4096));
  f.ch.write_inbound(ByteBuf::copy_of(updates));
  EXPECT_EQ(ServerFrames(f.output()).goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

// MadeYouReset (CVE-2025-8671): valid-looking frames that make the server reset the stream. The
// resets the server sends count, so the flood ends like rapid reset.
TEST(Http2ServerCodecTest, StreamWindowOverflowsThatMakeTheServerResetSpendTheGlitchBudget) {
  // Each frame is an invalid frame (a glitch as it is read) and a reset sent (one more as it is
  // written): 60 read stay within 100, the resets sent spend the rest.
  Settings settings;
  settings.max_glitches = 100;
  Fixture f(settings);
  H2Client client;
  std::string attack = client.take_output();
  for (int i = 0; i < 60; ++i) {
    const auto id = client.request("GET", "/plaintext", "", {}, false);  // open: no END_STREAM
    attack += client.take_output();
    // The stream's send window past 2^31-1: a stream error (FLOW_CONTROL_ERROR).
    attack += frame(NGHTTP2_WINDOW_UPDATE, 0, static_cast<std::uint32_t>(id), u32(0x7fffffff));
  }
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  ASSERT_FALSE(frames.resets.empty());
  EXPECT_EQ(frames.resets.begin()->second, std::uint32_t{NGHTTP2_FLOW_CONTROL_ERROR});
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, DataPastTheContentLengthThatMakesTheServerResetSpendsTheGlitchBudget) {
  Settings settings;
  settings.max_glitches = 50;
  Fixture f(settings);
  H2Client client;
  std::string attack = client.take_output();
  for (int i = 0; i < 60; ++i) {
    const auto id = client.request("POST", "/echo", "", {{"content-length", "1"}}, false);
    attack += client.take_output();
    attack += frame(NGHTTP2_DATA, 0, static_cast<std::uint32_t>(id), "xx");  // more than declared
  }
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  ASSERT_FALSE(frames.resets.empty());
  EXPECT_EQ(frames.resets.begin()->second, std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_FALSE(f.ch.is_open());
}

// Two of MadeYouReset's frames are connection errors in nghttp2 (not stream resets): the first one
// ends the connection.
TEST(Http2ServerCodecTest, AZeroWindowUpdateOnAStreamEndsTheConnection) {
  Fixture f;
  H2Client client;
  std::string attack = client.take_output();
  const auto id = client.request("GET", "/plaintext", "", {}, false);
  attack += client.take_output();
  attack += frame(NGHTTP2_WINDOW_UPDATE, 0, static_cast<std::uint32_t>(id), u32(0));
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, DataOnAHalfClosedStreamEndsTheConnection) {
  Fixture f(Settings{}, holding_router());
  H2Client client;
  std::string attack = client.take_output();
  const auto id = client.request("GET", "/hold");  // END_STREAM: half-closed; the app holds it
  attack += client.take_output();
  attack += frame(NGHTTP2_DATA, 0, static_cast<std::uint32_t>(id), "x");
  f.ch.write_inbound(ByteBuf::copy_of(attack));
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_STREAM_CLOSED});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, TheGlitchBudgetIsRenewedEachWindow) {
  Settings settings;
  settings.max_glitches = 50;
  settings.idle_timeout = 1h;
  Fixture f(settings);
  H2Client client;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) client.ping();
    f.pump(client);
    ASSERT_TRUE(f.ch.is_open()) << round;
    f.ch.advance_time(settings.glitch_window);
  }
  EXPECT_FALSE(client.goaway_error().has_value());
}

TEST(Http2ServerCodecTest, GarbageAfterThePrefaceIsAProtocolError) {
  Fixture f;
  // A PING where the client's SETTINGS must come first.
  std::string bytes(kClientPreface);
  bytes += std::string("\x00\x00\x08\x06\x00\x00\x00\x00\x00", 9) + "12345678";
  f.ch.write_inbound(ByteBuf::copy_of(bytes));
  H2Client reader;  // reads the server's frames
  reader.receive(f.output());
  EXPECT_EQ(reader.goaway_error(), std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, ABadPrefaceIsAProtocolError) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n and more"));
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AnIdleConnectionGetsGoawayAndCloses) {
  Fixture f;
  H2Client client;
  const auto id = client.request("GET", "/plaintext");
  f.pump(client);
  ASSERT_TRUE(client.response(id).closed);
  f.ch.advance_time(74s);
  EXPECT_TRUE(f.ch.is_open());
  f.ch.advance_time(2s);
  client.receive(f.output());
  EXPECT_EQ(client.goaway_error(), std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, CloseConnectionSendsGoawayAfterTheAnswer) {
  auto router = std::make_shared<http::Router>();
  router->get("/bye", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("bye").close_connection()); });
  Fixture f({}, router);
  H2Client client;
  const auto id = client.request("GET", "/bye");
  f.pump(client);
  EXPECT_EQ(client.response(id).body, "bye");
  EXPECT_EQ(client.goaway_error(), std::uint32_t{NGHTTP2_NO_ERROR});
  EXPECT_FALSE(f.ch.is_open());
}

// ---- the detector: HTTP/1.1 and h2c on one port ---------------------------------------------------

struct DetectorFixture {
  DetectorFixture() {
    ch.pipeline().add_last("detect", std::make_shared<CleartextDetector>());
    ch.pipeline().add_last("router", test_router());
  }
  std::string output() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  EmbeddedChannel ch;
};

TEST(CleartextDetectorTest, Http11GoesToTheHttp11Codec) {
  DetectorFixture f;
  f.ch.write_inbound(ByteBuf::copy_of("GET /plaintext HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_THAT(f.output(), HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_EQ(f.ch.pipeline().names(), (std::vector<std::string>{"http1", "router"}));
}

TEST(CleartextDetectorTest, ThePrefaceInPiecesGoesToTheHttp2Codec) {
  DetectorFixture f;
  H2Client client;
  const auto id = client.request("GET", "/plaintext");
  const std::string out = client.take_output();
  for (char c : out.substr(0, 30)) f.ch.write_inbound(ByteBuf::copy_of(std::string_view(&c, 1)));
  f.ch.write_inbound(ByteBuf::copy_of(out.substr(30)));
  client.receive(f.output());
  f.ch.write_inbound(ByteBuf::copy_of(client.take_output()));  // the SETTINGS ACK
  EXPECT_EQ(client.response(id).body, "Hello, World!");
  EXPECT_EQ(f.ch.pipeline().names(), (std::vector<std::string>{"http2", "router"}));
}

TEST(CleartextDetectorTest, AnEarlyHttp11BytePicksHttp11) {
  DetectorFixture f;
  f.ch.write_inbound(ByteBuf::copy_of("P"));
  EXPECT_EQ(f.ch.pipeline().names(), (std::vector<std::string>{"detect", "router"}));
  f.ch.write_inbound(ByteBuf::copy_of("OST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"));
  EXPECT_THAT(f.output(), HasSubstr("\r\n\r\nhi"));
}

using test::base64url;

TEST(CleartextDetectorTest, AnUpgradeToH2cIsAnswered101AndTheRequestIsServedOnStream1) {
  DetectorFixture f;
  H2Client client;
  std::uint8_t payload[64];
  const nghttp2_settings_entry entries[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100},
                                            {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
  const ssize_t n = nghttp2_pack_settings_payload(payload, sizeof payload, entries, 2);
  ASSERT_GT(n, 0);
  ASSERT_EQ(nghttp2_session_upgrade2(client.session(), payload, static_cast<std::size_t>(n), 0, nullptr), 0);
  const std::string request = "GET /head?x=1 HTTP/1.1\r\nHost: up.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                              "Upgrade: h2c\r\nHTTP2-Settings: " + base64url(payload, static_cast<std::size_t>(n)) +
                              "\r\nX-Test: kept\r\n\r\n";
  f.ch.write_inbound(ByteBuf::copy_of(request + client.take_output()));  // the preface follows at once
  std::string out = f.output();
  const std::string k101 = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  ASSERT_EQ(out.substr(0, k101.size()), k101);
  client.receive(out.substr(k101.size()));
  f.ch.write_inbound(ByteBuf::copy_of(client.take_output()));
  client.receive(f.output());
  EXPECT_EQ(client.response(1).status, 200);
  EXPECT_EQ(client.response(1).body, "GET /head?x=1 host=up.example authority=up.example x=kept h2=yes seq=1");
  EXPECT_EQ(f.ch.pipeline().names(), (std::vector<std::string>{"http2", "router"}));
  // The connection goes on as HTTP/2.
  const auto id = client.request("GET", "/plaintext");
  f.ch.write_inbound(ByteBuf::copy_of(client.take_output()));
  client.receive(f.output());
  EXPECT_EQ(id, 3);
  EXPECT_EQ(client.response(id).body, "Hello, World!");
}

TEST(CleartextDetectorTest, AnUpgradeWithABodyIsServedAsHttp11) {
  DetectorFixture f;
  f.ch.write_inbound(ByteBuf::copy_of("POST /echo HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                                      "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nContent-Length: 2\r\n\r\nhi"));
  const std::string out = f.output();
  EXPECT_THAT(out, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, HasSubstr("\r\n\r\nhi"));
  EXPECT_EQ(f.ch.pipeline().names(), (std::vector<std::string>{"http1", "router"}));
}

TEST(CleartextDetectorTest, AnHttp11HeadInPiecesWaitsUntilItIsWhole) {
  DetectorFixture f;
  const std::string request = "GET /plaintext HTTP/1.1\r\nHost: h\r\n\r\n";
  for (char c : request) f.ch.write_inbound(ByteBuf::copy_of(std::string_view(&c, 1)));
  EXPECT_THAT(f.output(), HasSubstr("\r\n\r\nHello, World!"));
}

TEST(CleartextDetectorTest, ASilentConnectionIsClosedAfterTheIdleTimeout) {
  DetectorFixture f;
  f.ch.advance_time(76s);
  EXPECT_FALSE(f.ch.is_open());
}

// ---- keepalive and the ping policy ------------------------------------------------------------------

// A connection whose peer stops answering (a stream open, nothing read): PING after keepalive_time,
// the close after keepalive_timeout without its ACK.
TEST(Http2ServerCodecTest, AKeepalivePingUnansweredClosesTheConnection) {
  Settings settings;
  settings.keepalive_time = 10s;
  settings.keepalive_timeout = 5s;
  Fixture f(settings, holding_router());
  H2Client client;
  client.request("GET", "/hold");
  f.pump(client);
  f.ch.advance_time(9s);
  EXPECT_EQ(ServerFrames(f.output()).pings, 0);
  f.ch.advance_time(1s);
  EXPECT_EQ(ServerFrames(f.output()).pings, 1);
  f.ch.advance_time(4s);
  EXPECT_TRUE(f.ch.is_open());
  f.ch.advance_time(1s);  // (the client never saw the PING: no ACK)
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, AKeepalivePingAnsweredKeepsTheConnectionAndPingsAgainLater) {
  Settings settings;
  settings.keepalive_time = 10s;
  settings.keepalive_timeout = 5s;
  Fixture f(settings, holding_router());
  H2Client client;
  client.request("GET", "/hold");
  f.pump(client);
  f.ch.advance_time(10s);
  f.pump(client);  // the client answers the PING (nghttp2 acknowledges it)
  f.ch.advance_time(9s);
  EXPECT_TRUE(f.ch.is_open());
  f.ch.advance_time(1s);
  EXPECT_EQ(ServerFrames(f.output()).pings, 1);  // the next one, 10 s after the last read
  EXPECT_TRUE(f.ch.is_open());
}

std::string ping_frame(std::uint8_t n) { return frame(NGHTTP2_PING, 0, 0, std::string(7, '\0') + static_cast<char>(n)); }

// grpc-core's policy: PINGs closer than min_ping_interval are strikes; the third strike past
// max_ping_strikes (2) ends the connection with GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings").
TEST(Http2ServerCodecTest, PingsTooOftenGetGoawayTooManyPings) {
  Settings settings;
  settings.min_ping_interval = std::chrono::minutes(5);
  Fixture f(settings, holding_router());
  H2Client client;
  client.request("GET", "/hold");  // a stream open: the interval is min_ping_interval
  f.pump(client);
  for (std::uint8_t i = 0; i < 3; ++i) {
    f.ch.write_inbound(ByteBuf::copy_of(ping_frame(i)));  // the first, then two strikes
    f.ch.advance_time(1s);
  }
  EXPECT_FALSE(ServerFrames(f.output()).goaway.has_value());
  f.ch.write_inbound(ByteBuf::copy_of(ping_frame(3)));  // the third strike
  const ServerFrames frames(f.output());
  EXPECT_EQ(frames.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
  EXPECT_EQ(frames.goaway_debug, "too_many_pings");
  EXPECT_FALSE(f.ch.is_open());
}

TEST(Http2ServerCodecTest, PingsAtThePermittedIntervalOrAfterDataAreNoStrikes) {
  Settings settings;
  settings.min_ping_interval = std::chrono::minutes(5);
  settings.request_timeout = Duration::zero();  // the upload below stays open for 25 minutes
  Fixture f(settings);
  H2Client client;
  // With a stream open, every 5 minutes is fine.
  client.request("POST", "/upload", "", {}, false);  // a request still arriving: never dispatched
  f.pump(client);
  for (std::uint8_t i = 0; i < 5; ++i) {
    f.ch.write_inbound(ByteBuf::copy_of(ping_frame(i)));
    f.ch.advance_time(std::chrono::minutes(5));
  }
  // Each response the server sends forgives the strikes: a PING before each request is fine.
  for (int i = 0; i < 5; ++i) {
    f.ch.write_inbound(ByteBuf::copy_of(ping_frame(static_cast<std::uint8_t>(10 + i))));
    const auto id = client.request("GET", "/plaintext");
    f.pump(client);
    EXPECT_EQ(client.response(id).status, 200) << i;
  }
  EXPECT_FALSE(ServerFrames(f.output()).goaway.has_value());
  EXPECT_TRUE(f.ch.is_open());
}

}  // namespace
}  // namespace weft::http2
