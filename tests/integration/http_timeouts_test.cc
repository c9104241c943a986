// The HTTP server's timeouts over real sockets, on every transport: a client that pipelines and
// never reads its answers is disconnected after Limits::send_timeout without progress, an idle
// keep-alive connection after Limits::idle_timeout, and the server keeps serving others -- on the
// blocking transport, where a connection holds a thread, idle ones must not lock new clients out.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

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

// One request on a fresh connection; true when it is answered with 200. A connection refused for
// want of a thread (blocking transport) is closed by the server unanswered: false.
bool served_once(std::uint16_t port) {
  test::BlockingClient client(port);
  if (!client.is_open()) return false;
  if (!client.send_all("GET /hi HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 2000ms)) return false;
  std::string answer;
  client.recv_until_end(&answer, 2000ms);
  return answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0;
}

TEST_P(HttpTimeoutsTest, IdleKeepAliveConnectionsAreClosedAndNoLongerLockNewClientsOut) {
  constexpr int kIdle = 2;
  // Blocking: one thread listens and kIdle serve connections, so the idle ones hold every thread.
  EventLoopGroup group(transport(), loops(1, 1 + kIdle));
  auto router = std::make_shared<http::Router>();
  router->get("/hi", [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body("hi")); });
  http::Limits limits;
  limits.idle_timeout = 200ms;
  limits.linger_timeout = 1h;  // an idle connection is closed outright: it owes nothing, has nothing unread
  std::atomic<int> closed{0};
  ServerBootstrap b;
  b.group(group).child_handler([router, limits, &closed](Channel& ch) {
    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>(limits));
    ch.pipeline().add_last("router", router);
    ch.close_future().add_listener([&closed](const Future<void>&) { closed.fetch_add(1); });
  });
  ChannelPtr server = b.bind(SocketAddress::loopback(0)).get();
  const std::uint16_t port = server->local_address().port();

  // Each idle client is answered once, keeps its connection alive and then sends nothing.
  std::vector<test::BlockingClient> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.emplace_back(port);
    ASSERT_TRUE(idle.back().is_open());
    ASSERT_TRUE(idle.back().send_all("GET /hi HTTP/1.1\r\nHost: t\r\n\r\n"));
    const std::string expected = "HTTP/1.1 200 OK\r\n";
    auto head = idle.back().recv_exact(expected.size(), 20000ms);
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(*head, expected);
  }
  // The server ends each idle connection with a FIN (not a reset), whatever the machine's load.
  for (auto& client : idle) {
    std::string rest;
    EXPECT_EQ(client.recv_until_end(&rest, 60000ms), test::StreamEnd::eof);
    EXPECT_EQ(rest.find("HTTP/1.1"), std::string::npos) << "nothing but the rest of the first answer";
  }
  // ...and lets the connection go at once, though the clients keep theirs open (no FIN from them).
  EXPECT_TRUE(test::eventually([&] { return closed.load() == kIdle; }, 60000ms));
  // Their places are free again: a new client is served (on the blocking transport, once the
  // closed connections' threads are back; until then the server refuses it unanswered).
  EXPECT_TRUE(test::eventually([&] { return served_once(port); }, 60000ms));
  server->close().wait();
  group.shutdown_gracefully(0ms, 5s).wait();
}

WEFT_ON_EVERY_TRANSPORT(HttpTimeoutsTest);

}  // namespace
}  // namespace weft
