// weft's gRPC client (weft/grpc/client.h) against weft's gRPC server, on every transport:
// the four call shapes, metadata both ways and grpc-timeout, messages that span DATA frames, a
// deadline that passes (DEADLINE_EXCEEDED, the server's handler sees the reset), a cancel in the
// middle of a server stream, a message past the size limit (RESOURCE_EXHAUSTED) and one at it, an
// unknown method (UNIMPLEMENTED), a status with a percent-encoded message, and a client stream
// that outruns a slow server (write() waits for the window; nothing is lost).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/h2c_server.h"
#include "support/transports.h"
#include "weft/grpc/client.h"
#include "weft/grpc/metadata.h"
#include "weft/grpc/service_registry.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::grpc {
namespace {

ByteBuf bytes(std::string_view text) { return ByteBuf::copy_of(text); }

std::string text(const ByteBuf& b) { return std::string(b.view()); }

// What the server's handlers saw, for the tests to check.
struct Seen {
  Promise<Status> cancelled;  // the status a cancelled handler's CallEnded carried
  std::atomic<std::size_t> flood_bytes{0};  // what /test.Echo/Flood has written
  Promise<std::size_t> flood_stalled;       // its bytes written when its call first stopped being ready
};

constexpr std::size_t kFloodMessageBytes = 1024;

ServiceRegistry test_service(std::shared_ptr<Seen> seen) {
  ServiceRegistry services;
  services.add_unary("/test.Echo/Unary", [](ServerCall& call, ByteBuf request) -> Task<ByteBuf> {
    if (auto echo = call.request().header("x-echo")) call.add_response_header("x-echoed", *echo);
    if (text(request) == "fail") throw StatusError(Status(StatusCode::invalid_argument, "bad 100% \xc3\xa9"));
    if (text(request) == "timeout") co_return bytes(call.timeout() ? std::to_string(call.timeout()->count()) : "none");
    co_return request;
  });
  // Server streaming: the request is a count N; answers "0" .. "N-1"; a count "-1": forever.
  services.add("/test.Echo/Count", [seen](ServerCall& call) -> Task<> {
    std::optional<ByteBuf> request = co_await call.read();
    const long n = request ? std::stol(text(*request)) : 0;
    try {
      for (long i = 0; n < 0 || i < n; ++i) {
        co_await call.write(bytes(std::to_string(i)));
        // A write returns at once while the stream is writable: pause now and then, so that the
        // server's loop serves its socket (and, unoptimised, the stack does not grow per write).
        if (i % 128 == 127) co_await weft::sleep(1ms);
      }
    } catch (const CallEnded& e) {
      seen->cancelled.set_value(e.status());
      throw;
    }
  });
  // A server stream of 1 KiB messages without end, for a client that never reads it.
  services.add("/test.Echo/Flood", [seen](ServerCall& call) -> Task<> {
    co_await call.read();
    bool stalled = false;
    try {
      for (;;) {
        if (!call.is_ready() && !stalled) {
          stalled = true;
          seen->flood_stalled.set_value(seen->flood_bytes.load());
        }
        co_await call.write(ByteBuf::copy_of(std::string(kFloodMessageBytes, 'f')));
        seen->flood_bytes.fetch_add(kFloodMessageBytes);
      }
    } catch (const CallEnded& e) {
      seen->cancelled.set_value(e.status());
      throw;
    }
  });
  // Client streaming: the total of the bytes of every request, and their count.
  services.add("/test.Echo/Sum", [](ServerCall& call) -> Task<> {
    std::size_t total = 0, count = 0;
    while (std::optional<ByteBuf> request = co_await call.read()) {
      total += request->readable_bytes();
      ++count;
      if (count % 64 == 0) co_await weft::sleep(1ms);  // a slow reader: the client's writes must wait
    }
    co_await call.write(bytes(std::to_string(count) + " " + std::to_string(total)));
  });
  // Bidi: every message back.
  services.add("/test.Echo/Bidi", [](ServerCall& call) -> Task<> {
    while (std::optional<ByteBuf> request = co_await call.read()) co_await call.write(std::move(*request));
  });
  // Reads until the call ends (the deadline): never answers.
  services.add("/test.Echo/Hang", [seen](ServerCall& call) -> Task<> {
    try {
      while (co_await call.read()) {
      }
    } catch (const CallEnded& e) {
      seen->cancelled.set_value(e.status());
      throw;
    }
  });
  // Compression and binary metadata: answers the request's grpc-encoding and its text, gzip-compressed
  // (when the client accepts gzip), and echoes x-data-bin in its head and its trailers.
  services.add_unary("/test.Echo/Encoding", [](ServerCall& call, ByteBuf request) -> Task<ByteBuf> {
    call.set_compression(CompressionOptions(Compression::gzip, -1, 0));
    if (auto data = call.metadata("x-data-bin")) {
      call.add_response_header("x-data-bin", *data);
      call.add_trailing_metadata("x-trail-bin", *data);
    }
    co_return bytes(std::string(call.request().header("grpc-encoding").value_or("none")) + ":" + text(request));
  });
  // One message of the size asked for.
  services.add_unary("/test.Echo/Big", [](ServerCall&, ByteBuf request) -> Task<ByteBuf> {
    ByteBuf out = ByteBuf::copy_of(std::string(std::stoul(text(request)), 'b'));
    co_return out;
  });
  return services;
}

// Answers a call with a head whose x-bad-bin is not base64, a message, and grpc-status 0.
class BadBinaryHead final : public InboundHandler<http2::StreamMessage, http2::StreamMessage> {
 public:
  void channel_read(Context& ctx, http2::StreamMessage&& message) override {
    if (!std::holds_alternative<http2::StreamHeaders>(message)) return;
    ctx.write(http2::ResponseHeaders{
        http::HttpResponse(200).header("content-type", "application/grpc").header("x-bad-bin", "not*base64"), false});
    ctx.write(http2::StreamData{ByteBuf::copy_of(std::string_view("\0\0\0\0\1m", 6)), false});
    ctx.write(http2::StreamTrailers{http2::Fields().add("grpc-status", "0")});
    ctx.flush();
  }
};

void bad_binary_head(http2::StreamChannel& ch) { ch.pipeline().add_last("bad-bin", std::make_shared<BadBinaryHead>()); }

class GrpcClientTest : public test::TransportTest {
 protected:
  void SetUp() override {
    http2::Settings settings;
    settings.stream_initializer = [chooser = test_service(seen_).stream_chooser()](const http::RequestHead& head) {
      return head.path == "/test.Raw/BadBin" ? http2::StreamInitializer(bad_binary_head) : chooser(head);
    };
    server_ = test::serve_h2c(loops_, settings);
    client_ = Client::connect(loops_, server_->local_address()).get();
  }
  void TearDown() override {
    if (client_) client_->close().wait();
    if (server_) server_->close().wait();
  }

