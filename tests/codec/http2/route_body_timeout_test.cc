// Settings::request_timeout for a Router's streamed route's body over HTTP/2, in an EmbeddedChannel
// on a manual clock, driven by an nghttp2 client: the clock restarts at each take of the reader; a
// client that stalls fails the reader with HttpProtocolError(408), its stream is answered 408 and
// reset with CANCEL, and the connection serves on; bytes that wait unread are never timed.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/core/loop_signal.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using http::BodyReader;
using http::HttpResponse;
using http::Request;
using test::H2Client;

constexpr Duration kTimeout = 1s;

struct Seen {
  std::string error;              // what /upload's next() threw, "<type> <status>"
  std::uint64_t read = 0;         // bytes /upload has taken
  LoopSignal* release = nullptr;  // /held waits on it before it reads
};

std::shared_ptr<http::Router> routes(Seen& seen) {
  auto router = std::make_shared<http::Router>();
  router->post("/upload", [&seen](Request&, BodyReader& body) -> Task<HttpResponse> {
    try {
      while (std::optional<ByteBuf> chunk = co_await body.next()) seen.read += chunk->readable_bytes();
    } catch (const http::HttpProtocolError& e) {
      seen.error = "HttpProtocolError " + std::to_string(e.status());
      throw;
    }
    co_return HttpResponse(200).body(std::to_string(seen.read));
  });
  router->post("/held", [&seen](Request& request, BodyReader& body) -> Task<HttpResponse> {
    LoopSignal release(request.channel().loop());
    seen.release = &release;
    co_await release.wait();
    std::uint64_t bytes = 0;
    while (std::optional<ByteBuf> chunk = co_await body.next()) bytes += chunk->readable_bytes();
    co_return HttpResponse(200).body(std::to_string(bytes));
  });
  router->get("/plain", [](Request&) { return HttpResponse(200).body_view("plain"); });
  return router;
}

struct Fixture {
  Fixture() {
    Settings settings;
    settings.request_timeout = kTimeout;
    ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
    ch.pipeline().add_last("router", routes(seen));
  }
  // Moves bytes both ways (and runs the routes' tasks) until neither side has anything to say.
  void pump() {
    for (int round = 0; round < 10'000; ++round) {
      ch.run_pending();
      const std::string out = client.take_output();
      if (!out.empty()) ch.write_inbound(ByteBuf::copy_of(out));
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  Seen seen;
  std::shared_ptr<EmbeddedChannel> channel = std::make_shared<EmbeddedChannel>();  // a route's task holds it
  EmbeddedChannel& ch = *channel;
  H2Client client;
};

// The deadline runs from the reader's last take: 5 bytes taken, more 900 ms later (taken: the clock
// restarts), then nothing. The reader fails with 408 only a full timeout after the last take; the
// stream is answered 408 and reset with CANCEL (not NO_ERROR), and the connection serves on.
TEST(Http2RouteBodyTimeoutTest, AStalledBodyFailsWith408AndItsStreamIsCancelled) {
  Fixture f;
  const std::int32_t id = f.client.request_streamed("POST", "/upload");
  f.client.send(id, "hello");
  f.pump();
  ASSERT_EQ(f.seen.read, 5u);
  f.ch.advance_time(900ms);
  f.client.send(id, "world");
  f.pump();
  ASSERT_EQ(f.seen.read, 10u);
  f.ch.advance_time(kTimeout - 1ms);  // 1.9 s after the HEADERS, 999 ms after the last take
  f.pump();
  EXPECT_EQ(f.seen.error, "");
  EXPECT_FALSE(f.client.response(id).closed);
  f.ch.advance_time(1ms);
  f.pump();
  EXPECT_EQ(f.seen.error, "HttpProtocolError 408");
  EXPECT_EQ(f.client.response(id).status, 408);
  EXPECT_TRUE(f.client.response(id).closed);
  EXPECT_EQ(f.client.response(id).close_error, std::uint32_t{NGHTTP2_CANCEL});
  const std::int32_t next = f.client.request("GET", "/plain");
  f.pump();
  EXPECT_EQ(f.client.response(next).status, 200);
  EXPECT_EQ(f.client.response(next).body, "plain");
  EXPECT_TRUE(f.ch.is_open());
  EXPECT_FALSE(f.client.goaway_error().has_value());
}

// A reader that leaves its full window unread for ten timeouts: the client sent all it may, so
// nothing is timed (while a stalled upload opened after it times out); once the reader reads, the
// body arrives whole.
TEST(Http2RouteBodyTimeoutTest, BytesWaitingForTheReaderAreNeverTimed) {
  Fixture f;
  constexpr std::size_t kBody = 200'000;  // three windows
  const std::int32_t id = f.client.request_streamed("POST", "/held");
  f.client.send(id, std::string(kBody, 'x'));
  f.pump();
  ASSERT_GT(f.client.unsent(id), 0u);  // the window is full
  const std::int32_t stalled = f.client.request_streamed("POST", "/upload");
  f.client.send(stalled, "x");
  f.pump();
  for (int i = 0; i < 10; ++i) {
    f.ch.advance_time(kTimeout);
    f.pump();
  }
  EXPECT_EQ(f.client.response(stalled).status, 408);
  EXPECT_FALSE(f.client.response(id).closed);
  ASSERT_NE(f.seen.release, nullptr);
  f.seen.release->notify();
  f.pump();
  f.client.finish(id);
  f.pump();
  EXPECT_EQ(f.client.response(id).status, 200);
  EXPECT_EQ(f.client.response(id).body, std::to_string(kBody));
  EXPECT_EQ(f.client.response(id).close_error, std::uint32_t{NGHTTP2_NO_ERROR});
}

}  // namespace
}  // namespace weft::http2
