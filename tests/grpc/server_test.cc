// The gRPC server core (weft/grpc) on weft's HTTP/2 stream API, in an EmbeddedChannel driven
// by an nghttp2 client session: length-prefixed messages split at every byte and several per
// frame, the size limit, compressed flags, unknown methods, wrong content-types, statuses in
// trailers and Trailers-Only form (grpc-message percent-encoded), deadlines and client resets.

#include <gtest/gtest.h>

#include <coroutine>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "support/h2_client.h"
#include "weft/channel/embedded_channel.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/service_registry.h"
#include "weft/grpc/status.h"
#include "weft/grpc/timeout.h"
#include "weft/core/awaitables.h"
#include "weft/core/spawn.h"
#include "weft/core/event_loop_group.h"
#include "weft/grpc/unary_responder.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"

using namespace std::chrono_literals;

namespace weft::grpc {
namespace {

using test::H2Client;
using test::H2Response;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string frame(std::string_view message, std::uint8_t flag = 0) {
  std::string out(5, '\0');
  out[0] = static_cast<char>(flag);
  const auto n = static_cast<std::uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  out.append(message);
  return out;
}

std::string patterned(std::size_t n, char first = 'a') {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(first + i % 23);
  return s;
}

Headers grpc_headers(Headers extra = {}) {
  Headers h = {{"content-type", "application/grpc"}, {"te", "trailers"}};
  for (auto& f : extra) h.push_back(std::move(f));
  return h;
}

std::optional<std::string> field(const Headers& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// The status a response carries: in its trailers, or in its head (Trailers-Only).
std::optional<std::string> grpc_status(const H2Response& r) {
  if (auto s = field(r.trailers, "grpc-status")) return s;
  return r.header("grpc-status");
}
std::optional<std::string> grpc_message(const H2Response& r) {
  if (auto s = field(r.trailers, "grpc-message")) return s;
  return r.header("grpc-message");
}

// What the handlers saw, for the tests to check.
struct Observed {
  std::optional<Status> ended;  // the CallEnded a handler caught
  bool cancelled = false;
  std::optional<Duration> timeout;
  int calls = 0;
  EventLoop* loop = nullptr;
  std::vector<UnaryResponder> responders;  // kept by /test.Echo/CallbackLater
};

// Resumes the coroutine after `delay` on `loop` (the EmbeddedChannel's, whose clock the test moves).
struct After {
  EventLoop& loop;
  Duration delay;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { loop.schedule(delay, [h] { h.resume(); }); }
  void await_resume() const noexcept {}
};

struct Fixture {
  explicit Fixture(ServerOptions options = {}) : observed(std::make_shared<Observed>()) {
    observed->loop = &ch.loop();
    ServiceRegistry services(options);
    services.add_unary("/test.Echo/Unary", [](ServerCall&, ByteBuf request) -> Task<ByteBuf> { co_return request; });
    services.add("/test.Echo/Bidi", [](ServerCall& call) -> Task<> {
      while (std::optional<ByteBuf> m = co_await call.read()) co_await call.write(std::move(*m));
    });
    services.add("/test.Echo/ServerStream", [](ServerCall& call) -> Task<> {
      std::optional<ByteBuf> request = co_await call.read();
      const int n = std::stoi(request->to_string());
      for (int i = 0; i < n; ++i) co_await call.write(ByteBuf::copy_of("reply " + std::to_string(i)));
      co_await call.finish(Status{StatusCode::ok, ""});
    });
    services.add("/test.Echo/Collect", [](ServerCall& call) -> Task<> {
      std::size_t messages = 0, bytes = 0;
      while (std::optional<ByteBuf> m = co_await call.read()) {
        ++messages;
        bytes += m->readable_bytes();
      }
      co_await call.write(ByteBuf::copy_of(std::to_string(messages) + "/" + std::to_string(bytes)));
    });
    services.add("/test.Echo/Fail", [](ServerCall& call) -> Task<> {
      co_await call.write(ByteBuf::copy_of("partial"));
      throw StatusError(Status{StatusCode::invalid_argument, "bad 100% \xC3\xA9\n"});
    });
    std::shared_ptr<Observed> seen = observed;
    services.add("/test.Echo/Wait", [seen](ServerCall& call) -> Task<> {
      ++seen->calls;
      seen->timeout = call.timeout();
      if (call.request().header("x-write-first")) co_await call.write(ByteBuf::copy_of("first"));
      try {
        for (;;) {
          std::optional<ByteBuf> m = co_await call.read();
          if (!m) break;
        }
      } catch (const CallEnded& e) {
        seen->ended = e.status();
        seen->cancelled = call.cancelled();
        throw;
      }
    });
    // Works without reading (a timer stands for the work), then looks whether the call was cancelled.
    services.add("/test.Echo/Busy", [seen](ServerCall& call) -> Task<> {
      ++seen->calls;
      co_await After{*seen->loop, 50ms};
      seen->cancelled = call.cancelled();
    });
    services.add("/test.Echo/Throw", [](ServerCall& call) -> Task<> {
      while (co_await call.read()) {
      }
      throw std::runtime_error("broken handler");
    });
    // Writes, then waits until its connection drains (ServerCall::on_draining) and ends OK.
    services.add("/test.Echo/UntilDrain", [](ServerCall& call) -> Task<> {
      co_await call.write(ByteBuf::copy_of("watching"));
      struct Draining {
        ServerCall& call;
        bool await_ready() const noexcept { return call.draining(); }
        void await_suspend(std::coroutine_handle<> h) {
          call.on_draining([h] { h.resume(); });
        }
        void await_resume() const noexcept {}
      };
      co_await Draining{call};
      co_await call.finish(Status{StatusCode::ok, "drained"});
    });
    services.add_unary_callback("/test.Echo/CallbackNow", [](ServerCall&, ByteBuf request, UnaryResponder responder) {
      responder.respond(std::move(request));
    });
    services.add_unary_callback("/test.Echo/CallbackLater", [seen](ServerCall&, ByteBuf, UnaryResponder responder) {
      seen->responders.push_back(std::move(responder));
    });
    services.add_unary_callback("/test.Echo/CallbackDrops", [](ServerCall&, ByteBuf, UnaryResponder) {});
    http2::Settings settings;
    settings.stream_initializer = services.stream_chooser();
    ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(std::move(settings)));
    auto router = std::make_shared<http::Router>();
    router->get("/plain",
                [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body_view("plain")); });
    router->post("/test.Echo/Unary",
                 [](Context& ctx, http::HttpRequest&) { ctx.write(http::HttpResponse(200).body_view("router")); });
    ch.pipeline().add_last("app", router);
  }
  void pump(H2Client& client) {
    for (int round = 0; round < 100'000; ++round) {
      const std::string out = client.take_output();
      if (!out.empty() && ch.is_open()) ch.write_inbound(ByteBuf::copy_of(out));
      ch.run_pending();
      std::string in;
      while (auto b = ch.read_outbound<ByteBuf>()) in += b->to_string();
      if (!in.empty()) client.receive(in);
      if (out.empty() && in.empty()) return;
    }
    FAIL() << "the exchange did not settle";
  }
  // One call with `body` sent in one piece; returns the response.
  H2Response call(const std::string& path, const std::string& body, Headers extra = {}) {
    const auto id = client.request_streamed("POST", path, grpc_headers(std::move(extra)));
    client.send(id, body);
    client.finish(id);
    pump(client);
    return client.response(id);
  }

