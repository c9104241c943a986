// The server codec's answer sequence, bounds and timeouts: answers leave in request order whoever
// makes them and whenever; errors, half-closes and 100 Continue come after the answers owed; a
// client far ahead of its answers stops being read; request, idle and send timeouts.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <any>
#include <string>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/codec/http1/server_codec.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace weft::http {
namespace {

// Keeps every request; the test answers them when and in the order it likes.
class Deferred final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  std::vector<HttpRequest> requests;
  Context* ctx = nullptr;
  // Answers these paths at once, while the codec hands the request over.
  std::vector<std::string> answer_at_once;
  void handler_added(Context& c) override { ctx = &c; }
  void channel_read(Context& c, HttpRequest&& request) override {
    for (const auto& p : answer_at_once) {
      if (request.path() == p) {
        c.write(HttpResponse(200).body_view(request.path()));  // a view: encoded before it dies
        return;
      }
    }
    requests.push_back(std::move(request));
  }
  void channel_read_complete(Context& c) override { c.flush(); }  // as the Router does
  void answer(std::size_t i, std::string body) {
    ctx->write(HttpResponse(200).body(body).for_request(requests.at(i)));
    ctx->flush();
  }
};

struct Fixture {
  explicit Fixture(Limits limits = {}) {
    ch.pipeline().add_last("http", std::make_shared<ServerCodec>(limits));
    ch.pipeline().add_last("app", app);
  }
  std::string output() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  // The bodies of the answers in `out`, in order (Content-Length framed).
  static std::vector<std::string> bodies(const std::string& out) {
    std::vector<std::string> found;
    for (std::size_t at = 0; (at = out.find("Content-Length: ", at)) != std::string::npos;) {
      const std::size_t n = std::stoul(out.substr(at + 16));
      const std::size_t body = out.find("\r\n\r\n", at) + 4;
      found.push_back(out.substr(body, n));
      at = body + n;
    }
    return found;
  }
  std::shared_ptr<Deferred> app = std::make_shared<Deferred>();
  EmbeddedChannel ch;
};

constexpr std::string_view kGet = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";

std::string gets(int n) {
  std::string all;
  for (int i = 0; i < n; ++i) all += kGet;
  return all;
}

TEST(ServerCodecOrderTest, AnswersMadeInAnyOrderLeaveInRequestOrder) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(gets(4)));
  ASSERT_EQ(f.app->requests.size(), 4u);
  EXPECT_EQ(f.app->requests[0].sequence(), 1u);
  EXPECT_EQ(f.app->requests[3].sequence(), 4u);
  f.app->answer(2, "third");
  f.app->answer(1, "second");
  EXPECT_EQ(f.output(), "");  // the first is still owed
  f.app->answer(0, "first");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"first", "second", "third"}));
  f.app->answer(3, "fourth");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"fourth"}));
  EXPECT_TRUE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, AnAnswerMadeWhileItsRequestIsHandedOverWaitsForTheOnesBefore) {
  Fixture f;
  f.app->answer_at_once = {"/now"};
  f.ch.write_inbound(ByteBuf::copy_of("GET /slow HTTP/1.1\r\nHost: h\r\n\r\nGET /now HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(f.output(), "");  // /now was answered at once, but /slow is owed first
  f.app->answer(0, "slow");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"slow", "/now"}));
}

TEST(ServerCodecOrderTest, AnAnswerWithoutItsRequestNamedFillsTheOldestOwed) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(gets(2)));
  f.app->ctx->write(HttpResponse(200).body("one"));
  f.app->ctx->write(HttpResponse(200).body("two"));
  f.app->ctx->flush();
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"one", "two"}));
}

