// drain_server on an HTTP/1.1 server, on every transport: the listeners close first (a new connection
// is refused), an idle keep-alive connection is closed at once, a request in flight (its handler
// answers when the test says so) gets its whole answer with Connection: close and then its connection
// closes, and the drain's report counts them. A connection whose answer never comes is closed at the
// deadline and counted as forced. With AcceptMode::reuseport every loop's listener closes and every
// loop's connections are drained. The loops keep running throughout: the drain does not need them
// to end.

#include "weft/channel/drain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <any>
#include <atomic>
#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/core/error.h"

using namespace std::chrono_literals;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace weft::http {
namespace {

constexpr std::string_view kPlaintext = "GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr std::string_view kSlow = "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n";

// /slow is answered once the test completes `release`; `dispatched` says it reached its handler.
struct SlowRoute {
  Promise<void> dispatched;
  Promise<void> release;
};

// Completes `seen` once `expected` connections have had ChannelShutdownRequestedEvent pass the codec
// (their loops may be different ones: each is reached by the drain in its own time).
struct ShutdownsSeen {
  explicit ShutdownsSeen(int n) : expected(n) {}
  const int expected;
  std::atomic<int> count{0};
  Promise<void> seen;
};

class SeesShutdown final : public Handler {
 public:
  explicit SeesShutdown(std::shared_ptr<ShutdownsSeen> seen) : seen_(std::move(seen)) {}
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr && ++seen_->count == seen_->expected) {
      seen_->seen.set_value();
    }
    ctx.fire_user_event(event);
  }

 private:
  std::shared_ptr<ShutdownsSeen> seen_;
};

class DrainTest : public test::TransportTest {
 protected:
  void start(AcceptMode mode = AcceptMode::acceptor) {
    auto router = std::make_shared<Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello")); });
    router->get("/slow", [slow = slow_](Context& ctx, HttpRequest& request) {
      slow->release.future().add_listener([&ctx, sequence = request.sequence()](const Future<void>& released) {
        if (released.error()) return;  // never released (broken as the test ends): the connection is gone
        ctx.loop().execute([&ctx, sequence] {
          ctx.write_and_flush(HttpResponse(200).body_view("late answer").for_request(sequence));
        });
      });
      slow->dispatched.set_value();
    });
    server_ = ServerBootstrap()
                  .group(group_)
                  .accept_mode(mode)
                  .child_handler([router, shutdowns = shutdowns_](Channel& ch) {
                    ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
                    ch.pipeline().add_last("sees-shutdown", std::make_shared<SeesShutdown>(shutdowns));
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    port_ = server_->local_address().port();
  }

  // An open keep-alive connection that has had one answer (so its loop tracks it).
  std::unique_ptr<test::BlockingClient> idle_connection() {
    auto client = std::make_unique<test::BlockingClient>(port_);
    EXPECT_TRUE(client->is_open());
    EXPECT_TRUE(client->send_all(kPlaintext));
    std::string answer;
    while (!answer.ends_with("Hello")) {
      const std::string in = client->recv_some(4096, 20000ms);
      if (in.empty()) {
        ADD_FAILURE() << "no answer; so far: " << answer;
        break;
      }
      answer += in;
    }
    EXPECT_THAT(answer, Not(HasSubstr("Connection: close")));
    return client;
  }

  void TearDown() override {
    if (server_) server_->close().wait();
  }

  EventLoopGroup group_{transport(), loops(2, 5)};
  std::shared_ptr<SlowRoute> slow_ = std::make_shared<SlowRoute>();
  std::shared_ptr<ShutdownsSeen> shutdowns_ = std::make_shared<ShutdownsSeen>(2);  // the first test's two
  ChannelPtr server_;
  std::uint16_t port_ = 0;
};

TEST_P(DrainTest, StopsAcceptingClosesIdleConnectionsAndAnswersRequestsInFlight) {
  start();
  auto idle = idle_connection();
  test::BlockingClient busy(port_);
  ASSERT_TRUE(busy.is_open());
  ASSERT_TRUE(busy.send_all(kSlow));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));

  Future<DrainReport> drained = drain_server(server_, 3600s);  // the deadline is not what ends them
  ASSERT_TRUE(server_->close_future().wait_for(20s)) << "the listener is still open";
  test::BlockingClient late(port_);
  EXPECT_FALSE(late.is_open()) << "a connection made after the listener closed was accepted";

  std::string rest;
  EXPECT_EQ(idle->recv_until_end(&rest, 20000ms), test::StreamEnd::eof) << "the idle connection stayed open";
  EXPECT_EQ(rest, "");
  EXPECT_FALSE(drained.is_done()) << "the drain completed with a request still in flight";