  EmbeddedChannel ch;
  std::shared_ptr<Observed> observed;
  H2Client client;  // the connection's client (call() makes its requests)
};

TEST(GrpcServer, AUnaryCallIsAnsweredWithHeadersTheMessageAndOkTrailers) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Unary", frame("hello"));
  ASSERT_TRUE(r.closed);
  EXPECT_EQ(r.close_error, 0u);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/grpc");
  EXPECT_EQ(r.body, frame("hello"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
  EXPECT_FALSE(field(r.trailers, "grpc-message"));
}

TEST(GrpcServer, MessagesSplitAtEveryByteAreReassembled) {
  // Three messages (empty, one byte, 300 bytes), the body cut in two at every offset.
  const std::string messages[] = {"", "x", patterned(300)};
  std::string body;
  for (const auto& m : messages) body += frame(m);
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    Fixture f;
    H2Client client;
    const auto id = client.request_streamed("POST", "/test.Echo/Bidi", grpc_headers());
    client.send(id, body.substr(0, cut));
    f.pump(client);
    client.send(id, body.substr(cut));
    f.pump(client);
    client.finish(id);
    f.pump(client);
    const H2Response& r = client.response(id);
    ASSERT_TRUE(r.closed) << "cut at " << cut;
    EXPECT_EQ(r.body, body) << "cut at " << cut;
    EXPECT_EQ(field(r.trailers, "grpc-status"), "0") << "cut at " << cut;
  }
}

TEST(GrpcServer, ABodySentAByteAtATimeIsReassembled) {
  Fixture f;
  H2Client client;
  const std::string body = frame("abc") + frame(patterned(40));
  const auto id = client.request_streamed("POST", "/test.Echo/Collect", grpc_headers());
  for (const char ch : body) {
    client.send(id, std::string(1, ch));
    f.pump(client);
  }
  client.finish(id);
  f.pump(client);
  EXPECT_EQ(client.response(id).body, frame("2/43"));
}

TEST(GrpcServer, SeveralMessagesInOneFrameAreReadOneByOne) {
  Fixture f;
  std::string body;
  for (int i = 0; i < 10; ++i) body += frame(patterned(static_cast<std::size_t>(i) * 10));
  const H2Response r = f.call("/test.Echo/Collect", body);
  EXPECT_EQ(r.body, frame("10/450"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
}

TEST(GrpcServer, AMessageAcrossManyFramesIsReadWhole) {
  Fixture f;
  const std::string big = patterned(200'000);  // past 64 KiB windows and 16 KiB frames
  const H2Response r = f.call("/test.Echo/Unary", frame(big));
  EXPECT_EQ(r.body, frame(big));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
}

TEST(GrpcServer, AMessageAtTheSizeLimitPassesAndOnePastItIsResourceExhausted) {
  ServerOptions options;
  options.max_receive_message_bytes = 1024;
  Fixture f(options);
  const H2Response at = f.call("/test.Echo/Unary", frame(patterned(1024)));
  EXPECT_EQ(at.body, frame(patterned(1024)));
  EXPECT_EQ(grpc_status(at), "0");
  const H2Response past = f.call("/test.Echo/Unary", frame(patterned(1025)));
  EXPECT_EQ(past.status, 200);
  EXPECT_EQ(past.body, "");
  EXPECT_EQ(grpc_status(past), "8");  // RESOURCE_EXHAUSTED, Trailers-Only
  EXPECT_TRUE(past.trailers.empty());
}

TEST(GrpcServer, TheDefaultLimitIsFourMebibytes) {
  Fixture f;
  // The prefix alone announces 4 MiB + 1: refused before the bytes come.
  const std::string prefix = frame("").substr(0, 1) + std::string("\x00\x40\x00\x01", 4);
  const H2Response r = f.call("/test.Echo/Bidi", prefix);
  EXPECT_EQ(grpc_status(r), "8");
}

TEST(GrpcServer, ACompressedMessageWithoutAnEncodingIsInternal) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Unary", frame("zz", 1));
  EXPECT_EQ(grpc_status(r), "13");
}

TEST(GrpcServer, ACompressedMessageInAnUnsupportedEncodingIsUnimplemented) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Unary", frame("zz", 1), {{"grpc-encoding", "snappy"}});
  EXPECT_EQ(grpc_status(r), "12");
  EXPECT_EQ(r.header("grpc-accept-encoding"), "identity,deflate,gzip");
  // Uncompressed messages under a declared encoding are fine (the flag says, per message).
  const H2Response plain = f.call("/test.Echo/Unary", frame("ok"), {{"grpc-encoding", "gzip"}});
  EXPECT_EQ(plain.body, frame("ok"));
  EXPECT_EQ(grpc_status(plain), "0");
}

TEST(GrpcServer, ARequestThatEndsInsideAMessageIsInternal) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Bidi", frame("whole") + frame("cut").substr(0, 6));
  EXPECT_EQ(r.body, frame("whole"));
  EXPECT_EQ(grpc_status(r), "13");
}

TEST(GrpcServer, AnUnknownMethodIsUnimplementedInTrailersOnlyForm) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Nope", frame("x"));
  ASSERT_TRUE(r.closed);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/grpc");
  EXPECT_EQ(r.header("grpc-status"), "12");
  EXPECT_EQ(grpc_message(r), "Method not found: /test.Echo/Nope");
  EXPECT_TRUE(r.trailers.empty());
  EXPECT_EQ(r.body, "");
}

