// Real HTTP clients against weft's HTTP server over loopback: curl, Python's http.client, and
// weft's own client codec (pipelined) through a real socket.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/weft.h"
#include "support/shell.h"
#include "support/transports.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::http {
namespace {

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

class HttpInteropTest : public test::TransportTest {
 protected:
  void SetUp() override {
    auto router = std::make_shared<Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) {
      ctx.write(HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
    });
    router->post("/echo", [](Context& ctx, HttpRequest& req) {
      ctx.write(HttpResponse(200).content_type("application/octet-stream").body(ByteBuf::copy_of(req.body_view())));
    });
    router->get("/host", [](Context& ctx, HttpRequest& req) {
      ctx.write(HttpResponse(200).body(ByteBuf::copy_of(req.header("Host").value_or("(none)"))));
    });
    server_ = ServerBootstrap()
                  .group(loops_)
                  .child_handler([router](Channel& ch) {
                    ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
    base_ = "http://127.0.0.1:" + std::to_string(server_->local_address().port());
  }
  void TearDown() override { server_->close().wait(); }

  EventLoopGroup loops_{transport(), loops(1, 4)};
  ChannelPtr server_;
  std::string base_;
};

TEST_P(HttpInteropTest, Curl) {
  int status = -1;
  std::string out = run("curl -s -i --max-time 5 " + base_ + "/plaintext", status);
  ASSERT_EQ(status, 0) << "curl failed: " << out;
  EXPECT_THAT(out, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(out, HasSubstr("Content-Length: 13"));
  EXPECT_THAT(out, HasSubstr("\r\n\r\nHello, World!"));
  // A chunked upload (curl sends Transfer-Encoding: chunked when told) comes back whole.
  out = run("printf 'abc123' | curl -s --max-time 5 -H 'Transfer-Encoding: chunked' --data-binary @- " + base_ + "/echo",
            status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(out, "abc123");
  // Expect: 100-continue with a body.
  out = run("curl -s --max-time 5 -H 'Expect: 100-continue' --data-binary 'continued' " + base_ + "/echo", status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(out, "continued");
  out = run("curl -s -o /dev/null -w '%{http_code}' --max-time 5 " + base_ + "/missing", status);
  EXPECT_EQ(out, "404");
}

TEST_P(HttpInteropTest, PythonHttpClientKeepsTheConnectionAlive) {
  std::string script =
      "import http.client,sys\n"
      "c=http.client.HTTPConnection('127.0.0.1'," + std::to_string(server_->local_address().port()) + ",timeout=5)\n"
      "out=[]\n"
      "for i in range(5):\n"
      "  c.request('GET','/plaintext'); r=c.getresponse(); out.append(r.read().decode())\n"
      "c.request('POST','/echo',body=b'x'*100000); r=c.getresponse(); out.append(str(len(r.read())))\n"
      "print('|'.join(out)); print(c.sock is not None)\n";
  int status = -1;
  std::string out = run("python3 -c \"" + [&] {
    std::string escaped;
    for (char c : script) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') escaped += '\\';
      escaped += c;
    }
    return escaped;
  }() + "\"", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "Hello, World!|Hello, World!|Hello, World!|Hello, World!|Hello, World!|100000\nTrue\n");
}

class Collect final : public InboundHandler<HttpClientResponse, HttpClientResponse> {
 public:
  explicit Collect(int expected) : expected_(expected) {}
  void channel_read(Context&, HttpClientResponse&& r) override {
    bodies.emplace_back(r.body_view());
    if (static_cast<int>(bodies.size()) == expected_) done.set_value();
  }
  std::vector<std::string> bodies;
  Promise<void> done;

 private:
  int expected_;
};

TEST_P(HttpInteropTest, WeftClientCodecPipelinesOverARealSocket) {
  constexpr int kRequests = 64;
  auto collect = std::make_shared<Collect>(kRequests);
  ChannelPtr client = Bootstrap()
                          .group(loops_)
                          .handler([collect](Channel& ch) {
                            ch.pipeline().add_last("http", std::make_shared<ClientCodec>());
                            ch.pipeline().add_last("collect", collect);
                          })
                          .connect(server_->local_address())
                          .get();
  for (int i = 0; i < kRequests; ++i) {
    client->write(HttpClientRequest("POST", "/echo").header("Host", "x").body(ByteBuf::copy_of("n" + std::to_string(i))));
  }
  client->flush();
  ASSERT_TRUE(collect->done.future().wait_for(10s));
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(collect->bodies[i], "n" + std::to_string(i));
  client->close().wait();
}

TEST_P(HttpInteropTest, WeftClientCodecSendsTheConnectAddressAsHost) {
  auto collect = std::make_shared<Collect>(1);
  ChannelPtr client = Bootstrap()
                          .group(loops_)
                          .handler([collect](Channel& ch) {
                            ch.pipeline().add_last("http", std::make_shared<ClientCodec>());
                            ch.pipeline().add_last("collect", collect);
                          })
                          .connect(server_->local_address())
                          .get();
  client->write_and_flush(HttpClientRequest("GET", "/host"));  // no Host: the codec adds it
  ASSERT_TRUE(collect->done.future().wait_for(10s));
  EXPECT_EQ(collect->bodies[0], server_->local_address().to_string());
  client->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(HttpInteropTest);

}  // namespace
}  // namespace weft::http
