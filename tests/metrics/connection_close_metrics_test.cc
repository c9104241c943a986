// weft_server_connections_closed_total{transport, reason}: each way a connection can end is
// counted once, under its first cause, on every transport: the peer's FIN, the peer's reset, a
// request the HTTP/1.1 codec refuses, its idle timeout, and a close the server chose (a
// request's `Connection: close`).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "metrics/metrics_test_support.h"
#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/metrics/instrumentation.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// Answers every request.
class Answerer final : public InboundHandler<http::HttpRequest, http::HttpRequest> {
 public:
  void channel_read(Context& ctx, http::HttpRequest&&) override { ctx.write(http::HttpResponse(200).body_view("ok")); }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
};

class ConnectionCloseMetricsTest : public test::TransportTest {
 protected:
  // The server, whose keep-alive connections close after `idle_timeout`.
  void start(Duration idle_timeout = 60s) {
    metrics::set_instrumentation_enabled(true);
    http::Limits limits;
    limits.idle_timeout = idle_timeout;
    ServerBootstrap b;
    b.group(group_).child_handler([limits](Channel& ch) {
      ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>(limits));
      ch.pipeline().add_last("app", std::make_shared<Answerer>());
    });
    server_ = b.bind(SocketAddress::loopback(0)).get();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->close().wait();
    group_.shutdown_gracefully(0ms, 5s).wait();
  }
  double closed(const char* reason) const {
    return test::metric_value("weft_server_connections_closed_total{transport=\"" + std::string(transport().name()) +
                              "\",reason=\"" + reason + "\"}");
  }
  // Waits (bounded: a hang fails) until `reason`'s count is `before` + 1.
  bool counted_once(const char* reason, double before) const {
    const bool moved = test::eventually([&] { return closed(reason) >= before + 1; }, 20s);
    return moved && closed(reason) == before + 1;
  }
  std::uint16_t port() const { return server_->local_address().port(); }

  EventLoopGroup group_{transport(), loops(1, 3)};
  ChannelPtr server_;
};
WEFT_ON_EVERY_TRANSPORT(ConnectionCloseMetricsTest);

// Sends a GET and reads its answer (true once it is whole).
bool ask(test::BlockingClient& client) {
  if (!client.send_all("GET / HTTP/1.1\r\nHost: h\r\n\r\n")) return false;
  std::string answer;
  test::StreamEnd end = test::StreamEnd::timeout;
  while (answer.find("\r\n\r\nok") == std::string::npos) {
    const std::string got = client.recv_some(4096, 20s, &end);
    if (got.empty()) return false;
    answer += got;
  }
  return true;
}

TEST_P(ConnectionCloseMetricsTest, ThePeersFinIsPeerClosed) {
  start();
  const double before = closed("peer_closed");
  test::BlockingClient client(port());
  ASSERT_TRUE(ask(client));
  client.shutdown_write();
  EXPECT_TRUE(counted_once("peer_closed", before));
}

TEST_P(ConnectionCloseMetricsTest, ThePeersResetIsReset) {
  start();
  const double before = closed("reset");
  const double peer_closed_before = closed("peer_closed");
  test::BlockingClient client(port());
  ASSERT_TRUE(ask(client));
  client.reset();
  EXPECT_TRUE(counted_once("reset", before));
  EXPECT_EQ(closed("peer_closed"), peer_closed_before);
}

TEST_P(ConnectionCloseMetricsTest, ARequestTheCodecRefusesIsAProtocolError) {
  start();
  const double before = closed("protocol_error");
  const double peer_closed_before = closed("peer_closed");
  test::BlockingClient client(port());
  ASSERT_TRUE(client.send_all("NOT HTTP AT ALL\r\n\r\n"));
  std::string answer;
  EXPECT_EQ(client.recv_until_end(&answer, 20s), test::StreamEnd::eof);
  EXPECT_NE(answer.find(" 400 "), std::string::npos) << answer;
  // The client's FIN after the answer does not change the cause.
  client.close();
  EXPECT_TRUE(counted_once("protocol_error", before));
  EXPECT_EQ(closed("peer_closed"), peer_closed_before);
}

TEST_P(ConnectionCloseMetricsTest, AKeepAliveConnectionLeftIdleIsIdleTimeout) {
  start(100ms);
  const double before = closed("idle_timeout");
  test::BlockingClient client(port());
  ASSERT_TRUE(ask(client));
  EXPECT_TRUE(counted_once("idle_timeout", before));
}

TEST_P(ConnectionCloseMetricsTest, ARequestForConnectionCloseIsLocal) {
  start();
  const double before = closed("local");
  test::BlockingClient client(port());
  ASSERT_TRUE(client.send_all("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  std::string answer;
  EXPECT_EQ(client.recv_until_end(&answer, 20s), test::StreamEnd::eof);  // the server's FIN
  client.close();  // then the client's, which the server's lingering close waits for
  EXPECT_TRUE(counted_once("local", before));
}

}  // namespace
}  // namespace weft