TEST(GrpcServer, AnotherContentTypeOnAMethodIs415WithAStatus) {
  Fixture f;
  H2Client client;
  const auto id = client.request("POST", "/test.Echo/Unary", frame("x"), {{"content-type", "application/json"}});
  f.pump(client);
  const H2Response& r = client.response(id);
  ASSERT_TRUE(r.closed);
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(r.header("grpc-status"), "13");
  EXPECT_EQ(r.body, "");
}

TEST(GrpcServer, GrpcContentTypesWithSuffixOrParametersAreCalls) {
  Fixture f;
  H2Client client;
  for (const char* type : {"application/grpc+proto", "application/grpc;charset=utf-8", "Application/GRPC"}) {
    const auto id = client.request_streamed("POST", "/test.Echo/Unary", {{"content-type", type}, {"te", "trailers"}});
    client.send(id, frame("m"));
    client.finish(id);
    f.pump(client);
    EXPECT_EQ(client.response(id).body, frame("m")) << type;
    EXPECT_EQ(field(client.response(id).trailers, "grpc-status"), "0") << type;
  }
  EXPECT_FALSE(is_grpc_content_type("application/grpc-web"));
  EXPECT_FALSE(is_grpc_content_type("application/grpc+json"));
  EXPECT_FALSE(is_grpc_content_type("text/plain"));
}

