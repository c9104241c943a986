// weft's client against the server's streamed routes (docs/streaming.md), on every transport: a
// proxy-shaped route that moves its BodyReader into the producer of its answer, so the request's
// body is echoed chunk by chunk while it arrives (full duplex), uploaded with
// HttpClient::upload and read back with the streamed response's ResponseBody, byte-exact; over h2c
// too (streamed both ways there as well; more in streamed_routes_h2_test.cc).

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "client/origin_servers.h"
#include "weft/codec/http1/body_writer.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::streamed_routes_test {

using client::ClientOptions;
using client::HttpClient;
using client::StreamedResponse;
using client::Upload;

constexpr std::size_t kBody = std::size_t{1} << 20;
constexpr std::size_t kPiece = 65'521;  // a prime: pieces never line up with buffers

std::string pattern(std::size_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((from + i) * 7 % 251);
  return s;
}

// POST /echo: the request's body, as it arrives, is the answer's.
ChannelPtr serve_echo(EventLoopGroup& group, bool h2) {
  auto router = std::make_shared<http::Router>();
  router->post("/echo", [](http::Request&, http::BodyReader& body) -> Task<http::HttpResponse> {
    auto reader = std::make_shared<http::BodyReader>(std::move(body));
    auto echo = [reader](http::BodyWriter& out) -> Task<void> {
      while (std::optional<ByteBuf> chunk = co_await reader->next()) co_await out.write(std::move(*chunk));
      co_await out.finish();
    };
    co_return http::HttpResponse(200).stream(echo);
  });
  return ServerBootstrap()
      .group(group)
      .child_handler([router, h2](Channel& ch) {
        if (h2) {
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>());
        } else {
          ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>());
        }
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// Writes kBody bytes in kPiece pieces, then ends the body.
Task<void> write_all(client::RequestBody& body) {
  for (std::size_t at = 0; at < kBody; at += kPiece) {
    co_await body.write(ByteBuf::copy_of(pattern(at, std::min(kPiece, kBody - at))));
  }
  co_await body.finish();
}

Task<Upload> start_upload(HttpClient& client, std::string url) { co_return client.upload("POST", url); }

class StreamedRoutesTest : public test::ClientTest {};

TEST_P(StreamedRoutesTest, AProxyShapedRouteEchoesWhatItReadsByteExact) {
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "http1");
    ChannelPtr server = serve_echo(servers_, h2);
    ClientOptions options;
    options.http2_prior_knowledge = h2;
    HttpClient client(clients_, options);
    Future<Upload> started = spawn(clients_.at(0), start_upload(client, test::url_of(server, "http", "/echo")));
    ASSERT_TRUE(started.wait_for(std::chrono::seconds(60)));
    Upload up = started.take();
    // The writer on the client's loop while this thread reads: HTTP/1.1 echoes as it reads.
    Future<void> written = spawn(clients_.at(0), write_all(up.body));
    ASSERT_TRUE(up.response.wait_for(std::chrono::seconds(60)));
    StreamedResponse response = up.response.take();
    EXPECT_EQ(response.head.status(), 200);
    std::string echoed;
    for (;;) {
      Future<std::optional<ByteBuf>> next = response.body.next();
      ASSERT_TRUE(next.wait_for(std::chrono::seconds(60)));
      std::optional<ByteBuf> chunk = next.take();
      if (!chunk) break;
      echoed += chunk->view();
    }
    ASSERT_TRUE(written.wait_for(std::chrono::seconds(60)));
    EXPECT_FALSE(written.error());
    EXPECT_EQ(echoed.size(), kBody);
    EXPECT_TRUE(echoed == pattern(0, kBody));
    server->close().wait();
  }
}

WEFT_ON_EVERY_TRANSPORT(StreamedRoutesTest);

}  // namespace weft::streamed_routes_test