  // Runs `task` on the client's loop and returns its result.
  template <class T>
  T run(Task<T> task) {
    Future<T> done = spawn(client_->loop(), std::move(task));
    EXPECT_TRUE(done.wait_for(60s)) << "the call did not end";
    return done.get();
  }

  EventLoopGroup loops_{transport(), loops(2, 4)};
  std::shared_ptr<Seen> seen_ = std::make_shared<Seen>();
  ChannelPtr server_;
  std::shared_ptr<Client> client_;
};

Task<std::string> unary(Client& client, std::string method, std::string request, CallOptions options = {}) {
  UnaryResult r = co_await client.unary(std::move(method), bytes(request), std::move(options));
  co_return std::string(status_code_name(r.status.code)) + ":" + r.status.message + ":" + text(r.message);
}

TEST_P(GrpcClientTest, UnaryCallsAreAnsweredAndTheirStatusesCarried) {
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "hello")), "OK::hello");
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "")), "OK::");
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "fail")), "INVALID_ARGUMENT:bad 100% \xc3\xa9:");
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Nope", "x")), "UNIMPLEMENTED:Method not found: /test.Echo/Nope:");
  EXPECT_EQ(run(unary(*client_, "/nope.Service/Method", "x")), "UNIMPLEMENTED:Method not found: /nope.Service/Method:");
}

