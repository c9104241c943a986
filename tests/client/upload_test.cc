// client::HttpClient::upload on every transport: a body written in chunks arrives byte-exact over
// HTTP/1.1 (chunked and Content-Length) and h2c; a server that never reads stops the writer with
// the client's queue bounded (the idle timeout then ends it, typed); an early 413 stops the upload
// (HTTP/1.1: the connection is not reused; h2c: it serves on); an abandoned body fails the request
// (HTTP/1.1: a new connection next; h2c: the connection goes on); a wrong declared length fails typed.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "client/origin_servers.h"
#include "support/blocking_client.h"
#include "support/sanitizers.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/core/spawn.h"
#include "weft/core/task.h"

namespace weft::upload_test {

using client::ClientOptions;
using client::HttpClient;
using client::RequestBodyError;
using client::StreamedResponse;
using client::Upload;

#if defined(WEFT_TEST_SANITIZED)
constexpr std::size_t kUpload = std::size_t{1} << 20;
#else
constexpr std::size_t kUpload = std::size_t{4} << 20;
#endif
constexpr std::size_t kPiece = 65'521;  // a prime: chunks never line up with frames or buffers

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}
constexpr std::uint64_t kFnvStart = 14695981039346656037ull;

// The pattern the uploads send: byte i is i * 7 mod 251.
std::string pattern(std::size_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((from + i) * 7 % 251);
  return s;
}

template <class T>
T await_value(const Future<T>& f) {
  if (!f.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no answer within 60 s");
  return f.take();
}
void await_done(const Future<void>& f) {
  if (!f.wait_for(std::chrono::seconds(60))) throw std::runtime_error("no answer within 60 s");
  f.get();
}

std::string read_all(client::ResponseBody& body) {
  std::string out;
  while (std::optional<ByteBuf> chunk = await_value(body.next())) out += chunk->view();
  return out;
}

template <class E>
const E* error_as(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return &e;
  } catch (...) {
  }
  return nullptr;
}