TEST(GrpcServer, OtherRequestsAreLeftToThePipeline) {
  Fixture f;
  H2Client client;
  const auto plain = client.request("GET", "/plain");
  f.pump(client);
  EXPECT_EQ(client.response(plain).status, 200);
  EXPECT_EQ(client.response(plain).body, "plain");
}

TEST(GrpcServer, AHandlersStatusErrorEndsTheCallWithItsPercentEncodedMessage) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/Fail", "");
  EXPECT_EQ(r.body, frame("partial"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "3");
  EXPECT_EQ(field(r.trailers, "grpc-message"), "bad 100%25 %C3%A9%0A");
  EXPECT_EQ(percent_decode(*field(r.trailers, "grpc-message")), "bad 100% \xC3\xA9\n");
}

TEST(GrpcServer, ServerStreamingWritesEveryMessageThenOk) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/ServerStream", frame("3"));
  EXPECT_EQ(r.body, frame("reply 0") + frame("reply 1") + frame("reply 2"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
}

TEST(GrpcServer, ABidiStreamEchoesEachMessageAsItComes) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Bidi", grpc_headers());
  std::string expected;
  for (int i = 0; i < 5; ++i) {
    const std::string m = "ping " + std::to_string(i);
    client.send(id, frame(m));
    f.pump(client);
    expected += frame(m);
    EXPECT_EQ(client.response(id).body, expected);  // answered before the client half-closes
  }
  client.finish(id);
  f.pump(client);
  EXPECT_EQ(field(client.response(id).trailers, "grpc-status"), "0");
}

