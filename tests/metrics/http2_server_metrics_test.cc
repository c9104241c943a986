// The HTTP/2 server codec's protocol metrics, driven by an nghttp2 client (and raw frames): streams
// opened, closed and active; RST_STREAM by direction and code; GOAWAY by code; glitch-budget closes.
// Each count moves by exactly what the peer did.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "metrics/metrics_test_support.h"
#include "support/h2_client.h"
#include "support/h2_frames.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/metrics/instrumentation.h"

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::H2Client;
using test::metric_value;
using namespace std::chrono_literals;

std::shared_ptr<http::Router> router() {
  auto router = std::make_shared<http::Router>();
  router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("hi")); });
  return router;
}

struct Fixture {
  explicit Fixture(Settings settings = {}) {
    metrics::set_instrumentation_enabled(true);
    ch.pipeline().add_last("http2", std::make_shared<ServerCodec>(settings));
    ch.pipeline().add_last("app", router());
  }
  void pump(H2Client& client) {
    for (int round = 0; round < 10'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  EmbeddedChannel ch;
};

// The series this file checks, read together.
struct Counts {
  std::map<std::string, double> values;
  static Counts now() {
    Counts c;
    for (const char* name : {"weft_http2_server_streams_opened_total", "weft_http2_server_streams_closed_total",
                             "weft_http2_server_streams_active", "weft_http2_server_glitch_budget_exceeded_total"}) {
      c.values[name] = metric_value(name);
    }
    for (const char* code : {"NO_ERROR", "PROTOCOL_ERROR", "REFUSED_STREAM", "CANCEL", "ENHANCE_YOUR_CALM", "OTHER"}) {
      for (const char* direction : {"sent", "received"}) {
        const std::string series =
            std::string("weft_http2_server_rst_stream_total{direction=\"") + direction + "\",code=\"" + code + "\"}";
        c.values[series] = metric_value(series);
      }
      const std::string goaway = std::string("weft_http2_server_goaway_sent_total{code=\"") + code + "\"}";
      c.values[goaway] = metric_value(goaway);
    }
    return c;
  }
  // What moved since `before`, by series (those that did not are left out).
  std::map<std::string, double> since(const Counts& before) const {
    std::map<std::string, double> moved;
    for (const auto& [name, value] : values) {
      if (value != before.values.at(name)) moved[name] = value - before.values.at(name);
    }
    return moved;
  }
};

using Moves = std::map<std::string, double>;
constexpr const char* kOpened = "weft_http2_server_streams_opened_total";
constexpr const char* kClosed = "weft_http2_server_streams_closed_total";
constexpr const char* kActive = "weft_http2_server_streams_active";

TEST(Http2ServerMetrics, StreamsAreCountedOpenedClosedAndActive) {
  Fixture f;
  H2Client client;
  const Counts before = Counts::now();
  for (int i = 0; i < 3; ++i) client.request("GET", "/plaintext");
  const auto held = client.request("GET", "/plaintext", "", {}, false);  // no END_STREAM: stays open
  f.pump(client);
  EXPECT_EQ(Counts::now().since(before), (Moves{{kOpened, 4}, {kClosed, 3}, {kActive, 1}}));

  client.reset(held);  // CANCEL
  f.pump(client);
  EXPECT_EQ(Counts::now().since(before),
            (Moves{{kOpened, 4},
                   {kClosed, 4},
                   {"weft_http2_server_rst_stream_total{direction=\"received\",code=\"CANCEL\"}", 1}}));

  // A code RFC 9113 does not define is OTHER.
  const auto odd = client.request("GET", "/plaintext", "", {}, false);
  f.pump(client);
  client.reset(odd, 0x1234);
  f.pump(client);
  EXPECT_EQ(Counts::now().since(before),
            (Moves{{kOpened, 5},
                   {kClosed, 5},
                   {"weft_http2_server_rst_stream_total{direction=\"received\",code=\"CANCEL\"}", 1},
                   {"weft_http2_server_rst_stream_total{direction=\"received\",code=\"OTHER\"}", 1}}));
}

TEST(Http2ServerMetrics, StreamsStillOpenWhenTheConnectionClosesAreNoLongerActive) {
  const Counts before = Counts::now();
  {
    Fixture f;
    H2Client client;
    client.request("GET", "/plaintext", "", {}, false);
    client.request("GET", "/plaintext", "", {}, false);
    f.pump(client);
    EXPECT_EQ(Counts::now().since(before), (Moves{{kOpened, 2}, {kActive, 2}}));
    f.ch.close();
  }
  const Moves moved = Counts::now().since(before);
  EXPECT_EQ(moved.count(kActive), 0u);
  EXPECT_EQ(moved.at(kOpened), 2);
  EXPECT_EQ(moved.at(kClosed), 2);
}

TEST(Http2ServerMetrics, StreamsPastTheLimitAreRefusedAndCountedSent) {
  Settings settings;
  settings.max_concurrent_streams = 2;
  Fixture f(settings);
  H2Client client;
  const Counts before = Counts::now();
  // All sent before the server's SETTINGS reach the client: the third is refused.
  for (int i = 0; i < 3; ++i) client.request("GET", "/plaintext", "", {}, false);
  f.pump(client);
  const Moves moved = Counts::now().since(before);
  EXPECT_EQ(moved.at("weft_http2_server_rst_stream_total{direction=\"sent\",code=\"REFUSED_STREAM\"}"), 1);
  EXPECT_EQ(moved.at(kActive), 2);
}

TEST(Http2ServerMetrics, AProtocolErrorSendsOneGoawayCounted) {
  Fixture f;
  const Counts before = Counts::now();
  // A PING where the client's SETTINGS must come first.
  std::string bytes(test::kH2Preface);
  bytes += test::frame(NGHTTP2_PING, 0, 0, "12345678");
  f.ch.write_inbound(ByteBuf::copy_of(bytes));
  EXPECT_FALSE(f.ch.is_open());
  EXPECT_EQ(Counts::now().since(before), (Moves{{"weft_http2_server_goaway_sent_total{code=\"PROTOCOL_ERROR\"}", 1}}));
}

TEST(Http2ServerMetrics, TheConnectionCloseReasonIsNoted) {
  {
    Fixture f;
    H2Client client;
    f.pump(client);
    // The client's GOAWAY: the server closes, on the client's account.
    f.ch.write_inbound(ByteBuf::copy_of(test::frame(NGHTTP2_GOAWAY, 0, 0, test::u32(0) + test::u32(0))));
    EXPECT_FALSE(f.ch.is_open());
    EXPECT_EQ(f.ch.close_reason(), CloseReason::peer_closed);
  }
  {
    Fixture f;
    f.ch.write_inbound(ByteBuf::copy_of(std::string(test::kH2Preface) + test::frame(NGHTTP2_PING, 0, 0, "12345678")));
    EXPECT_FALSE(f.ch.is_open());
    EXPECT_EQ(f.ch.close_reason(), CloseReason::protocol_error);
  }
  {
    // Past Settings::max_connection_age and its grace: the server ended it as a drain does.
    Settings settings;
    settings.max_connection_age = 1s;
    settings.max_connection_age_grace = 1s;
    Fixture f(settings);
    H2Client client;
    f.pump(client);
    f.ch.advance_time(1100ms);
    f.pump(client);
    EXPECT_TRUE(f.ch.is_open());  // told to go, in its grace
    EXPECT_TRUE(client.goaway_error().has_value());
    f.ch.advance_time(1100ms);
    f.pump(client);
    f.ch.advance_time(60s);
    EXPECT_FALSE(f.ch.is_open());
    EXPECT_EQ(f.ch.close_reason(), CloseReason::drain);
  }
}

TEST(Http2ServerMetrics, SpendingTheGlitchBudgetIsCountedWithItsGoaway) {
  Settings settings;
  settings.max_glitches = 20;
  Fixture f(settings);
  H2Client client;
  f.pump(client);
  const Counts before = Counts::now();
  for (int i = 0; i < 30; ++i) client.ping();
  f.pump(client);
  EXPECT_FALSE(f.ch.is_open());
  EXPECT_EQ(f.ch.close_reason(), CloseReason::protocol_error);
  EXPECT_EQ(Counts::now().since(before),
            (Moves{{"weft_http2_server_glitch_budget_exceeded_total", 1},
                   {"weft_http2_server_goaway_sent_total{code=\"ENHANCE_YOUR_CALM\"}", 1}}));
}

TEST(Http2ServerMetrics, NothingIsCountedWhileInstrumentationIsOff) {
  Fixture f;
  H2Client client;
  metrics::set_instrumentation_enabled(false);
  const Counts before = Counts::now();
  const auto id = client.request("GET", "/plaintext", "", {}, false);
  client.request("GET", "/plaintext");
  f.pump(client);
  client.reset(id);
  f.pump(client);
  f.ch.close();
  EXPECT_EQ(Counts::now().since(before), Moves{});
  metrics::set_instrumentation_enabled(true);
}

}  // namespace
}  // namespace weft::http2
