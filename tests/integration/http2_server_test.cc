// HTTP/2 with prior knowledge (h2c) against a real server on every transport: the detector and the
// HTTP/2 codec in front of a Router, driven by an nghttp2 client over a blocking socket (several
// streams at once, bodies checked byte for byte), by curl and by h2load; the same port still serves
// HTTP/1.1.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "support/shell.h"
#include "support/blocking_client.h"
#include "support/h2_socket.h"
#include "support/transports.h"
#include "weft/weft.h"

#ifndef WEFT_H2_SCRIPTS
#define WEFT_H2_SCRIPTS "tests/integration/h2"
#endif

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;

std::string patterned(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

bool have(const std::string& command) {
  int status = -1;
  run("command -v " + command + " >/dev/null 2>&1", status);
  return status == 0;
}

class Http2ServerTest : public test::TransportTest {
 protected:
  void SetUp() override {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) {
      ctx.write(HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
    });
    router->post("/echo", [](Context& ctx, HttpRequest& request) {
      ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
    });
    router->get("/big", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body(patterned(1 << 20))); });
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([router](Channel& ch) {
                    ch.pipeline().add_last("detect", std::make_shared<CleartextDetector>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    port_ = server_->local_address().port();
  }
  void TearDown() override { server_->close().wait(); }

  EventLoopGroup loops_{transport(), loops(1, 8)};
  ChannelPtr server_;
  std::uint16_t port_ = 0;
};

TEST_P(Http2ServerTest, ManyStreamsOnOneConnectionAreAnsweredByteForByte) {
  test::BlockingClient socket(port_);
  ASSERT_TRUE(socket.is_open());
  test::H2Client client;
  std::vector<std::int32_t> plain, echo, big;
  for (int i = 0; i < 20; ++i) plain.push_back(client.request("GET", "/plaintext"));
  for (int i = 0; i < 4; ++i) echo.push_back(client.request("POST", "/echo", patterned(100'000 + i)));
  for (int i = 0; i < 2; ++i) big.push_back(client.request("GET", "/big"));
  ASSERT_TRUE(test::exchange_until_closed(socket, client)) << "error " << client.error();
  for (auto id : plain) {
    EXPECT_EQ(client.response(id).status, 200);
    EXPECT_EQ(client.response(id).body, "Hello, World!");
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(client.response(echo[i]).body, patterned(100'000 + i)) << i;
  for (auto id : big) EXPECT_EQ(client.response(id).body, patterned(1 << 20));
  // The connection goes on.
  const auto again = client.request("GET", "/plaintext");
  ASSERT_TRUE(test::exchange_until_closed(socket, client));
  EXPECT_EQ(client.response(again).body, "Hello, World!");
}

TEST_P(Http2ServerTest, TheSamePortStillServesHttp11) {
  test::BlockingClient socket(port_);
  ASSERT_TRUE(socket.send_all("GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::string got;
  while (got.find("Hello, World!") == std::string::npos) {
    std::string more = socket.recv_some(4096, 20000ms);
    ASSERT_FALSE(more.empty()) << got;
    got += more;
  }
  EXPECT_THAT(got, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_P(Http2ServerTest, CurlWithPriorKnowledge) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed";
  int status = -1;
  if (run("curl -V", status).find("HTTP2") == std::string::npos) GTEST_SKIP() << "curl has no HTTP/2";
  const std::string base = "http://127.0.0.1:" + std::to_string(port_);
  std::string out = run("curl -s --max-time 20 --http2-prior-knowledge -w ' %{http_version}' " + base + "/plaintext",
                        status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "Hello, World! 2");
  out = run("printf 'abc123' | curl -s --max-time 20 --http2-prior-knowledge --data-binary @- " + base + "/echo", status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(out, "abc123");
}

TEST_P(Http2ServerTest, CurlUpgradesFromHttp11) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed";
  int status = -1;
  if (run("curl -V", status).find("HTTP2") == std::string::npos) GTEST_SKIP() << "curl has no HTTP/2";
  // --http2 on an http:// URL: the first request asks for Upgrade: h2c, its answer comes over HTTP/2.
  const std::string out = run("curl -s --max-time 20 --http2 -w ' %{http_version}' http://127.0.0.1:" +
                                  std::to_string(port_) + "/plaintext",
                              status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "Hello, World! 2");
}

TEST_P(Http2ServerTest, H2loadGetsEveryAnswer) {
  if (!have("h2load")) GTEST_SKIP() << "h2load is not installed (nghttp2-client)";
  int status = -1;
  const std::string out =
      run("h2load -n 400 -c 4 -m 16 http://127.0.0.1:" + std::to_string(port_) + "/plaintext 2>&1", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("400 succeeded, 0 failed, 0 errored"));
  EXPECT_THAT(out, HasSubstr("status codes: 400 2xx"));
}

TEST_P(Http2ServerTest, RapidResetFromPythonH2GetsEnhanceYourCalm) {
  // python3-h2 is a Debian package: the system's python3, which another python3 on PATH may hide.
  std::string python;
  int status = -1;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    run(std::string(candidate) + " -c 'import h2' 2>/dev/null", status);
    if (status == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "python3-h2 is not installed";
  const std::string out =
      run(python + " " WEFT_H2_SCRIPTS "/rapid_reset.py " + std::to_string(port_) + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "11\n") << "GOAWAY(ENHANCE_YOUR_CALM)";
  // The server goes on serving others.
  test::BlockingClient socket(port_);
  test::H2Client client;
  const auto id = client.request("GET", "/plaintext");
  ASSERT_TRUE(test::exchange_until_closed(socket, client));
  EXPECT_EQ(client.response(id).body, "Hello, World!");
}

TEST_P(Http2ServerTest, FloodsFromPythonH2GetEnhanceYourCalm) {
  std::string python;
  int status = -1;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    run(std::string(candidate) + " -c 'import h2' 2>/dev/null", status);
    if (status == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "python3-h2 is not installed";
  // Raw frames (tests/integration/h2/floods.py), 300 of each in one write after the preface.
  for (const char* kind : {"continuation", "window_update", "settings", "empty_data"}) {
    const std::string out =
        run(python + " " WEFT_H2_SCRIPTS "/floods.py " + std::to_string(port_) + " " + kind + " 2>&1", status);
    ASSERT_EQ(status, 0) << kind << ": " << out;
    EXPECT_EQ(out, "11\n") << kind << ": GOAWAY(ENHANCE_YOUR_CALM)";
  }
  // The server goes on serving others.
  test::BlockingClient socket(port_);
  test::H2Client client;
  const auto id = client.request("GET", "/plaintext");
  ASSERT_TRUE(test::exchange_until_closed(socket, client));
  EXPECT_EQ(client.response(id).body, "Hello, World!");
}

// Counts what the codec writes and the largest write queue it leaves behind.
// The loop's graceful shutdown ends an HTTP/2 connection with GOAWAY(NO_ERROR): the stream in
// progress (a request whose body is still arriving) is still answered, then the connection closes
// and the loop terminates.
TEST_P(Http2ServerTest, ALoopShuttingDownSendsGoawayAndFinishesTheOpenStream) {
  EventLoopGroup group(transport(), loops(1, 4));
  auto router = std::make_shared<http::Router>();
  router->post("/echo", [](Context& ctx, HttpRequest& request) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(request.body_view())));
  });
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([router](Channel& ch) {
                            ch.pipeline().add_last("detect", std::make_shared<CleartextDetector>());
                            ch.pipeline().add_last("router", router);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  test::BlockingClient socket(server->local_address().port());
  ASSERT_TRUE(socket.is_open());
  test::H2Client client;
  // HEADERS (content-length 5) without END_STREAM: the body comes after the shutdown has begun.
  const std::int32_t id = client.request("POST", "/echo", "", {{"content-length", "5"}}, /*end_stream=*/false);
  ASSERT_TRUE(socket.send_all(client.take_output()));
  client.ping();  // its answer proves the server has read the HEADERS before the shutdown begins
  ASSERT_TRUE(socket.send_all(client.take_output()));
  for (int i = 0; i < 100 && !client.ping_acks(); ++i) {
    const std::string in = socket.recv_some(64 * 1024, 20000ms);
    ASSERT_FALSE(in.empty());
    ASSERT_TRUE(client.receive(in));
  }
  ASSERT_TRUE(client.ping_acks());

  Future<void> terminated = group.shutdown_gracefully(0ms, 20s);
  while (!client.goaway_error()) {
    test::StreamEnd end = test::StreamEnd::timeout;
    const std::string in = socket.recv_some(64 * 1024, 20000ms, &end);
    ASSERT_FALSE(in.empty()) << "no GOAWAY before " << test::to_string(end);
    ASSERT_TRUE(client.receive(in));
  }
  EXPECT_EQ(*client.goaway_error(), static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));

  client.send_body(id, "hello");  // the stream opened before the GOAWAY is still served
  ASSERT_TRUE(test::exchange_until_closed(socket, client)) << "error " << client.error();
  EXPECT_EQ(client.response(id).status, 200);
  EXPECT_EQ(client.response(id).body, "hello");
  EXPECT_EQ(socket.recv_until_end(nullptr, 20000ms), test::StreamEnd::eof);
  ASSERT_TRUE(terminated.wait_for(30s));
}

// A client that never reads: h2_never_reading_test.cc (every transport, h2c and TLS).

WEFT_ON_EVERY_TRANSPORT(Http2ServerTest);

}  // namespace
}  // namespace weft::http2