TEST(GrpcServer, TheDeadlineEndsTheCallWithDeadlineExceededAndTheHandlerSeesIt) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Wait", grpc_headers({{"grpc-timeout", "100m"}}));
  client.send(id, frame("hi"));
  f.pump(client);
  ASSERT_EQ(f.observed->calls, 1);
  EXPECT_EQ(f.observed->timeout, Duration(100ms));
  EXPECT_FALSE(client.response(id).closed);
  f.ch.advance_time(99ms);
  f.pump(client);
  EXPECT_EQ(client.response(id).status, 0);  // nothing yet
  f.ch.advance_time(2ms);
  f.pump(client);
  const H2Response& r = client.response(id);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("grpc-status"), "4");  // nothing written: Trailers-Only
  EXPECT_EQ(r.header("grpc-message"), "Deadline Exceeded");
  ASSERT_TRUE(f.observed->ended);
  EXPECT_EQ(f.observed->ended->code, StatusCode::deadline_exceeded);
  EXPECT_TRUE(f.observed->cancelled);
}

TEST(GrpcServer, TheDeadlineAfterMessagesEndsWithTrailers) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Wait",
                                          grpc_headers({{"grpc-timeout", "1S"}, {"x-write-first", "1"}}));
  f.pump(client);
  f.ch.advance_time(1s);
  f.pump(client);
  const H2Response& r = client.response(id);
  EXPECT_EQ(r.body, frame("first"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "4");
  ASSERT_TRUE(f.observed->ended);
  EXPECT_EQ(f.observed->ended->code, StatusCode::deadline_exceeded);
}

TEST(GrpcServer, AClientResetCancelsTheCall) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Wait", grpc_headers());
  client.send(id, frame("hi"));
  f.pump(client);
  ASSERT_EQ(f.observed->calls, 1);
  client.reset(id);
  f.pump(client);
  ASSERT_TRUE(f.observed->ended);
  EXPECT_EQ(f.observed->ended->code, StatusCode::cancelled);
  EXPECT_TRUE(f.observed->cancelled);
}

TEST(GrpcServer, AClientResetIsSeenByAHandlerThatIsNotReading) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Busy", grpc_headers());
  f.pump(client);
  ASSERT_EQ(f.observed->calls, 1);
  client.reset(id);
  f.pump(client);
  f.ch.advance_time(50ms);
  f.pump(client);
  EXPECT_TRUE(f.observed->cancelled);
}

// The connection asked to end (a drain, the loop's shutdown): a call open then, and one opened in the
// window before the final GOAWAY, each learn it (ServerCall::draining, on_draining) and may finish; a
// call not told would hold the connection until the drain's deadline.
TEST(GrpcServer, EveryCallLearnsThatItsConnectionDrains) {
  Fixture f;
  H2Client client;
  const auto before = client.request_streamed("POST", "/test.Echo/UntilDrain", grpc_headers());
  f.pump(client);
  ASSERT_EQ(client.response(before).body, frame("watching"));
  ASSERT_FALSE(client.response(before).closed);
  f.ch.request_shutdown();
  const auto after = client.request_streamed("POST", "/test.Echo/UntilDrain", grpc_headers());
  f.pump(client);
  for (const auto id : {before, after}) {
    const H2Response r = client.response(id);
    EXPECT_TRUE(r.closed) << id;
    EXPECT_EQ(r.body, frame("watching")) << id;
    EXPECT_EQ(grpc_status(r), "0") << id;
    EXPECT_EQ(grpc_message(r), "drained") << id;
  }
  EXPECT_EQ(client.goaway_error(), 0u);
}

TEST(GrpcServer, AHandlerThatThrowsEndsTheCallUnknown) {
  Fixture f;
  H2Client client;
  const auto id = client.request_streamed("POST", "/test.Echo/Throw", grpc_headers());
  client.finish(id);
  f.pump(client);
  const H2Response& r = client.response(id);
  EXPECT_EQ(r.header("grpc-status"), "2");
  EXPECT_EQ(r.header("grpc-message"), "broken handler");
}

TEST(GrpcServer, AUnaryCallbackAnswersAtOnce) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/CallbackNow", frame("now"));
  EXPECT_EQ(r.body, frame("now"));
  EXPECT_EQ(field(r.trailers, "grpc-status"), "0");
}

