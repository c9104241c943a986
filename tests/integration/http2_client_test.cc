// client::Http2Connection against weft's HTTP/2 server on every transport: many requests multiplexed on one
// connection past the server's concurrency limit (every body checked), h2 over TLS by ALPN, a
// response past the size limit, the pipeline form (requests written, responses fired), GOAWAY;
// streamed requests (ClientStream): a body written in chunks past the upload bound and the response
// read as it comes, a reset that leaves the connection's other streams alone.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/client/http2_connection.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft {
namespace {

using client::Http2Connection;
using http2::ClientStreamError;

std::string body_for(int i) { return std::string(static_cast<std::size_t>(100 + i * 37), static_cast<char>('a' + i % 26)); }

class Http2ClientTest : public test::TransportTest {
 protected:
  // HTTP/2 only (prior knowledge), or over TLS with ALPN h2 when `tls`.
  ChannelPtr serve(bool tls, http2::Settings settings = {}) {
    auto router = std::make_shared<http::Router>();
    router->post("/echo", [](Context& ctx, http::HttpRequest& request) {
      ctx.write(http::HttpResponse(200).header("x-length", std::to_string(request.body_view().size()))
                    .body(ByteBuf::copy_of(request.body_view())));
    });
    router->get("/big", [](Context& ctx, http::HttpRequest&) {
      ctx.write(http::HttpResponse(200).body(ByteBuf::copy_of(std::string(200'000, 'x'))));
    });
    router->get("/bye", [](Context& ctx, http::HttpRequest&) {
      ctx.write(http::HttpResponse(200).body_view("bye").close_connection());
    });
    auto context = tls ? test::test_server_context(test::test_pki().localhost, {"h2"}) : nullptr;
    return ServerBootstrap()
        .group(group_)
        .child_handler([router, context, settings](Channel& ch) {
          if (context) ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
          ch.pipeline().add_last("router", router);
        })
        .bind(SocketAddress::loopback(0))
        .get();
  }

  EventLoopGroup group_{transport(), loops(2, 8)};
};

TEST_P(Http2ClientTest, ManyRequestsPastTheServersConcurrencyLimitOnOneConnection) {
  http2::Settings settings;
  settings.max_concurrent_streams = 10;  // the client must wait for streams to close, not be refused
  ChannelPtr server = serve(false, settings);
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address()).get();
  std::vector<Future<http::HttpClientResponse>> answers;
  for (int i = 0; i < 200; ++i) {
    answers.push_back(client->request(http::HttpClientRequest("POST", "/echo").body(ByteBuf::copy_of(body_for(i)))));
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(answers[static_cast<std::size_t>(i)].wait_for(20s)) << i;
    const http::HttpClientResponse& r = answers[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.version(), http::Version::http2);
    EXPECT_EQ(r.body_view(), body_for(i)) << i;
    EXPECT_EQ(r.header("x-length"), std::to_string(body_for(i).size()));
    EXPECT_EQ(r.head().content_length, body_for(i).size());
  }
  client->close().wait_for(5s);
  server->close().wait_for(5s);
}

TEST_P(Http2ClientTest, H2OverTlsByAlpn) {
  ChannelPtr server = serve(true);
  Http2Connection::Options options;
  options.tls = test::test_client_context({"h2"});
  options.server_name = "localhost";
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address(), options).get();
  auto answer = client->request(http::HttpClientRequest("POST", "/echo").body(ByteBuf::copy_of("over TLS")));
  ASSERT_TRUE(answer.wait_for(20s));
  EXPECT_EQ(answer.get().body_view(), "over TLS");
  auto big = client->request(http::HttpClientRequest("GET", "/big"));
  ASSERT_TRUE(big.wait_for(20s));
  EXPECT_EQ(big.get().body_view().size(), 200'000u);
  client->close().wait_for(5s);
  server->close().wait_for(5s);
}

TEST_P(Http2ClientTest, AServerThatDoesNotChooseH2IsRefused) {
  auto context = test::test_server_context(test::test_pki().localhost, {"http/1.1"});
  ChannelPtr server = ServerBootstrap()
                          .group(group_)
                          .child_handler([context](Channel& ch) {
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                            ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  Http2Connection::Options options;
  options.tls = test::test_client_context({"h2", "http/1.1"});
  options.server_name = "localhost";
  auto connecting = Http2Connection::connect(group_, server->local_address(), options);
  ASSERT_TRUE(connecting.wait_for(20s));
  ASSERT_NE(connecting.error(), nullptr);
  try {
    std::rethrow_exception(connecting.error());
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("did not choose h2"));
  }
  server->close().wait_for(5s);
}

TEST_P(Http2ClientTest, AResponsePastTheBodyLimitFailsOnlyItsRequest) {
  ChannelPtr server = serve(false);
  Http2Connection::Options options;
  options.settings.max_response_body = 100'000;
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address(), options).get();
  auto big = client->request(http::HttpClientRequest("GET", "/big"));
  ASSERT_TRUE(big.wait_for(20s));
  ASSERT_NE(big.error(), nullptr);
  try {
    std::rethrow_exception(big.error());
  } catch (const ClientStreamError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("max_response_body"));
    EXPECT_FALSE(e.refused());
  }
  auto small = client->request(http::HttpClientRequest("POST", "/echo").body(ByteBuf::copy_of("still fine")));
  ASSERT_TRUE(small.wait_for(20s));
  EXPECT_EQ(small.get().body_view(), "still fine");
  client->close().wait_for(5s);
  server->close().wait_for(5s);
}

TEST_P(Http2ClientTest, AfterGoawayNewRequestsFailAsNotProcessed) {
  ChannelPtr server = serve(false);
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address()).get();
  auto bye = client->request(http::HttpClientRequest("GET", "/bye"));  // answered, then GOAWAY
  ASSERT_TRUE(bye.wait_for(20s));
  EXPECT_EQ(bye.get().body_view(), "bye");
  // The GOAWAY comes with or right after the answer; then the server closes. A request made after
  // it never reaches the server: refused, or failed by the close.
  ASSERT_TRUE(client->channel().close_future().wait_for(20s));
  auto late = client->request(http::HttpClientRequest("GET", "/bye"));
  ASSERT_TRUE(late.wait_for(20s));
  ASSERT_NE(late.error(), nullptr);
  try {
    std::rethrow_exception(late.error());
  } catch (const ClientStreamError& e) {
    EXPECT_TRUE(e.refused());
  } catch (const ChannelClosedError&) {
  }
  server->close().wait_for(5s);
}

// Responses collected from the pipeline form of the codec.
class Responses final : public InboundHandler<http::HttpClientResponse, http::HttpClientResponse> {
 public:
  explicit Responses(std::size_t expected) : expected_(expected) {}
  void channel_read(Context&, http::HttpClientResponse&& r) override {
    std::lock_guard lock(mutex);
    bodies.emplace_back(r.body_view());
    if (bodies.size() == expected_) done.set_value();
  }
  std::mutex mutex;
  std::vector<std::string> bodies;
  Promise<void> done;