Task<std::string> metadata_round_trip(Client& client) {
  CallOptions options;
  options.metadata = {{"x-echo", "value 1"}};
  ClientCall call = client.call("/test.Echo/Unary", options);
  co_await call.write(bytes("m"));
  co_await call.writes_done();
  std::optional<ByteBuf> response = co_await call.read();
  const http::HttpClientResponse* head = call.initial_metadata();
  std::string echoed = head != nullptr ? std::string(head->header("x-echoed").value_or("-")) : "no head";
  Status status = co_await call.finish();
  std::string trailer(call.trailing_metadata().get("grpc-status").value_or("-"));
  co_return echoed + "|" + (response ? text(*response) : "none") + "|" + std::string(status_code_name(status.code)) +
      "|" + trailer;
}

TEST_P(GrpcClientTest, MetadataGoesBothWaysAndTheTimeoutIsSentAsGrpcTimeout) {
  EXPECT_EQ(run(metadata_round_trip(*client_)), "value 1|m|OK|0");
  CallOptions options;
  options.timeout = 30s;
  const std::string answer = run(unary(*client_, "/test.Echo/Unary", "timeout", options));
  ASSERT_THAT(answer, HasSubstr("OK::"));
  const long long ns = std::stoll(answer.substr(4));
  EXPECT_GT(ns, 29'000'000'000LL);  // the server parsed a grpc-timeout of 30 s (whole, rounded up)
  EXPECT_LE(ns, 30'000'000'000LL);
  EXPECT_EQ(format_timeout(30s), "30000000u");
  EXPECT_EQ(format_timeout(250ms), "250000u");
  EXPECT_EQ(format_timeout(std::chrono::hours(30000)), "1800000M");
  EXPECT_EQ(format_timeout(Duration(1)), "1n");
}

Task<std::vector<std::string>> server_stream(Client& client, int n) {
  ClientCall call = client.call("/test.Echo/Count");
  co_await call.write(bytes(std::to_string(n)));
  co_await call.writes_done();
  std::vector<std::string> got;
  while (std::optional<ByteBuf> m = co_await call.read()) got.push_back(text(*m));
  Status status = co_await call.finish();
  got.push_back(std::string(status_code_name(status.code)));
  co_return got;
}

TEST_P(GrpcClientTest, ServerStreamingGivesEveryMessageInOrderThenOk) {
  const std::vector<std::string> got = run(server_stream(*client_, 5000));
  ASSERT_EQ(got.size(), 5001u);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i));
  EXPECT_EQ(got.back(), "OK");
}

Task<std::string> client_stream(Client& client, int n, std::size_t size) {
  ClientCall call = client.call("/test.Echo/Sum");
  for (int i = 0; i < n; ++i) {
    if (!co_await call.write(ByteBuf::copy_of(std::string(size, 'c')))) co_return "write failed at " + std::to_string(i);
  }
  co_await call.writes_done();
  std::optional<ByteBuf> response = co_await call.read();
  Status status = co_await call.finish();
  co_return (response ? text(*response) : "none") + " " + std::string(status_code_name(status.code));
}

// 2,000 messages of 3,000 bytes (6 MB) to a server that reads slowly: the client's writes wait on
// the stream's window (nothing is buffered past ClientSettings::max_buffered_upload) and arrive whole.
TEST_P(GrpcClientTest, ClientStreamingOutrunsASlowServerWithoutLosingAMessage) {
  EXPECT_EQ(run(client_stream(*client_, 2000, 3000)), "2000 6000000 OK");
  EXPECT_EQ(run(client_stream(*client_, 0, 0)), "0 0 OK");
}

// A writer and a reader coroutine on one call; messages from empty to 1 MiB, which span DATA frames.
Task<> bidi_writer(ClientCall& call, std::vector<std::size_t> sizes) {
  for (std::size_t size : sizes) co_await call.write(ByteBuf::copy_of(std::string(size, static_cast<char>('a' + size % 26))));
  co_await call.writes_done();
}