TEST(GrpcServer, AUnaryCallbackAnswersLaterFromAnotherThread) {
  Fixture f;
  H2Client client;
  const auto ok = client.request_streamed("POST", "/test.Echo/CallbackLater", grpc_headers());
  client.send(ok, frame("q"));
  client.finish(ok);
  const auto failed = client.request_streamed("POST", "/test.Echo/CallbackLater", grpc_headers());
  client.send(failed, frame("q"));
  client.finish(failed);
  f.pump(client);
  ASSERT_EQ(f.observed->responders.size(), 2u);
  EXPECT_EQ(client.response(ok).status, 0);  // nothing until it answers
  std::thread([&] {
    f.observed->responders[0].respond(ByteBuf::copy_of("later"));
    f.observed->responders[1].fail(Status(StatusCode::not_found, "no such thing"));
  }).join();
  f.pump(client);
  EXPECT_EQ(client.response(ok).body, frame("later"));
  EXPECT_EQ(field(client.response(ok).trailers, "grpc-status"), "0");
  EXPECT_EQ(client.response(failed).header("grpc-status"), "5");
  EXPECT_EQ(client.response(failed).header("grpc-message"), "no such thing");
}

TEST(GrpcServer, AUnaryCallbackThatDropsItsResponderEndsInternal) {
  Fixture f;
  const H2Response r = f.call("/test.Echo/CallbackDrops", frame("x"));
  EXPECT_EQ(grpc_status(r), "13");
}

TEST(GrpcTimeout, ParsesEveryUnitAndRefusesMalformedValues) {
  EXPECT_EQ(parse_timeout("1H"), Duration(std::chrono::hours(1)));
  EXPECT_EQ(parse_timeout("2M"), Duration(std::chrono::minutes(2)));
  EXPECT_EQ(parse_timeout("3S"), Duration(3s));
  EXPECT_EQ(parse_timeout("40m"), Duration(40ms));
  EXPECT_EQ(parse_timeout("50u"), Duration(50us));
  EXPECT_EQ(parse_timeout("99999999n"), Duration(99999999ns));
  EXPECT_TRUE(parse_timeout("99999999H"));  // clamped, not overflowed
  EXPECT_GT(*parse_timeout("99999999H"), Duration(0));
  EXPECT_FALSE(parse_timeout("123456789S"));  // nine digits
  EXPECT_FALSE(parse_timeout("S"));
  EXPECT_FALSE(parse_timeout("10x"));
  EXPECT_FALSE(parse_timeout("1 S"));
}

TEST(GrpcStatus, PercentEncodingRoundTrips) {
  EXPECT_EQ(percent_encode("plain text ~"), "plain text ~");
  EXPECT_EQ(percent_encode("50%\t\x7F"), "50%25%09%7F");
  EXPECT_EQ(percent_decode("a%41%zz%4"), "aA%zz%4");
  EXPECT_EQ(status_code_name(StatusCode::resource_exhausted), "RESOURCE_EXHAUSTED");
}

TEST(GrpcFraming, TheDeframerSlicesWholeMessagesAndGathersCutOnes) {
  MessageDeframer deframer(100);
  deframer.feed(ByteBuf::copy_of(frame("one") + frame("two") + frame("thr")));
  EXPECT_EQ(deframer.next()->to_string(), "one");
  EXPECT_EQ(deframer.next()->to_string(), "two");
  EXPECT_EQ(deframer.next()->to_string(), "thr");
  EXPECT_FALSE(deframer.next());
  EXPECT_FALSE(deframer.has_partial());
  const std::string f4 = frame("four");
  deframer.feed(ByteBuf::copy_of(f4.substr(0, 2)));
  EXPECT_FALSE(deframer.next());
  EXPECT_TRUE(deframer.has_partial());
  deframer.feed(ByteBuf::copy_of(f4.substr(2)));
  EXPECT_EQ(deframer.next()->to_string(), "four");
  deframer.feed(ByteBuf::copy_of(frame(patterned(101))));
  EXPECT_FALSE(deframer.next());
  ASSERT_TRUE(deframer.error());
  EXPECT_EQ(deframer.error()->code, StatusCode::resource_exhausted);
  EXPECT_EQ(frame_message(ByteBuf::copy_of("ab")).to_string(), frame("ab"));
}