 private:
  std::size_t expected_;
};

TEST_P(Http2ClientTest, RequestsWrittenDownThePipelineGetTheirResponsesFired) {
  ChannelPtr server = serve(false);
  auto responses = std::make_shared<Responses>(20);
  ChannelPtr channel = Bootstrap()
                           .group(group_)
                           .handler([responses](Channel& ch) {
                             ch.pipeline().add_last("http2", std::make_shared<http2::ClientCodec>());
                             ch.pipeline().add_last("responses", responses);
                           })
                           .connect(server->local_address())
                           .get();
  for (int i = 0; i < 20; ++i) {
    channel->write(http::HttpClientRequest("POST", "/echo").body(ByteBuf::copy_of(body_for(i))));
  }
  channel->flush();
  ASSERT_TRUE(responses->done.future().wait_for(20s));
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(body_for(i));
  std::lock_guard lock(responses->mutex);
  EXPECT_THAT(responses->bodies, ::testing::UnorderedElementsAreArray(expected));
  channel->close().wait_for(5s);
  server->close().wait_for(5s);
}

// 1 MiB written in 1,000-byte chunks with a 4 KiB upload bound (write() waits for the windows
// each time past it), echoed whole by the server, read back chunk by chunk.
Task<std::string> streamed_echo(Http2Connection& client, std::size_t total) {
  const http::Header fields[] = {{"content-type", "application/octet-stream"}};
  http2::ClientStream s = client.open("POST", "/echo", fields);
  std::string sent;
  for (std::size_t i = 0; sent.size() < total; ++i) {
    const std::string chunk(std::min<std::size_t>(1000, total - sent.size()), static_cast<char>('a' + i % 26));
    sent += chunk;
    co_await s.write(ByteBuf::copy_of(chunk));
  }
  s.end();
  const int status = co_await s.response();
  std::string got;
  std::size_t chunks = 0;
  while (std::optional<ByteBuf> data = co_await s.read()) {
    got += data->to_string();
    ++chunks;
  }
  co_return std::to_string(status) + " " + std::string(s.head().header("x-length").value_or("-")) + " " +
      (got == sent ? "same" : "different") + (chunks > 1 ? " in chunks" : " in one chunk") +
      (s.trailers().empty() ? "" : " with trailers");
}

TEST_P(Http2ClientTest, AStreamedRequestIsWrittenInChunksWithBackpressureAndItsResponseReadAsItComes) {
  ChannelPtr server = serve(false);
  Http2Connection::Options options;
  options.settings.max_buffered_upload = 4096;
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address(), options).get();
  Future<std::string> done = spawn(client->loop(), streamed_echo(*client, 1 << 20));
  ASSERT_TRUE(done.wait_for(30s));
  EXPECT_EQ(done.get(), "200 1048576 same in chunks");
  client->close().wait();
  server->close().wait();
}

Task<std::string> reset_one(Http2Connection& client) {
  http2::ClientStream s = client.open("POST", "/echo", {});
  co_await s.write(ByteBuf::copy_of("part"));
  s.reset();
  std::string what;
  try {
    co_await s.write(ByteBuf::copy_of("more"));
    what = "a write after reset went through";
  } catch (const ClientStreamError& e) {
    what = "write: " + std::to_string(e.error_code());
  }
  try {
    (void)co_await s.response();
    what += "; a response after reset";
  } catch (const ClientStreamError& e) {
    what += "; response: " + std::to_string(e.error_code());
  }
  co_return what;
}

TEST_P(Http2ClientTest, AStreamedRequestResetByTheClientFailsAloneAndTheConnectionGoesOn) {
  ChannelPtr server = serve(false);
  std::shared_ptr<Http2Connection> client = Http2Connection::connect(group_, server->local_address()).get();
  Future<std::string> done = spawn(client->loop(), reset_one(*client));
  ASSERT_TRUE(done.wait_for(30s));
  EXPECT_EQ(done.get(), "write: 8; response: 8");  // CANCEL
  Future<http::HttpClientResponse> after =
      client->request(http::HttpClientRequest("POST", "/echo").body(ByteBuf::copy_of("after")));
  ASSERT_TRUE(after.wait_for(30s));
  EXPECT_EQ(after.get().body_view(), "after");
  client->close().wait();
  server->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(Http2ClientTest);

}  // namespace
}  // namespace weft