  // The drain has reached the busy connection's loop too (it may be another): now its answer comes.
  ASSERT_TRUE(shutdowns_->seen.future().wait_for(20s));
  slow_->release.set_value();
  std::string answer;
  EXPECT_EQ(busy.recv_until_end(&answer, 20000ms), test::StreamEnd::eof);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\nlate answer"));
  busy.close();  // the client's FIN ends the server's linger after its own

  ASSERT_TRUE(drained.wait_for(20s)) << "the drain did not complete once every connection had closed";
  const DrainReport report = drained.get();
  EXPECT_EQ(report.open, 2u);
  EXPECT_EQ(report.drained, 2u);
  EXPECT_EQ(report.forced, 0u);
  // The loops were not stopped: they still run tasks.
  Promise<void> ran;
  group_.at(0).execute([&ran] { ran.set_value(); });
  EXPECT_TRUE(ran.future().wait_for(20s));
}

// The deadline is the subject here: a request whose answer never comes keeps its connection open
// until then, and the drain closes it and counts it.
TEST_P(DrainTest, AConnectionStillOpenAtTheDeadlineIsClosedAndCountedAsForced) {
  start();
  test::BlockingClient stuck(port_);
  ASSERT_TRUE(stuck.is_open());
  ASSERT_TRUE(stuck.send_all(kSlow));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));

  Future<DrainReport> drained = drain_server(server_, 50ms);
  ASSERT_TRUE(drained.wait_for(20s));
  const DrainReport report = drained.get();
  EXPECT_EQ(report.open, 1u);
  EXPECT_EQ(report.drained, 0u);
  EXPECT_EQ(report.forced, 1u);
  std::string rest;
  const test::StreamEnd end = stuck.recv_until_end(&rest, 20000ms);
  EXPECT_TRUE(end == test::StreamEnd::eof || end == test::StreamEnd::reset) << test::to_string(end);
  EXPECT_EQ(rest, "") << "an answer that was never given";
}

TEST_P(DrainTest, AServerWithNoConnectionDrainsAtOnceAndAClosedOneCannotBeDrained) {
  start();
  Future<DrainReport> drained = drain_server(server_, 3600s);
  ASSERT_TRUE(drained.wait_for(20s));
  EXPECT_EQ(drained.get().open, 0u);
  EXPECT_TRUE(server_->close_future().is_done());
  Future<DrainReport> again = drain_server(server_, 3600s);
  ASSERT_TRUE(again.wait_for(20s));
  EXPECT_THROW(again.get(), ChannelClosedError);
}

// Every loop's listener closes, and the connections of both loops are drained.
TEST_P(DrainTest, AReuseportServerClosesEveryListenerAndDrainsEveryLoop) {
  if (is_blocking()) GTEST_SKIP() << "the blocking transport has no AcceptMode::reuseport";
  start(AcceptMode::reuseport);
  std::vector<std::unique_ptr<test::BlockingClient>> clients;
  for (int i = 0; i < 8; ++i) clients.push_back(idle_connection());
  Future<DrainReport> drained = drain_server(server_, 3600s);
  for (auto& client : clients) EXPECT_EQ(client->recv_until_end(nullptr, 20000ms), test::StreamEnd::eof);
  ASSERT_TRUE(drained.wait_for(20s));
  EXPECT_EQ(drained.get().open, 8u);
  EXPECT_EQ(drained.get().drained, 8u);
  for (int i = 0; i < 8; ++i) {
    test::BlockingClient late(port_);
    EXPECT_FALSE(late.is_open()) << "connection " << i << " was accepted by a listener left open";
  }
}

// The least-connections handoff drains as the acceptor does: its listener closes, every loop's
// connections end.
TEST_P(DrainTest, ALeastConnectionsServerClosesItsListenerAndDrainsEveryLoop) {
  start(AcceptMode::least_connections);
  std::vector<std::unique_ptr<test::BlockingClient>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(idle_connection());
  Future<DrainReport> drained = drain_server(server_, 3600s);
  for (auto& client : clients) EXPECT_EQ(client->recv_until_end(nullptr, 20000ms), test::StreamEnd::eof);
  ASSERT_TRUE(drained.wait_for(20s));
  EXPECT_EQ(drained.get().open, 4u);
  EXPECT_EQ(drained.get().drained, 4u);
  test::BlockingClient late(port_);
  EXPECT_FALSE(late.is_open()) << "a connection was accepted after the drain began";
}

WEFT_ON_EVERY_TRANSPORT(DrainTest);

}  // namespace
}  // namespace weft::http
