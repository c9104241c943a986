// The HTTP server's send timeout over real sockets, on every transport: a client that pipelines and
// never reads its answers is disconnected after Limits::send_timeout without progress, and the
// server keeps serving others.

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

class HttpTimeoutsTest : public test::TransportTest {};

TEST_P(HttpTimeoutsTest, AClientThatNeverReadsIsClosedAfterTheSendTimeout) {
  EventLoopGroup group(transport(), loops(1, 4));
  const std::string big(256 * 1024, 'b');
  auto router = std::make_shared<http::Router>();
  router->get("/big", [&big](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body_view(big)); });
  std::atomic<int> closed{0};
  http::Limits limits;
  limits.send_timeout = 300ms;
  ServerBootstrap b;
  b.group(group).child_handler([router, limits, &closed](Channel& ch) {
    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>(limits));
    ch.pipeline().add_last("router", router);
    ch.close_future().add_listener([&closed](const Future<void>&) { closed.fetch_add(1); });
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  const std::uint16_t port = server->local_address().port();

  test::BlockingClient::Options options;
  options.receive_buffer = 4096;
  test::BlockingClient stalled(port, options);
  ASSERT_TRUE(stalled.is_open());
  std::string requests;
  for (int i = 0; i < 64; ++i) requests += "GET /big HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(stalled.send_all(requests));
  // Its answers (16 MiB) cannot all be sent: the server gives up on it, whatever the machine's load.
  EXPECT_TRUE(test::eventually([&] { return closed.load() == 1; }, 60000ms));

  test::BlockingClient healthy(port);
  ASSERT_TRUE(healthy.send_all("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  std::string answer;
  EXPECT_EQ(healthy.recv_until_end(&answer, 20000ms), test::StreamEnd::eof);
  EXPECT_NE(answer.find("HTTP/1.1 200 OK\r\n"), std::string::npos);
  EXPECT_GT(answer.size(), big.size());
  server->close().wait();
  group.shutdown_gracefully(0ms, 5s).wait();
}

WEFT_ON_EVERY_TRANSPORT(HttpTimeoutsTest);

}  // namespace
}  // namespace weft
