// A gRPC server's per-call metrics (gRFC A66, in Prometheus form): each call counted started and
// ended once under its method and status, registered methods by name and every other path as
// "other", its duration on the loop's clock, and its message bytes each way.

#include <gtest/gtest.h>

#include <string>

#include "metrics/metrics_test_support.h"
#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/grpc/service_registry.h"
#include "weft/metrics/instrumentation.h"

using namespace std::chrono_literals;

namespace weft::grpc::metrics_test {
namespace {

using test::H2Client;
using test::metric_value;

std::string framed(std::string_view message) {
  std::string out(5, '\0');
  out[4] = static_cast<char>(message.size());  // (messages under 256 bytes here)
  out.append(message);
  return out;
}

// Resumes the coroutine after `delay` on `loop` (the EmbeddedChannel's, whose clock the test moves).
struct After {
  EventLoop& loop;
  Duration delay;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    loop.schedule(delay, [h] { h.resume(); });
  }
  void await_resume() const noexcept {}
};

struct Fixture {
  Fixture() {
    metrics::set_instrumentation_enabled(true);
    ServiceRegistry services;
    services.add_unary("/metrics.Test/Echo", [](ServerCall&, ByteBuf request) -> Task<ByteBuf> { co_return request; });
    services.add("/metrics.Test/Fail", [](ServerCall& call) -> Task<> {
      co_await call.write(ByteBuf::copy_of("partial"));
      throw StatusError(Status{StatusCode::invalid_argument, "no"});
    });
    EventLoop* loop = &ch.loop();
    services.add("/metrics.Test/Slow", [loop](ServerCall& call) -> Task<> {
      co_await After{*loop, 50ms};
      co_await call.write(ByteBuf::copy_of("late"));
    });
    services.add("/metrics.Test/Wait", [](ServerCall& call) -> Task<> {
      while (co_await call.read()) {
      }
    });
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(std::move(settings)));
  }
  void pump() {
    for (int round = 0; round < 10'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      ch.run_pending();
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  // Starts a call to `path` with `body`; the request ends unless `end` is false.
  std::int32_t start(const std::string& path, const std::string& body, bool end = true) {
    const auto id = client.request_streamed("POST", path, {{"content-type", "application/grpc"}, {"te", "trailers"}});
    client.send(id, body);
    if (end) client.finish(id);
    pump();
    return id;
  }

  EmbeddedChannel ch;
  H2Client client;
};

std::string labels(const std::string& method, const std::string& status) {
  return "grpc_method=\"" + method + "\",grpc_status=\"" + status + "\"";
}
double started(const std::string& method) {
  return metric_value("grpc_server_call_started_total{grpc_method=\"" + method + "\"}");
}
double ended(const std::string& method, const std::string& status) {
  return metric_value("grpc_server_call_duration_seconds_count{" + labels(method, status) + "}");
}
double sent_sum(const std::string& method, const std::string& status) {
  return metric_value("grpc_server_call_sent_total_compressed_message_size_bytes_sum{" + labels(method, status) + "}");
}
double rcvd_sum(const std::string& method, const std::string& status) {
  return metric_value("grpc_server_call_rcvd_total_compressed_message_size_bytes_sum{" + labels(method, status) + "}");
}

TEST(GrpcServerMetrics, AUnaryCallIsCountedStartedAndEndedOkWithItsMessageBytes) {
  Fixture f;
  const std::string m = "metrics.Test/Echo";
  const double s0 = started(m), e0 = ended(m, "OK"), sent0 = sent_sum(m, "OK"), rcvd0 = rcvd_sum(m, "OK");
  const double small0 = metric_value("grpc_server_call_sent_total_compressed_message_size_bytes_bucket{" +
                                     labels(m, "OK") + ",le=\"1024.0\"}");
  f.start("/metrics.Test/Echo", framed("hello, metrics"));
  ASSERT_TRUE(f.client.response(1).closed);
  EXPECT_EQ(started(m) - s0, 1);
  EXPECT_EQ(ended(m, "OK") - e0, 1);
  EXPECT_EQ(sent_sum(m, "OK") - sent0, 14);  // the message, without its 5-byte prefix
  EXPECT_EQ(rcvd_sum(m, "OK") - rcvd0, 14);
  EXPECT_EQ(metric_value("grpc_server_call_sent_total_compressed_message_size_bytes_bucket{" + labels(m, "OK") +
                         ",le=\"1024.0\"}") -
                small0,
            1);
}

TEST(GrpcServerMetrics, EachCallEndsUnderItsStatus) {
  Fixture f;
  const double fail0 = ended("metrics.Test/Fail", "INVALID_ARGUMENT");
  const double sent0 = sent_sum("metrics.Test/Fail", "INVALID_ARGUMENT");
  const double cancel0 = ended("metrics.Test/Wait", "CANCELLED");
  const double ok0 = ended("metrics.Test/Wait", "OK");
  f.start("/metrics.Test/Fail", "");
  EXPECT_EQ(ended("metrics.Test/Fail", "INVALID_ARGUMENT") - fail0, 1);
  EXPECT_EQ(sent_sum("metrics.Test/Fail", "INVALID_ARGUMENT") - sent0, 7);  // "partial"
  const auto id = f.start("/metrics.Test/Wait", framed("x"), false);
  f.client.reset(id);
  f.pump();
  EXPECT_EQ(ended("metrics.Test/Wait", "CANCELLED") - cancel0, 1);
  EXPECT_EQ(ended("metrics.Test/Wait", "OK"), ok0);
}

TEST(GrpcServerMetrics, PathsNotRegisteredAreCountedAsOther) {
  Fixture f;
  const double s0 = started("other"), e0 = ended("other", "UNIMPLEMENTED");
  f.start("/metrics.Test/Nope", framed("x"));
  f.start("/made.up/Anything", framed("x"));
  EXPECT_EQ(started("other") - s0, 2);
  EXPECT_EQ(ended("other", "UNIMPLEMENTED") - e0, 2);
  const std::string text = metrics::Registry::global().scrape();
  EXPECT_EQ(text.find("metrics.Test/Nope"), std::string::npos);
  EXPECT_EQ(text.find("made.up/Anything"), std::string::npos);
}

TEST(GrpcServerMetrics, TheDurationRunsFromTheRequestHeadToTheStatus) {
  Fixture f;
  const std::string m = "metrics.Test/Slow";
  auto bucket = [&](const char* le) {
    return metric_value("grpc_server_call_duration_seconds_bucket{" + labels(m, "OK") + ",le=\"" + le + "\"}");
  };
  const double sum0 = metric_value("grpc_server_call_duration_seconds_sum{" + labels(m, "OK") + "}");
  const double at40 = bucket("0.04"), at50 = bucket("0.05");
  const auto id = f.start("/metrics.Test/Slow", "");
  EXPECT_FALSE(f.client.response(id).closed);
  f.ch.advance_time(50ms);
  f.pump();
  ASSERT_TRUE(f.client.response(id).closed);
  EXPECT_EQ(bucket("0.04") - at40, 0);
  EXPECT_EQ(bucket("0.05") - at50, 1);
  EXPECT_DOUBLE_EQ(metric_value("grpc_server_call_duration_seconds_sum{" + labels(m, "OK") + "}") - sum0, 0.05);
}

TEST(GrpcServerMetrics, NothingIsCountedWhileInstrumentationIsOff) {
  Fixture f;
  metrics::set_instrumentation_enabled(false);
  const double s0 = started("metrics.Test/Echo"), e0 = ended("metrics.Test/Echo", "OK");
  f.start("/metrics.Test/Echo", framed("x"));
  EXPECT_EQ(started("metrics.Test/Echo"), s0);
  EXPECT_EQ(ended("metrics.Test/Echo", "OK"), e0);
  metrics::set_instrumentation_enabled(true);
}

}  // namespace
}  // namespace weft::grpc::metrics_test
