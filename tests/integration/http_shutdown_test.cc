// An HTTP/1.1 server on a loop that shuts down gracefully, on every transport: an idle keep-alive
// connection is closed at once; a request in flight (its handler answers when the test says so) gets
// its whole response, with Connection: close, and then the connection closes (with two in flight, both
// are answered, the last saying Connection: close); a request the client pipelines after the shutdown
// began is not answered. The loops are given an hour to shut down: a
// connection the codec kept open would hold them that long, so their termination within the test's
// wait is what says the connection ended when it should.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <any>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"

using namespace std::chrono_literals;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace weft::http {
namespace {

// Counts the bytes the server has received (first in the pipeline). Loop thread; the count from any.
class ReceivedBytes final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& bytes) override {
    count.fetch_add(bytes.readable_bytes());
    ctx.fire_read(std::move(bytes));
  }
  std::atomic<std::size_t> count{0};
};

// Completes `seen` when the loop's shutdown reaches the handlers after the codec.
class ShutdownSeen final : public Handler {
 public:
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) seen.set_value();
    ctx.fire_user_event(event);
  }
  Promise<void> seen;
};

// What the server's routes share with the test: /slow is answered once `release` completes.
struct SlowRoute {
  Promise<void> dispatched;  // /slow has been handed to its handler
  Promise<void> release;     // completed by the test: /slow's answer goes out
};

class HttpShutdownTest : public test::TransportTest {
 protected:
  void start() {
    auto router = std::make_shared<Router>();
    router->get("/plaintext", [served = plaintext_served_](Context& ctx, HttpRequest&) {
      ctx.write(HttpResponse(200).body_view("Hello"));
      served->fetch_add(1);
    });
    router->get("/slow", [slow = slow_](Context& ctx, HttpRequest& request) {
      // Answered from the loop when the test releases it, as an executor's answer arrives.
      Promise<void> release = slow->release;
      release.future().add_listener([&ctx, sequence = request.sequence()](const Future<void>&) {
        ctx.loop().execute([&ctx, sequence] {
          ctx.write_and_flush(HttpResponse(200).body_view("late answer").for_request(sequence));
        });
      });
      slow->dispatched.set_value();
    });
    auto received = received_;
    auto seen = seen_;
    server_ = ServerBootstrap()
                  .group(group_)
                  .child_handler([router, received, seen](Channel& ch) {
                    ch.pipeline().add_last("received", received);
                    ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
                    ch.pipeline().add_last("seen", seen);
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    port_ = server_->local_address().port();
  }

  // Closes the listening channel and begins the loops' shutdown (an hour allowed).
  Future<void> shut_down() {
    server_->close().wait();
    return group_.shutdown_gracefully(0ms, 3600s);
  }

  EventLoopGroup group_{transport(), loops(1, 4)};
  std::shared_ptr<SlowRoute> slow_ = std::make_shared<SlowRoute>();
  std::shared_ptr<ReceivedBytes> received_ = std::make_shared<ReceivedBytes>();
  std::shared_ptr<ShutdownSeen> seen_ = std::make_shared<ShutdownSeen>();
  std::shared_ptr<std::atomic<int>> plaintext_served_ = std::make_shared<std::atomic<int>>(0);
  ChannelPtr server_;
  std::uint16_t port_ = 0;
};

constexpr std::string_view kPlaintext = "GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr std::string_view kSlow = "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n";

TEST_P(HttpShutdownTest, AnIdleKeepAliveConnectionIsClosedAtOnce) {
  start();
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all(kPlaintext));
  std::string answer;
  while (!answer.ends_with("Hello")) {
    const std::string in = client.recv_some(4096, 20000ms);
    ASSERT_FALSE(in.empty()) << "no answer; so far: " << answer;
    answer += in;
  }
  EXPECT_THAT(answer, Not(HasSubstr("Connection: close")));  // kept alive: idle now
  Future<void> terminated = shut_down();
  std::string rest;
  EXPECT_EQ(client.recv_until_end(&rest, 60000ms), test::StreamEnd::eof);
  EXPECT_EQ(rest, "");
  EXPECT_TRUE(terminated.wait_for(60s)) << "the idle connection held the loop's shutdown";
}

TEST_P(HttpShutdownTest, ARequestInFlightIsAnsweredWithConnectionCloseAndThenTheConnectionCloses) {
  start();
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all(kSlow));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));
  Future<void> terminated = shut_down();
  ASSERT_TRUE(seen_->seen.future().wait_for(20s));
  slow_->release.set_value();
  std::string answer;
  EXPECT_EQ(client.recv_until_end(&answer, 60000ms), test::StreamEnd::eof);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\nContent-Length: 11\r\n"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\nlate answer"));
  client.close();
  EXPECT_TRUE(terminated.wait_for(60s)) << "the connection stayed open after its last answer";
}

TEST_P(HttpShutdownTest, RequestsPipelinedAfterTheShutdownBeganAreNotAnswered) {
  start();
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all(kSlow));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));
  Future<void> terminated = shut_down();
  ASSERT_TRUE(seen_->seen.future().wait_for(20s));
  // Two more requests behind the one in flight; the server has read them before it answers.
  const std::string behind = std::string(kPlaintext) + std::string(kPlaintext);
  ASSERT_TRUE(client.send_all(behind));
  ASSERT_TRUE(test::eventually([&] { return received_->count.load() == kSlow.size() + behind.size(); }, 20000ms))
      << received_->count.load() << " bytes received";
  slow_->release.set_value();
  std::string answer;
  EXPECT_EQ(client.recv_until_end(&answer, 60000ms), test::StreamEnd::eof);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\nlate answer")) << "only the request in flight is answered";
  EXPECT_THAT(answer, Not(HasSubstr("Hello")));
  client.close();
  EXPECT_TRUE(terminated.wait_for(60s));
}

// Two requests handed over before the shutdown: the second is answered at once, and its answer waits
// for the first's. Both go out, in order, and the second -- now the last -- says Connection: close.
TEST_P(HttpShutdownTest, EveryRequestHandedOverBeforeTheShutdownIsAnsweredAndTheLastAnswerSaysClose) {
  start();
  test::BlockingClient client(port_);
  ASSERT_TRUE(client.is_open());
  ASSERT_TRUE(client.send_all(std::string(kSlow) + std::string(kPlaintext)));
  ASSERT_TRUE(slow_->dispatched.future().wait_for(20s));
  ASSERT_TRUE(test::eventually([&] { return plaintext_served_->load() == 1; }, 20000ms));
  Future<void> terminated = shut_down();
  ASSERT_TRUE(seen_->seen.future().wait_for(20s));
  slow_->release.set_value();
  std::string answer;
  EXPECT_EQ(client.recv_until_end(&answer, 60000ms), test::StreamEnd::eof);
  const std::size_t second = answer.find("HTTP/1.1 200 OK\r\n", 1);
  ASSERT_NE(second, std::string::npos) << answer;
  const std::string first_answer = answer.substr(0, second);
  const std::string second_answer = answer.substr(second);
  EXPECT_THAT(first_answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(first_answer, Not(HasSubstr("Connection:")));
  EXPECT_THAT(first_answer, EndsWith("\r\n\r\nlate answer"));
  EXPECT_THAT(second_answer, HasSubstr("\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"));
  EXPECT_THAT(second_answer, EndsWith("\r\n\r\nHello"));
  client.close();
  EXPECT_TRUE(terminated.wait_for(60s));
}

WEFT_ON_EVERY_TRANSPORT(HttpShutdownTest);

}  // namespace
}  // namespace weft::http