TEST(ServerCodecOrderTest, AHeadAnswerIsEncodedForItsOwnRequestWhenItComesEarly) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("GET /a HTTP/1.1\r\nHost: h\r\n\r\nHEAD /b HTTP/1.1\r\nHost: h\r\n\r\n"));
  f.app->answer(1, "head-body");
  f.app->answer(0, "get-body");
  const std::string out = f.output();
  // The GET's answer has its body; the HEAD's has the length of its own body and no content.
  EXPECT_EQ(out.find("Content-Length: 8\r\n\r\nget-body"), out.find("Content-Length: 8"));
  EXPECT_THAT(out, HasSubstr("Content-Length: 9\r\n\r\n"));
  EXPECT_TRUE(out.ends_with("Content-Length: 9\r\n\r\n")) << out;
}

TEST(ServerCodecOrderTest, AnErrorIsAnsweredAfterTheAnswersOwed) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet) + "GET /x HTTP/9.9\r\n\r\n"));
  ASSERT_EQ(f.app->requests.size(), 1u);
  EXPECT_EQ(f.output(), "");  // no 505 before the 200 owed
  EXPECT_TRUE(f.ch.is_open());
  f.app->answer(0, "owed");
  const std::string out = f.output();
  EXPECT_THAT(out, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, HasSubstr("owed" "HTTP/1.1 505 "));
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, TheEndOfTheClientsInputWaitsForTheAnswersOwed) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(gets(2) + "GET /partial"));
  f.ch.pipeline().fire_user_event(ChannelInputShutdownEvent{});
  f.ch.run_pending();
  EXPECT_TRUE(f.ch.is_open());
  f.app->answer(1, "b");
  EXPECT_TRUE(f.ch.is_open());
  f.app->answer(0, "a");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"a", "b"}));
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, ContinueComesAfterTheAnswersOwedAndNeverToHttp10) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet) +
                                      "POST /up HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
  EXPECT_EQ(f.output(), "");  // the GET is owed first
  f.app->answer(0, "get");
  const std::string out = f.output();
  EXPECT_THAT(out, HasSubstr("get" "HTTP/1.1 100 Continue\r\n\r\n"));
  f.ch.write_inbound(ByteBuf::copy_of("ok"));
  ASSERT_EQ(f.app->requests.size(), 2u);
  EXPECT_EQ(f.app->requests[1].body_view(), "ok");

  Fixture old;
  old.ch.write_inbound(ByteBuf::copy_of("POST /up HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
  EXPECT_EQ(old.output(), "");
}

TEST(ServerCodecOrderTest, ReadingPausesWhileTooManyAnswersAreOwedAndResumesBelowHalf) {
  Limits limits;
  limits.max_pipelined = 8;
  Fixture f(limits);
  f.ch.write_inbound(ByteBuf::copy_of(gets(20)));
  // Decoding stops at the bound; the rest stays buffered, unread.
  ASSERT_EQ(f.app->requests.size(), 8u);
  EXPECT_EQ(f.ch.read_suspensions(), 1u);
  for (std::size_t i = 0; i < 3; ++i) f.app->answer(i, "x");
  f.ch.run_pending();
  EXPECT_EQ(f.app->requests.size(), 8u);  // 5 owed: above half the bound
  EXPECT_EQ(f.ch.read_suspensions(), 1u);
  f.app->answer(3, "x");
  f.ch.run_pending();
  // 4 owed: decoding resumed with what was buffered, up to the bound again.
  EXPECT_EQ(f.app->requests.size(), 12u);
  EXPECT_EQ(f.ch.read_suspensions(), 1u);
  for (std::size_t i = 4; i < 12; ++i) f.app->answer(i, "x");
  f.ch.run_pending();
  EXPECT_EQ(f.app->requests.size(), 20u);
  EXPECT_EQ(f.ch.read_suspensions(), 1u);  // 8 owed again
  for (std::size_t i = 12; i < 20; ++i) f.app->answer(i, "x");
  EXPECT_EQ(f.ch.read_suspensions(), 0u);
  EXPECT_EQ(Fixture::bodies(f.output()).size(), 20u);
}

// Takes the loop's shutdown request before the codec and ends the connection its own way (as a
// handler may, Channel::end_for_shutdown_itself): the loop terminates with the connection open.
class EndsItself final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& bytes) override { ctx.fire_read(std::move(bytes)); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<ChannelShutdownRequestedEvent>(&event) != nullptr) {
      ctx.channel().end_for_shutdown_itself();
      return;
    }
    ctx.fire_user_event(event);
  }
};