Task<std::string> bidi(Client& client) {
  const std::vector<std::size_t> sizes = {0, 1, 100, 16'384, 16'385, 100'000, 1u << 20, 7, 8'191, 8'192};
  ClientCall call = client.call("/test.Echo/Bidi");
  Future<void> writing = spawn(client.loop(), bidi_writer(call, sizes));
  std::string problems;
  for (std::size_t size : sizes) {
    std::optional<ByteBuf> m = co_await call.read();
    if (!m || text(*m) != std::string(size, static_cast<char>('a' + size % 26))) problems += "bad " + std::to_string(size) + ";";
  }
  if (co_await call.read()) problems += "one too many;";
  co_await writing;
  Status status = co_await call.finish();
  co_return problems + std::string(status_code_name(status.code));
}

TEST_P(GrpcClientTest, BidiStreamingEchoesMessagesOfEverySizeWhileWriting) { EXPECT_EQ(run(bidi(*client_)), "OK"); }

Task<std::string> ping_pong(Client& client, int rounds) {
  ClientCall call = client.call("/test.Echo/Bidi");
  for (int i = 0; i < rounds; ++i) {
    co_await call.write(bytes(std::to_string(i)));
    std::optional<ByteBuf> m = co_await call.read();
    if (!m || text(*m) != std::to_string(i)) co_return "round " + std::to_string(i);
  }
  co_await call.writes_done();
  if (co_await call.read()) co_return "one too many";
  Status status = co_await call.finish();
  co_return std::string(status_code_name(status.code));
}

TEST_P(GrpcClientTest, PingPongOnOneStreamAndManyCallsAtOnce) {
  EXPECT_EQ(run(ping_pong(*client_, 1000)), "OK");
  std::vector<Future<std::string>> calls;
  for (int i = 0; i < 50; ++i) calls.push_back(spawn(client_->loop(), ping_pong(*client_, 50)));
  for (auto& f : calls) {
    ASSERT_TRUE(f.wait_for(60s));
    EXPECT_EQ(f.get(), "OK");
  }
}

Task<std::string> deadline(Client& client) {
  CallOptions options;
  options.timeout = 50ms;
  ClientCall call = client.call("/test.Echo/Hang", options);
  co_await call.write(bytes("x"));  // no writes_done(): the server waits for more
  std::optional<ByteBuf> m = co_await call.read();
  Status status = co_await call.finish();
  const bool wrote = co_await call.write(bytes("late"));
  co_return (m ? "message " : "") + std::string(status_code_name(status.code)) + ":" + status.message +
      (wrote ? " (a write after the end succeeded)" : "");
}

TEST_P(GrpcClientTest, ADeadlinePassesDeadlineExceededAndTheServerSeesTheCallEnd) {
  EXPECT_EQ(run(deadline(*client_)), "DEADLINE_EXCEEDED:Deadline Exceeded");
  // The server saw the end: its own deadline, or the client's reset, whichever came first.
  Future<Status> seen = seen_->cancelled.future();
  ASSERT_TRUE(seen.wait_for(30s));
  EXPECT_THAT(std::string(status_code_name(seen.get().code)), ::testing::AnyOf("DEADLINE_EXCEEDED", "CANCELLED"));
}

Task<std::string> cancel_mid_stream(Client& client) {
  ClientCall call = client.call("/test.Echo/Count");
  co_await call.write(bytes("-1"));  // forever
  co_await call.writes_done();
  for (int i = 0; i < 100; ++i) {
    std::optional<ByteBuf> m = co_await call.read();
    if (!m || text(*m) != std::to_string(i)) co_return "message " + std::to_string(i);
  }
  call.cancel();
  std::optional<ByteBuf> after = co_await call.read();
  Status status = co_await call.finish();
  co_return (after ? "read after cancel " : "") + std::string(status_code_name(status.code));
}

TEST_P(GrpcClientTest, ACancelInTheMiddleOfAServerStreamResetsItAndTheServerSeesIt) {
  EXPECT_EQ(run(cancel_mid_stream(*client_)), "CANCELLED");
  Future<Status> seen = seen_->cancelled.future();
  ASSERT_TRUE(seen.wait_for(30s)) << "the server's handler did not see the reset";
  EXPECT_EQ(seen.get().code, StatusCode::cancelled);
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "still")), "OK::still");  // the connection goes on
}

