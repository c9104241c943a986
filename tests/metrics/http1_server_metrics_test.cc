// The HTTP/1.1 server codec's request metrics: every answer counted once, by method and status
// class, whatever way its request arrived (pipelined, a byte at a time), and nothing while off.
#include <gtest/gtest.h>

#include <string>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/metrics/http_server_metrics.h"
#include "weft/metrics/instrumentation.h"
#include "weft/metrics/registry.h"

namespace weft::http {
namespace {

// Answers each request: 404 for /missing, else 200.
class Answerer final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  void channel_read(Context& ctx, HttpRequest&& request) override {
    ctx.write(HttpResponse(request.path() == "/missing" ? 404 : 200).body_view("ok"));
  }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
};

// The value of one http1 series in the global registry's scrape (0 before its first count).
double http1(const std::string& metric, const char* method, const char* status) {
  const std::string series = metric + R"({protocol="http1",method=")" + method + R"(",status=")" + status + R"("} )";
  const std::string text = metrics::Registry::global().scrape();
  const auto at = text.find(series);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size()));
}

struct Counts {
  double get_2xx, get_4xx, post_2xx, head_2xx, get_2xx_observed;
  static Counts now() {
    return {http1("weft_http_server_requests_total", "GET", "2xx"),
            http1("weft_http_server_requests_total", "GET", "4xx"),
            http1("weft_http_server_requests_total", "POST", "2xx"),
            http1("weft_http_server_requests_total", "HEAD", "2xx"),
            http1("weft_http_server_request_duration_seconds_count", "GET", "2xx")};
  }
};

void serve(EmbeddedChannel& ch) {
  // One read: four pipelined requests, methods and statuses mixed.
  ch.write_inbound(
      ByteBuf::copy_of("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                       "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"
                       "GET /missing HTTP/1.1\r\nHost: h\r\n\r\n"
                       "HEAD /c HTTP/1.1\r\nHost: h\r\n\r\n"));
  // Then one a byte at a time.
  for (char c : std::string("GET /d HTTP/1.1\r\nHost: h\r\n\r\n"))
    ch.write_inbound(ByteBuf::copy_of(std::string(1, c)));
  int answers = 0;
  std::string out;
  while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
  for (auto at = out.find("HTTP/1.1 "); at != std::string::npos; at = out.find("HTTP/1.1 ", at + 1)) ++answers;
  EXPECT_EQ(answers, 5) << out;
}

TEST(Http1ServerMetrics, EachAnswerIsCountedOnceByMethodAndStatus) {
  metrics::set_instrumentation_enabled(true);
  const Counts before = Counts::now();
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("app", std::make_shared<Answerer>());
  serve(ch);
  const Counts after = Counts::now();
  EXPECT_EQ(after.get_2xx - before.get_2xx, 2);
  EXPECT_EQ(after.get_4xx - before.get_4xx, 1);
  EXPECT_EQ(after.post_2xx - before.post_2xx, 1);
  EXPECT_EQ(after.head_2xx - before.head_2xx, 1);
  EXPECT_EQ(after.get_2xx_observed - before.get_2xx_observed, 2);  // each in the latency histogram too
  ch.close();
}

TEST(Http1ServerMetrics, NothingIsCountedWhileInstrumentationIsOff) {
  metrics::set_instrumentation_enabled(false);
  const Counts before = Counts::now();
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("app", std::make_shared<Answerer>());
  serve(ch);
  const Counts after = Counts::now();
  metrics::set_instrumentation_enabled(true);
  EXPECT_EQ(after.get_2xx, before.get_2xx);
  EXPECT_EQ(after.get_4xx, before.get_4xx);
  EXPECT_EQ(after.post_2xx, before.post_2xx);
  EXPECT_EQ(after.head_2xx, before.head_2xx);
  ch.close();
}

}  // namespace
}  // namespace weft::http