// Decoding what was buffered while reading was paused waits for the loop's next turn
// (resume_decoding_later). On a loop that has terminated there is none: the answers owed still
// leave, what is buffered is not served -- neither later nor nested in the answer that released
// it -- and the connection is its owner's to close.
TEST(ServerCodecOrderTest, OnATerminatedLoopTheAnswersOwedLeaveAndWhatIsBufferedIsNotServed) {
  Limits limits;
  limits.max_pipelined = 4;
  Fixture f(limits);
  f.ch.pipeline().add_first("ends-itself", std::make_shared<EndsItself>());
  f.ch.write_inbound(ByteBuf::copy_of(gets(10)));
  ASSERT_EQ(f.app->requests.size(), 4u);
  ASSERT_EQ(f.ch.read_suspensions(), 1u);
  ASSERT_TRUE(f.ch.loop().shutdown_gracefully(0ms, 0ms).is_done());
  ASSERT_TRUE(f.ch.is_open());
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NO_THROW(f.app->answer(i, std::to_string(i)));
  EXPECT_EQ(f.ch.read_suspensions(), 0u) << "reading was released";
  EXPECT_EQ(f.app->requests.size(), 4u) << "a buffered request was served";
  EXPECT_EQ(f.ch.run_pending(), 0u);
  EXPECT_EQ(f.app->requests.size(), 4u);
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_TRUE(f.ch.is_open());
  f.ch.close();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, DecodingPausesWhileTooManyAnswerBytesWaitToBeSent) {
  Limits limits;
  limits.max_unsent_bytes = 4096;
  Fixture f(limits);
  f.app->answer_at_once = {"/a"};
  f.ch.pipeline().fire_read(ByteBuf::copy_of(gets(1000)));
  // Each answer is about 60 bytes: decoding stopped near 4 KiB of unsent answers, not at 1000.
  EXPECT_EQ(f.ch.read_suspensions(), 1u);
  f.ch.pipeline().fire_read_complete();  // the handler flushes: the answers leave
  const std::size_t first = Fixture::bodies(f.output()).size();
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, 100u);
  // Once they are sent, the rest is decoded from what was buffered, batch by batch.
  std::size_t answered = first;
  for (int i = 0; i < 1000 && answered < 1000; ++i) {
    f.ch.run_pending();
    answered += Fixture::bodies(f.output()).size();
  }
  EXPECT_EQ(answered, 1000u);
  EXPECT_EQ(f.ch.read_suspensions(), 0u);
}

TEST(ServerCodecOrderTest, AClientThatKeepsPipeliningIsNotTimedOutBetweenRequests) {
  Limits limits;
  limits.request_timeout = 5s;
  Fixture f(limits);
  f.app->answer_at_once = {"/a"};
  // Half a request is always buffered, but each one completes well within the timeout.
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet) + "GET /a HT"));
  for (int i = 0; i < 10; ++i) {
    f.ch.advance_time(3s);
    f.ch.write_inbound(ByteBuf::copy_of("TP/1.1\r\nHost: h\r\n\r\n" + std::string(kGet) + "GET /a HT"));
  }
  const std::string out = f.output();
  EXPECT_EQ(Fixture::bodies(out).size(), 21u);
  EXPECT_THAT(out, ::testing::Not(HasSubstr("408")));
  EXPECT_TRUE(f.ch.is_open());
  f.ch.advance_time(6s);  // this one does not complete
  EXPECT_THAT(f.output(), StartsWith("HTTP/1.1 408 "));
}