TEST_P(GrpcClientTest, AResponseMessagePastTheLimitIsResourceExhaustedAndOneAtItIsRead) {
  const std::size_t limit = kDefaultMaxMessageBytes;
  const std::string at = run(unary(*client_, "/test.Echo/Big", std::to_string(limit)));
  EXPECT_EQ(at.substr(0, 4), "OK::");
  EXPECT_EQ(at.size(), 4 + limit);
  const std::string past = run(unary(*client_, "/test.Echo/Big", std::to_string(limit + 1)));
  EXPECT_THAT(past, HasSubstr("RESOURCE_EXHAUSTED:"));
  EXPECT_THAT(past, HasSubstr("larger than max"));
  CallOptions small;
  small.max_receive_message_bytes = 100;
  EXPECT_THAT(run(unary(*client_, "/test.Echo/Big", "101", small)), HasSubstr("RESOURCE_EXHAUSTED:"));
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Big", "100", small)), "OK::" + std::string(100, 'b'));
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "after")), "OK::after");  // the connection goes on
}

Task<std::string> closed_connection(Client& client) {
  ClientCall call = client.call("/test.Echo/Hang");
  co_await call.write(bytes("x"));
  client.http2().channel().close();
  Status status = co_await call.finish();
  co_return std::string(status_code_name(status.code));
}

TEST_P(GrpcClientTest, CallsOnAConnectionThatClosesEndUnavailable) {
  EXPECT_EQ(run(closed_connection(*client_)), "UNAVAILABLE");
}

// A call whose requests are gzip-compressed, with binary metadata: the server sees grpc-encoding
// gzip and the message whole; its gzip-compressed response is decompressed; the -bin values come
// back decoded from the head and the trailers.
Task<std::string> compressed_call(Client& client, Compression compression, std::string message) {
  const std::string binary("\0\xff\x01 binary,\x80", 12);
  CallOptions options;
  options.compression = CompressionOptions(compression, -1, 0);
  options.metadata = {{"x-data-bin", binary}};
  ClientCall call = client.call("/test.Echo/Encoding", options);
  co_await call.write(bytes(message));
  co_await call.writes_done();
  std::optional<ByteBuf> response = co_await call.read();
  const std::string response_encoding(call.initial_metadata() != nullptr
                                          ? call.initial_metadata()->header("grpc-encoding").value_or("none")
                                          : "no head");
  const bool head_bin = call.initial_metadata_value("x-data-bin") == binary;
  Status status = co_await call.finish();
  const bool trailer_bin = call.trailing_metadata_value("x-trail-bin") == binary;
  co_return std::string(status_code_name(status.code)) + "|" + response_encoding + "|" +
      (head_bin ? "head-bin" : "head-bin?") + "|" + (trailer_bin ? "trailer-bin" : "trailer-bin?") + "|" +
      (response ? text(*response) : "none");
}