// A responder answered, or dropped unanswered, after its call's loop terminated (an executor that
// still held it at shutdown): nothing throws at the answering thread nor out of the destructor (which
// was std::terminate), and the call's coroutine ends with EventLoopTerminatedError.
TEST(GrpcUnaryResponder, AnsweredOrDroppedAfterItsLoopTerminatedThrowsNothing) {
  for (const bool drop : {false, true}) {
    std::optional<EventLoopGroup> group(std::in_place, basic_driver_factory(), 1, "responder-test");
    EventLoop& loop = group->next();  // a responder must not outlive the group that owns its loop
    auto state = std::make_shared<UnaryResponder::State>(loop);
    Promise<void> waiting;
    auto call = [](std::shared_ptr<UnaryResponder::State> st, Promise<void> waiting) -> Task<int> {
      waiting.set_value();
      UnaryResponder::Outcome outcome = co_await st->wait();
      co_return static_cast<int>(outcome.status.code);
    };
    Future<int> ended = spawn(loop, call(state, waiting));
    ASSERT_TRUE(waiting.future().wait_for(std::chrono::seconds(60)));
    std::optional<UnaryResponder> responder;
    responder.emplace(state);
    state.reset();
    // The loop terminates with the call's coroutine parked (the group, which owns the loop, stays).
    ASSERT_TRUE(group->shutdown_gracefully(std::chrono::milliseconds(0)).wait_for(std::chrono::seconds(60)));
    if (drop) {
      EXPECT_NO_THROW(responder.reset());
    } else {
      EXPECT_NO_THROW(responder->respond(ByteBuf::copy_of("late")));
      responder.reset();
    }
    ASSERT_TRUE(ended.wait_for(std::chrono::seconds(60)));
    EXPECT_THROW(ended.get(), EventLoopTerminatedError) << (drop ? "dropped" : "answered");
  }
}

// feed() again before next() drained the last chunk (documented as supported): the messages come out
// whole and in order, a message cut across three feeds included, and the size limit still holds.
// Before, feed() copied the rest into a buffer with no storage (std::length_error), and with a
// partial message held the lengths underflowed past the size check.
TEST(GrpcFraming, TheDeframerTakesChunksFedBeforeTheLastWasDrained) {
  MessageDeframer deframer(100);
  const std::string f3 = frame("three");
  deframer.feed(ByteBuf::copy_of(frame("one") + frame("two") + f3.substr(0, 3)));
  EXPECT_EQ(deframer.next()->to_string(), "one");
  deframer.feed(ByteBuf::copy_of(f3.substr(3, 4)));  // "two" and part of "three" still unread
  deframer.feed(ByteBuf::copy_of(f3.substr(7) + frame("four")));
  EXPECT_EQ(deframer.next()->to_string(), "two");
  EXPECT_EQ(deframer.next()->to_string(), "three");
  EXPECT_EQ(deframer.next()->to_string(), "four");
  EXPECT_FALSE(deframer.next());
  EXPECT_FALSE(deframer.has_partial());

  // A message being gathered (pending) when two more chunks arrive unread.
  const std::string f5 = frame("fifth message");
  deframer.feed(ByteBuf::copy_of(f5.substr(0, 2)));
  EXPECT_FALSE(deframer.next());
  deframer.feed(ByteBuf::copy_of(f5.substr(2, 6)));
  deframer.feed(ByteBuf::copy_of(f5.substr(8) + frame(patterned(101))));
  EXPECT_EQ(deframer.next()->to_string(), "fifth message");
  EXPECT_FALSE(deframer.next());
  ASSERT_TRUE(deframer.error());
  EXPECT_EQ(deframer.error()->code, StatusCode::resource_exhausted);
}

}  // namespace
}  // namespace weft::grpc