TEST(ServerCodecOrderTest, AnIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  Limits limits;
  limits.idle_timeout = 10s;
  Fixture f(limits);
  f.app->answer_at_once = {"/a"};
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet)));
  f.ch.advance_time(8s);
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet)));
  f.ch.advance_time(8s);
  EXPECT_TRUE(f.ch.is_open());  // 8 s since the last request
  f.ch.advance_time(3s);
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, AConnectionWaitingForItsAnswerIsNotIdle) {
  Limits limits;
  limits.idle_timeout = 10s;
  Fixture f(limits);
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kGet)));
  f.ch.advance_time(30s);
  EXPECT_TRUE(f.ch.is_open());
  f.app->answer(0, "late");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"late"}));
  f.ch.advance_time(11s);
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecOrderTest, AnAnswerForARequestAlreadyAnsweredIsDropped) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(gets(2)));
  f.app->answer(0, "a");
  f.app->answer(0, "again");
  f.app->answer(1, "b");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"a", "b"}));
}

TEST(ServerCodecOrderTest, AResponseCrossingThreadsOwnsItsBody) {
  // Boxing a response (what a queue between threads does) copies what it borrows.
  std::string body = "temporary body";
  static const HeaderBlock kBlock = HeaderBlock().add("Server", "weft");
  HttpResponse response(200);
  response.headers(kBlock).header("X-Own", "1").body_view(body);
  Message boxed(std::move(response));
  body.assign(body.size(), '#');
  HttpResponse* r = boxed.get<HttpResponse>();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->body_bytes(), "temporary body");
  EXPECT_EQ(r->shared_header_block(), "");
  EXPECT_EQ(r->header_block(), "Server: weft\r\nX-Own: 1\r\n");
}

TEST(ServerCodecOrderTest, MessagesCountTheBytesTheyHold) {
  HttpRequest empty;
  ByteBuf big = ByteBuf::copy_of(std::string(100000, 'b'));
  EXPECT_EQ(MessageRef::of(big).size(), 100000u);
  std::string text(5000, 't');
  EXPECT_GE(MessageRef::of(text).size(), 5000u);
  HttpResponse response(200);
  response.body(std::string(70000, 'r'));
  EXPECT_GE(MessageRef::of(response).size(), 70000u);
  EXPECT_GE(MessageRef::of(empty).size(), sizeof(HttpRequest));
}

// A request that asks to upgrade (Connection: upgrade) and is answered later -- from an executor,
// a coroutine -- holds what follows it undecoded: after a 101 those bytes are the next protocol's
// (a WebSocket client's first frames), after any other answer they are HTTP again.
constexpr std::string_view kUpgrade =
    "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n";

TEST(ServerCodecOrderTest, BytesBehindAnUpgradeRequestWaitForItsAnswerAndGoToTheNextProtocolAfter101) {
  Fixture f;
  auto* codec = f.ch.pipeline().get_as<ServerCodec>("http");
  ASSERT_NE(codec, nullptr);
  const std::string frames = "\x81\x85not-HTTP-at-all";
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kUpgrade) + frames));
  ASSERT_EQ(f.app->requests.size(), 1u) << "nothing after the upgrade request is decoded";
  EXPECT_EQ(f.ch.read_suspensions(), 1u) << "reading waits for the answer";
  f.app->ctx->write(HttpResponse(101).header("Upgrade", "websocket").for_request(f.app->requests[0]));
  f.app->ctx->flush();
  EXPECT_THAT(f.output(), StartsWith("HTTP/1.1 101 "));
  EXPECT_EQ(codec->take_switched_input().to_string(), frames);
  EXPECT_TRUE(f.ch.is_active());
}

TEST(ServerCodecOrderTest, BytesBehindAnUpgradeRequestAreHttpAgainWhenItIsNotSwitched) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of(std::string(kUpgrade) + gets(2)));
  ASSERT_EQ(f.app->requests.size(), 1u);
  f.app->answer(0, "not switched");
  f.ch.run_pending();
  ASSERT_EQ(f.app->requests.size(), 3u) << "the pipelined requests are decoded once it is answered";
  EXPECT_EQ(f.ch.read_suspensions(), 0u);
  f.app->answer(1, "b");
  f.app->answer(2, "c");
  EXPECT_EQ(Fixture::bodies(f.output()), (std::vector<std::string>{"not switched", "b", "c"}));
}

}  // namespace
}  // namespace weft::http
