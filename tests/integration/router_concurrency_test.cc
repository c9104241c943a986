// Coroutine routes over sockets, on every transport: the streams of one HTTP/2 connection run
// concurrently (a slow one does not hold a fast one), pipelined HTTP/1.1 answers keep their order
// while the work behind them overlaps, and a client that resets a stream whose route is suspended
// costs nothing once the route ends. Orders are asserted, never durations: the slow route waits
// for a promise the test (or the fast route) completes.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "support/blocking_client.h"
#include "support/h2_frames.h"
#include "support/h2_matrix.h"
#include "support/transports.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::router_concurrency_test {

using http::HttpResponse;
using http::Request;
using test::frame;
using test::request_block;
using test::ServerFrames;

constexpr std::uint8_t kEH = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kES = NGHTTP2_FLAG_END_STREAM;

// What the routes and the test share. The slow route parks on `released` until the test (or the
// fast route) completes `release`; `finished` counts the slow routes' frames that have ended.
struct Shared {
  Promise<void> release;
  Future<void> released = release.future();
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<EventLoop*> loop{nullptr};
};

struct CountsEnd {
  std::atomic<int>& finished;
  ~CountsEnd() { ++finished; }
};

std::shared_ptr<http::Router> make_router(std::shared_ptr<Shared> shared, bool fast_releases) {
  auto router = std::make_shared<http::Router>();
  router->get("/slow", [shared](Request& request) -> Task<HttpResponse> {
    CountsEnd counts{shared->finished};
    shared->loop = &request.channel().loop();
    ++shared->started;
    co_await std::move(shared->released);
    co_return HttpResponse(200).body_view("slow");
  });
  router->get("/fast", [shared, fast_releases](Request&) {
    if (fast_releases) shared->release.set_value();
    return std::move(HttpResponse(200).body_view("fast"));
  });
  return router;
}

// Runs nothing on `loop` and waits for it: what was queued there before has run.
void drain(EventLoop& loop) {
  Promise<void> done;
  Future<void> f = done.future();
  loop.execute([done]() mutable { done.set_value(); });
  f.get();
}

class RouterH2ConcurrencyTest : public test::H2MatrixTest {
 protected:
  static std::string preface() { return test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""); }
  static std::string get(std::uint32_t id, std::string_view path) {
    return frame(NGHTTP2_HEADERS, kEH | kES, id, request_block("GET", path));
  }
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

TEST_P(RouterH2ConcurrencyTest, AFastStreamIsAnsweredWhileASlowOneWaits) {
  serve(make_router(shared_, false));
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  ServerFrames f;
  ASSERT_TRUE(conn.send(preface() + get(1, "/slow") + get(3, "/fast")));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(3) || fr.goaway; }));
  EXPECT_EQ(f.data[3], "fast");
  EXPECT_FALSE(f.ended.count(1)) << "the slow stream cannot have ended: its route still waits";
  shared_->release.set_value();
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) || fr.goaway; }));
  EXPECT_EQ(f.status[1], 200);
  EXPECT_EQ(f.data[1], "slow");
}

TEST_P(RouterH2ConcurrencyTest, AStreamResetWhileItsRouteIsSuspendedLeavesNothingBehind) {
  serve(make_router(shared_, false));
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  ServerFrames f;
  // Stream 3 is handed on after stream 1: once it is answered, stream 1's route has started.
  ASSERT_TRUE(conn.send(preface() + get(1, "/slow") + get(3, "/fast")));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(3) || fr.goaway; }));
  ASSERT_EQ(shared_->started.load(), 1);
  // The reset, then a stream whose answer shows the server has read it.
  ASSERT_TRUE(conn.send(frame(NGHTTP2_RST_STREAM, 0, 1, test::u32(NGHTTP2_CANCEL)) + get(5, "/fast")));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(5) || fr.goaway; }));
  EXPECT_EQ(shared_->finished.load(), 0);
  shared_->release.set_value();  // the route ends; its answer has no stream to go to
  for (int i = 0; i < 100 && shared_->finished.load() == 0; ++i) drain(*shared_->loop.load());
  EXPECT_EQ(shared_->finished.load(), 1);
  ASSERT_TRUE(conn.send(get(7, "/fast")));
  ASSERT_TRUE(conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(7) || fr.goaway; }));
  EXPECT_EQ(f.data[7], "fast");
  EXPECT_FALSE(f.ended.count(1)) << "nothing is sent on the reset stream";
  EXPECT_FALSE(f.goaway);
}

TEST_P(RouterH2ConcurrencyTest, TheCodecsOwnErrorAnswersTakeTheConfiguredBody) {
  http2::Settings settings;
  settings.max_body = 16;
  settings.error_body = [](int status) { return http::ErrorBody{"text/plain", "too big: " + std::to_string(status)}; };
  serve(make_router(shared_, false), settings);
  test::RawH2Connection conn(port(), tls());
  ASSERT_TRUE(conn.is_open());
  ServerFrames f;
  ASSERT_TRUE(conn.send(preface() + frame(NGHTTP2_HEADERS, kEH, 1, request_block("POST", "/fast")) +
                        frame(NGHTTP2_DATA, kES, 1, std::string(64, 'x'))));
  ASSERT_TRUE(
      conn.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) || fr.resets.count(1) || fr.goaway; }));
  EXPECT_EQ(f.status[1], 413);
  EXPECT_EQ(f.data[1], "too big: 413");
}

WEFT_H2_ON_EVERY_TRANSPORT(RouterH2ConcurrencyTest);

class RouterHttp1OrderTest : public test::TransportTest {};

TEST_P(RouterHttp1OrderTest, PipelinedAnswersKeepTheirOrderWhileTheirWorkOverlaps) {
  // The slow route waits for the fast one to run: were requests served one at a time, it never would.
  auto shared = std::make_shared<Shared>();
  EventLoopGroup group(transport(), loops(1, 2));
  auto router = make_router(shared, true);
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([router](Channel& ch) {
                            ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                            ch.pipeline().add_last("router", router);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  {
    test::BlockingClient client(server->local_address().port());
    ASSERT_TRUE(client.is_open());
    ASSERT_TRUE(client.send_all("GET /slow HTTP/1.1\r\nHost: h\r\n\r\nGET /fast HTTP/1.1\r\nHost: h\r\n\r\n"));
    std::string in;
    while (in.find("fast") == std::string::npos) {
      std::string more = client.recv_some(4096, 10000ms);
      if (more.empty()) break;
      in += more;
    }
    const auto slow = in.find("\r\n\r\nslow"), fast = in.find("\r\n\r\nfast");
    ASSERT_NE(slow, std::string::npos) << in;
    ASSERT_NE(fast, std::string::npos) << in;
    EXPECT_LT(slow, fast) << in;
  }
  server->close().wait();
  group.shutdown_gracefully(0ms, 1s).wait();
  EXPECT_EQ(shared->finished.load(), 1);
}

WEFT_ON_EVERY_TRANSPORT(RouterHttp1OrderTest);

}  // namespace weft::router_concurrency_test