TEST_P(GrpcClientTest, CompressedRequestsAndResponsesAndBinaryMetadataGoBothWays) {
  const std::string message(20'000, 'z');
  EXPECT_EQ(run(compressed_call(*client_, Compression::gzip, message)),
            "OK|gzip|head-bin|trailer-bin|gzip:" + message);
  EXPECT_EQ(run(compressed_call(*client_, Compression::deflate, message)),
            "OK|gzip|head-bin|trailer-bin|deflate:" + message);
  EXPECT_EQ(run(compressed_call(*client_, Compression::identity, "plain")),
            "OK|gzip|head-bin|trailer-bin|none:plain");
  // The client's default (ClientOptions::compression) applies when the call says nothing.
  ClientOptions gzip_by_default;
  gzip_by_default.compression = CompressionOptions(Compression::gzip, -1, 0);
  client_->close().wait();  // (in place: a blocking group has a thread per connection, and no more)
  client_ = Client::connect(loops_, server_->local_address(), gzip_by_default).get();
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Encoding", "by default")), "OK::gzip:by default");
}

// A client that starts a server stream and never reads it: the server's handler stops at the
// client's stream window (weft's client: 1 MiB, returned only as the application reads) plus the
// buffers' high-water marks, and stays stopped while the connection serves other calls; what the
// server holds for the call stays far within 16 MiB. A cancel ends the handler.
Task<std::string> never_read(Client& client, Seen& seen) {
  ClientCall call = client.call("/test.Echo/Flood");
  co_await call.write(bytes("go"));
  co_await call.writes_done();
  const std::size_t at_stall = co_await seen.flood_stalled.future();
  // The connection goes on: other calls are answered meanwhile (the flooded stream holds only its window).
  for (int i = 0; i < 20; ++i) {
    UnaryResult r = co_await client.unary("/test.Echo/Unary", bytes("beside"));
    if (!r.status.ok()) co_return "a call beside the flood failed: " + r.status.message;
  }
  const std::size_t after = seen.flood_bytes.load();
  call.cancel();
  co_return std::to_string(at_stall) + " " + std::to_string(after);
}

TEST_P(GrpcClientTest, AServerStreamTheClientNeverReadsStopsItsHandlerAtTheWindow) {
  const std::string answer = run(never_read(*client_, *seen_));
  std::size_t at_stall = 0, after = 0;
  ASSERT_EQ(std::sscanf(answer.c_str(), "%zu %zu", &at_stall, &after), 2) << answer;
  const std::size_t window = http2::ClientSettings{}.initial_window_size;  // 1 MiB
  // The window, the stream's and the connection's write buffers (64 KiB high-water marks each, and a
  // message over them), and the frames being framed: about 1.2 MiB, never 16.
  const std::size_t bound = window + 512 * 1024;
  EXPECT_LE(at_stall, bound);
  EXPECT_LE(after, bound) << "the handler went on writing to a client that does not read";
  Future<Status> ended = seen_->cancelled.future();
  ASSERT_TRUE(ended.wait_for(60s)) << "the cancel did not reach the handler";
  EXPECT_EQ(ended.get().code, StatusCode::cancelled);
}

// The callback form, called from a thread that is not the loop: the result comes to the callback on
// the connection's loop, statuses included; refused metadata comes as INVALID_ARGUMENT.
TEST_P(GrpcClientTest, UnaryCallbacksGetTheirResultOnTheConnectionsLoop) {
  struct Outcome {
    std::string text;
    bool on_loop = false;
  };
  const auto call = [this](std::string method, std::string request, CallOptions options = {}) {
    Promise<Outcome> got;
    client_->unary(std::move(method), bytes(request), std::move(options), [this, got](UnaryResult r) mutable {
      got.set_value(Outcome{std::string(status_code_name(r.status.code)) + ":" + r.status.message + ":" + text(r.message),
                            client_->loop().in_loop()});
    });
    Future<Outcome> f = got.future();
    EXPECT_TRUE(f.wait_for(60s)) << "the callback did not run";
    return f.get();
  };
  const Outcome ok = call("/test.Echo/Unary", "by callback");
  EXPECT_EQ(ok.text, "OK::by callback");
  EXPECT_TRUE(ok.on_loop);
  EXPECT_EQ(call("/test.Echo/Unary", "fail").text, "INVALID_ARGUMENT:bad 100% \xc3\xa9:");
  EXPECT_EQ(call("/test.Echo/Nope", "x").text, "UNIMPLEMENTED:Method not found: /test.Echo/Nope:");
  CallOptions bad;
  bad.metadata = {{"grpc-status", "0"}};
  EXPECT_THAT(call("/test.Echo/Unary", "x", bad).text, HasSubstr("INVALID_ARGUMENT:"));
}

Task<std::string> invalid_metadata(Client& client) {
  CallOptions options;
  options.metadata = {{"Upper-Case", "v"}};
  try {
    ClientCall call = client.call("/test.Echo/Unary", options);
  } catch (const InvalidMetadata&) {
    co_return "InvalidMetadata";
  }
  co_return "accepted";
}

TEST_P(GrpcClientTest, MetadataGrpcDoesNotAllowIsRefusedBeforeTheCallStarts) {
  EXPECT_EQ(run(invalid_metadata(*client_)), "InvalidMetadata");
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "after")), "OK::after");  // nothing was sent
}

TEST_P(GrpcClientTest, AResponseHeadWithBinaryMetadataThatIsNotBase64EndsTheCallInternal) {
  const std::string answer = run(unary(*client_, "/test.Raw/BadBin", "x"));
  EXPECT_THAT(answer, HasSubstr("INTERNAL:"));
  EXPECT_THAT(answer, HasSubstr("x-bad-bin"));
  EXPECT_EQ(run(unary(*client_, "/test.Echo/Unary", "after")), "OK::after");  // the connection goes on
}

WEFT_ON_EVERY_TRANSPORT(GrpcClientTest);

}  // namespace
}  // namespace weft::grpc