// POST /sum answers "<bytes> <fnv-1a>" of the body (bounded at 16 MiB); the h1 and h2c servers.
ChannelPtr serve_sums(EventLoopGroup& group, bool h2) {
  auto router = std::make_shared<http::Router>();
  router->post("/sum", [](Context& ctx, http::HttpRequest& request) {
    const std::string_view body = request.body_view();
    ctx.write(http::HttpResponse(200).body(std::to_string(body.size()) + " " + std::to_string(fnv1a(kFnvStart, body))));
  });
  router->get("/hello", [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body("hello")); });
  return ServerBootstrap()
      .group(group)
      .child_handler([router, h2](Channel& ch) {
        if (h2) {
          http2::Settings settings;
          settings.max_body = 16u << 20;
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
        } else {
          http::Limits limits;
          limits.max_body = 16u << 20;
          ch.pipeline().add_last("http1", std::make_shared<http::ServerCodec>(limits));
        }
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// Reads and drops everything; answers 413 after the first request head, keeping the connection.
ChannelPtr serve_early_413(EventLoopGroup& group) {
  return test::serve_raw(group, [](Context& ctx, int n) {
    if (n == 1) ctx.write_and_flush(ByteBuf::copy_of("HTTP/1.1 413 Too Large\r\nContent-Length: 4\r\n\r\nbig!"));
  });
}

Task<Upload> upload_task(HttpClient& client, std::string url, std::optional<std::uint64_t> length) {
  co_return client.upload("POST", url, length);
}
Task<http::HttpClientResponse> get_task(HttpClient& client, std::string url) { co_return co_await client.get(url); }

// h2c: every stream is answered 413 (with END_STREAM) at its request's head.
ChannelPtr serve_h2_early_413(EventLoopGroup& group) {
  class Refuse final : public InboundHandler<http2::StreamMessage> {
   public:
    void channel_read(Context& ctx, http2::StreamMessage&& message) override {
      if (std::holds_alternative<http2::StreamHeaders>(message)) {
        ctx.write_and_flush(http2::ResponseHeaders{http::HttpResponse(413), true});
      }
    }
    void exception_caught(Context&, std::exception_ptr) override {}
  };
  return ServerBootstrap()
      .group(group)
      .child_handler([](Channel& ch) {
        http2::Settings settings;
        settings.stream_initializer = [](const http::RequestHead&) -> http2::StreamInitializer {
          return [](http2::StreamChannel& stream) { stream.pipeline().add_last("refuse", std::make_shared<Refuse>()); };
        };
        ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

class UploadTest : public test::ClientTest {
 protected:
  // From the first client loop, so that the requests share its pool.
  Upload upload_from_one_loop(HttpClient& client, const std::string& url, std::optional<std::uint64_t> length = {}) {
    return await_value(spawn(clients_.at(0), upload_task(client, url, length)));
  }
  http::HttpClientResponse get_from_one_loop(HttpClient& client, const std::string& url) {
    return await_value(spawn(clients_.at(0), get_task(client, url)));
  }
};

TEST_P(UploadTest, ChunkedSizedAndH2cUploadsArriveByteExact) {
  const std::string expected = std::to_string(kUpload) + " " + std::to_string(fnv1a(kFnvStart, pattern(0, kUpload)));
  for (bool h2 : {false, true}) {
    ChannelPtr server = serve_sums(servers_, h2);
    ClientOptions options;
    options.http2_prior_knowledge = h2;
    HttpClient client(clients_, options);
    for (bool sized : {false, true}) {
      SCOPED_TRACE(std::string(h2 ? "h2c" : "http1") + (sized ? " content-length" : " chunked"));
      Upload up = client.upload("POST", test::url_of(server, "http", "/sum"),
                                sized ? std::optional<std::uint64_t>(kUpload) : std::nullopt);
      for (std::size_t at = 0; at < kUpload; at += kPiece) {
        await_done(up.body.write(ByteBuf::copy_of(pattern(at, std::min(kPiece, kUpload - at)))));
      }
      await_done(up.body.finish());
      StreamedResponse r = await_value(up.response);
      EXPECT_EQ(r.head.status(), 200);
      EXPECT_EQ(read_all(r.body), expected);
    }
    server->close().wait();
  }
}

TEST_P(UploadTest, ServerThatNeverReadsStopsTheWriterBounded) {
  ChannelPtr server = ServerBootstrap()
                          .group(servers_)
                          .child_handler([](Channel& ch) { ch.config().auto_read = false; })
                          .bind(SocketAddress::loopback(0))
                          .get();
  // The blocking transport's write blocks its channel's thread, whose timers then cannot run: the
  // request timeout (on the pool's loop) ends the upload there; elsewhere the idle timeout does.
  const auto kind = is_blocking() ? client::TimeoutError::Kind::request : client::TimeoutError::Kind::idle;
  ClientOptions options;
  options.request_timeout = is_blocking() ? Duration(std::chrono::milliseconds(500)) : Duration::zero();
  options.idle_timeout = std::chrono::milliseconds(200);
  HttpClient client(clients_, options);
  Upload up = client.upload("POST", test::url_of(server, "http", "/upload"));
  // Slices of one block: unbounded queuing would cost references, not memory, and the test CPU little.
  const ByteBuf block = ByteBuf::copy_of(pattern(0, 1u << 16));
  constexpr std::size_t kCap = std::size_t{256} << 20;
  std::size_t accepted = 0;
  std::exception_ptr stopped;
  while (accepted < kCap) {
    Future<void> f = up.body.write(block.slice());
    if (!f.wait_for(std::chrono::seconds(60))) FAIL() << "a write neither completed nor failed";
    if ((stopped = f.error())) break;
    accepted += block.readable_bytes();
  }
  // The socket's buffers and the channel's high water mark hold what was taken: far below the cap.
  EXPECT_LT(accepted, std::size_t{48} << 20);
  ASSERT_TRUE(stopped) << "every write was taken: the writer never waited";
  const auto* timeout = error_as<client::TimeoutError>(stopped);
  ASSERT_NE(timeout, nullptr) << error_as<std::exception>(stopped)->what();
  EXPECT_EQ(timeout->kind(), kind);
  const auto* answer_error = error_as<client::TimeoutError>(
      up.response.wait_for(std::chrono::seconds(60)) ? up.response.error() : std::exception_ptr());
  ASSERT_NE(answer_error, nullptr);
  EXPECT_EQ(answer_error->kind(), kind);
}

TEST_P(UploadTest, EarlyAnswerStopsTheUploadAndTheConnectionGoes) {
  ChannelPtr server = serve_early_413(servers_);
  ClientOptions options;
  options.max_connections_per_origin = 1;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/upload");
  Upload up = upload_from_one_loop(client, url);
  StreamedResponse r;
  bool answered = false;
  std::exception_ptr stopped;
  const ByteBuf block = ByteBuf::copy_of(pattern(0, 1u << 16));
  for (int i = 0; i < 4096 && !stopped; ++i) {  // until the answer stops it (256 MiB at most)
    Future<void> f = up.body.write(block.slice());
    if (!f.wait_for(std::chrono::seconds(60))) FAIL() << "a write neither completed nor failed";
    stopped = f.error();
  }
  ASSERT_TRUE(stopped) << "the upload went on after the 413";
  const auto* body_error = error_as<RequestBodyError>(stopped);
  ASSERT_NE(body_error, nullptr);
  EXPECT_EQ(body_error->kind(), RequestBodyError::Kind::answered);
  r = await_value(up.response);
  answered = true;
  EXPECT_EQ(r.head.status(), 413);
  EXPECT_EQ(read_all(r.body), "big!");
  EXPECT_TRUE(answered);
  // Its unsent rest would be read as the next request: a new connection carries the next one.
  EXPECT_EQ(get_from_one_loop(client, url).status(), 413);
  EXPECT_EQ(client.stats().connections_opened, 2u);
  EXPECT_EQ(client.stats().retries, 0u);
}

TEST_P(UploadTest, EarlyAnswerOnHttp2StopsTheUploadAndTheConnectionServes) {
  ChannelPtr server = serve_h2_early_413(servers_);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  HttpClient client(clients_, options);
  const std::string url = test::url_of(server, "http", "/upload");
  Upload up = upload_from_one_loop(client, url);
  std::exception_ptr stopped;
  const ByteBuf block = ByteBuf::copy_of(pattern(0, 1u << 16));
  for (int i = 0; i < 4096 && !stopped; ++i) {
    Future<void> f = up.body.write(block.slice());
    if (!f.wait_for(std::chrono::seconds(60))) FAIL() << "a write neither completed nor failed";
    stopped = f.error();
  }
  ASSERT_TRUE(stopped) << "the upload went on after the 413";
  const auto* body_error = error_as<RequestBodyError>(stopped);
  ASSERT_NE(body_error, nullptr) << error_as<std::exception>(stopped)->what();
  EXPECT_EQ(body_error->kind(), RequestBodyError::Kind::answered);
  StreamedResponse r = await_value(up.response);
  EXPECT_EQ(r.head.status(), 413);
  EXPECT_EQ(read_all(r.body), "");
  // The stream ended; its connection serves the next request.
  EXPECT_EQ(get_from_one_loop(client, url).status(), 413);
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

TEST_P(UploadTest, AbandonedBodyFailsTheRequest) {
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "http1");
    ChannelPtr server = serve_sums(servers_, h2);
    ClientOptions options;
    options.http2_prior_knowledge = h2;
    HttpClient client(clients_, options);
    const std::string url = test::url_of(server, "http", "/sum");
    Future<StreamedResponse> response;
    {
      Upload up = upload_from_one_loop(client, url);
      await_done(up.body.write(ByteBuf::copy_of(pattern(0, 1000))));
      response = up.response;
    }  // the body let go of before finish()
    ASSERT_TRUE(response.wait_for(std::chrono::seconds(60)));
    const auto* error = error_as<RequestBodyError>(response.error());
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->kind(), RequestBodyError::Kind::abandoned);
    // HTTP/1.1: the half-sent request's connection is closed, a new one serves the next request;
    // h2c: the stream was reset, and the connection serves the next one.
    EXPECT_EQ(get_from_one_loop(client, test::url_of(server, "http", "/hello")).body_view(), "hello");
    EXPECT_EQ(client.stats().connections_opened, h2 ? 1u : 2u);
    server->close().wait();
  }
}

TEST_P(UploadTest, DeclaredLengthMismatchFailsTyped) {
  ChannelPtr server = serve_sums(servers_, false);
  HttpClient client(clients_);
  const std::string url = test::url_of(server, "http", "/sum");
  {
    Upload up = client.upload("POST", url, 10);
    await_done(up.body.write(ByteBuf::copy_of("12345")));
    Future<void> more = up.body.write(ByteBuf::copy_of("678901"));  // 11 in all
    ASSERT_TRUE(more.wait_for(std::chrono::seconds(60)));
    const auto* error = error_as<RequestBodyError>(more.error());
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->kind(), RequestBodyError::Kind::too_long);
    ASSERT_TRUE(up.response.wait_for(std::chrono::seconds(60)));
    ASSERT_NE(error_as<RequestBodyError>(up.response.error()), nullptr);
  }
  {
    Upload up = client.upload("POST", url, 10);
    await_done(up.body.write(ByteBuf::copy_of("12345")));
    Future<void> done = up.body.finish();
    ASSERT_TRUE(done.wait_for(std::chrono::seconds(60)));
    const auto* error = error_as<RequestBodyError>(done.error());
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->kind(), RequestBodyError::Kind::too_short);
    ASSERT_TRUE(up.response.wait_for(std::chrono::seconds(60)));
    const auto* failed = error_as<RequestBodyError>(up.response.error());
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->kind(), RequestBodyError::Kind::too_short);
  }
  // An exact one still goes through.
  Upload up = client.upload("POST", url, 10);
  await_done(up.body.write(ByteBuf::copy_of("1234567890")));
  await_done(up.body.finish());
  StreamedResponse r = await_value(up.response);
  EXPECT_EQ(read_all(r.body), "10 " + std::to_string(fnv1a(kFnvStart, "1234567890")));
}

WEFT_ON_EVERY_TRANSPORT(UploadTest);

}  // namespace weft::upload_test
