#include "weft/codec/http1/server_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::AllOf;
using ::testing::Not;
using ::testing::StartsWith;

namespace weft::http {
namespace {

// Collects requests (so tests can look at them) and answers each with its path as the body.
class Recorder final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  std::vector<std::string> paths;
  std::vector<std::string> bodies;
  bool answer = true;
  void channel_read(Context& ctx, HttpRequest&& request) override {
    paths.emplace_back(request.path());
    bodies.emplace_back(request.body_view());
    if (answer) ctx.write(HttpResponse(200).content_type("text/plain").body(ByteBuf::copy_of(request.path())));
  }
  void channel_read_complete(Context& ctx) override { ctx.flush(); }
};

struct Fixture {
  explicit Fixture(Limits limits = {}) {
    ch.pipeline().add_last("http", std::make_shared<ServerCodec>(limits));
    ch.pipeline().add_last("app", app);
  }
  // Everything written so far, as one string.
  std::string output() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  std::shared_ptr<Recorder> app = std::make_shared<Recorder>();
  EmbeddedChannel ch;
};

int count(const std::string& haystack, std::string_view needle) {
  int n = 0;
  for (auto p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

TEST(ServerCodecTest, AnswersARequestWithStatusDateAndLength) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("GET /hello HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_EQ(f.app->paths, std::vector<std::string>{"/hello"});
  std::string out = f.output();
  EXPECT_THAT(out, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, HasSubstr("\r\nDate: "));
  EXPECT_THAT(out, HasSubstr("\r\nContent-Type: text/plain\r\n"));
  EXPECT_THAT(out, HasSubstr("\r\nContent-Length: 6\r\n\r\n/hello"));
  EXPECT_TRUE(f.ch.is_open());
}

TEST(ServerCodecTest, PipelinedBatchGetsOrderedResponsesInOneWrite) {
  for (int n : {1, 16, 1024}) {
    Limits limits;
    limits.max_pipelined = 4096;
    Fixture f(limits);
    std::string batch;
    for (int i = 0; i < n; ++i) batch += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    f.ch.write_inbound(ByteBuf::copy_of(batch));
    ASSERT_EQ(f.app->paths.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(f.ch.outbound_count(), 1u) << "one buffer per read batch";
    std::string out = f.output();
    EXPECT_EQ(count(out, "HTTP/1.1 200 OK"), n);
    std::size_t pos = 0;
    for (int i = 0; i < n; ++i) {  // in request order
      std::string body = "\r\n\r\n/" + std::to_string(i);
      auto at = out.find(body, pos);
      ASSERT_NE(at, std::string::npos) << i;
      pos = at + body.size();
    }
  }
}

// Responses written later than their requests were read, in two rounds, so that the queue of
// requests awaiting an answer wraps around and then outgrows its inline space: every response
// still carries what its own request asked for (HTTP/1.0 keep-alive here, nothing for 1.1).
TEST(ServerCodecTest, LateResponsesKeepTheirRequestsKeepAliveAcrossADeepQueue) {
  Fixture f;
  f.app->answer = false;
  auto request = [](int i) {
    return i % 3 == 0 ? "GET /" + std::to_string(i) + " HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                      : "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n";
  };
  Context& app = *f.ch.pipeline().context("app");
  auto answer = [&](int i) { app.write(HttpResponse(200).body(ByteBuf::copy_of(std::to_string(i)))); };
  std::string batch;
  for (int i = 0; i < 10; ++i) batch += request(i);
  f.ch.write_inbound(ByteBuf::copy_of(batch));
  for (int i = 0; i < 5; ++i) answer(i);
  batch.clear();
  for (int i = 10; i < 40; ++i) batch += request(i);
  f.ch.write_inbound(ByteBuf::copy_of(batch));
  ASSERT_EQ(f.app->paths.size(), 40u);
  for (int i = 5; i < 40; ++i) answer(i);
  app.flush();
  std::string out = f.output();
  std::size_t pos = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string body = "\r\n\r\n" + std::to_string(i);
    const auto end = out.find(body, pos);
    ASSERT_NE(end, std::string::npos) << i;
    const std::string head = out.substr(pos, end - pos);
    EXPECT_EQ(head.find("Connection: keep-alive") != std::string::npos, i % 3 == 0) << i << ": " << head;
    EXPECT_EQ(head.find("Connection: close"), std::string::npos) << i;
    pos = end + body.size();
  }
  EXPECT_TRUE(f.ch.is_open());
}

// The codec lends a request its head's bytes for the length of channel_read. A handler that keeps
// requests moves them, and the moved requests own their bytes: they stay intact after the codec has
// decoded more, compacted its input and released it on close.
class Keeper final : public InboundHandler<HttpRequest, HttpRequest> {
 public:
  std::vector<HttpRequest> kept;
  bool close_first = false;
  std::vector<std::string> seen_after_close;
  void channel_read(Context& ctx, HttpRequest&& request) override {
    if (close_first) {
      ctx.close();  // releases what the codec holds, unless it is lending it right now
      seen_after_close.emplace_back(std::string(request.method()) + " " + std::string(request.path()) + " " +
                                    std::string(request.header("X-Tag").value_or("")));
      return;
    }
    kept.push_back(std::move(request));
  }
};

TEST(ServerCodecTest, KeptRequestsOwnTheirHeadBytes) {
  EmbeddedChannel ch;
  auto keeper = std::make_shared<Keeper>();
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("keeper", keeper);
  std::string expected;
  for (int round = 0; round < 3; ++round) {
    std::string batch;
    for (int i = 0; i < 5; ++i) {
      const std::string n = std::to_string(round * 5 + i);
      batch += "GET /r" + n + " HTTP/1.1\r\nHost: h\r\nX-Tag: t" + n + "\r\n\r\n";
    }
    batch += "GET /partial";  // left in the codec's input, which it compacts before the next read
    ch.write_inbound(ByteBuf::copy_of(batch));
    ch.write_inbound(ByteBuf::copy_of(" HTTP/1.1\r\nHost: h\r\nX-Tag: p\r\n\r\n"));
  }
  ch.close();
  ch.run_pending();
  ASSERT_EQ(keeper->kept.size(), 18u);
  for (std::size_t k = 0; k < keeper->kept.size(); ++k) {
    const HttpRequest& r = keeper->kept[k];
    const bool partial = k % 6 == 5;
    const std::string n = std::to_string(k / 6 * 5 + k % 6);
    EXPECT_EQ(r.method(), "GET");
    EXPECT_EQ(r.path(), partial ? "/partial" : "/r" + n) << k;
    EXPECT_EQ(r.header("X-Tag").value_or(""), partial ? "p" : "t" + n) << k;
  }
}

TEST(ServerCodecTest, AHandlerThatClosesStillReadsItsRequest) {
  EmbeddedChannel ch;
  auto keeper = std::make_shared<Keeper>();
  keeper->close_first = true;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("keeper", keeper);
  ch.write_inbound(ByteBuf::copy_of("GET /bye HTTP/1.1\r\nHost: h\r\nX-Tag: last\r\n\r\n"));
  ch.run_pending();
  EXPECT_FALSE(ch.is_open());
  EXPECT_EQ(keeper->seen_after_close, std::vector<std::string>{"GET /bye last"});
}

TEST(ServerCodecTest, RequestsSplitAtEveryByteBoundary) {
  const std::string req = "POST /upload?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
  for (std::size_t cut = 1; cut < req.size(); ++cut) {
    Fixture f;
    f.ch.write_inbound(ByteBuf::copy_of(req.substr(0, cut)));
    EXPECT_TRUE(f.app->paths.empty()) << cut;
    f.ch.write_inbound(ByteBuf::copy_of(req.substr(cut)));
    ASSERT_EQ(f.app->paths.size(), 1u) << cut;
    EXPECT_EQ(f.app->bodies[0], "hello");
  }
}

TEST(ServerCodecTest, ChunkedBodyIsAggregated) {
  const std::string req =
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n"
      "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
  for (std::size_t cut = 1; cut < req.size(); cut += 3) {
    Fixture f;
    f.ch.write_inbound(ByteBuf::copy_of(req.substr(0, cut)));
    f.ch.write_inbound(ByteBuf::copy_of(req.substr(cut)));
    ASSERT_EQ(f.app->paths.size(), 2u) << cut;
    EXPECT_EQ(f.app->bodies[0], "hello world");
    EXPECT_EQ(f.app->paths[1], "/next");
  }
}

TEST(ServerCodecTest, ConnectionCloseClosesAfterTheResponse) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(f.app->paths, std::vector<std::string>{"/a"});  // nothing after the last request
  std::string out = f.output();
  EXPECT_THAT(out, HasSubstr("Connection: close\r\n"));
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecTest, Http10KeepAliveIsAcknowledged) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_THAT(f.output(), HasSubstr("Connection: keep-alive\r\n"));
  EXPECT_TRUE(f.ch.is_open());
  Fixture g;
  g.ch.write_inbound(ByteBuf::copy_of("GET /a HTTP/1.0\r\n\r\n"));
  EXPECT_THAT(g.output(), HasSubstr("Connection: close\r\n"));
  g.ch.run_pending();
  EXPECT_FALSE(g.ch.is_open());
}

TEST(ServerCodecTest, ExpectContinueGetsAnInterimResponse) {
  Fixture f;
  f.ch.write_inbound(ByteBuf::copy_of("POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"));
  EXPECT_EQ(f.output(), "HTTP/1.1 100 Continue\r\n\r\n");
  f.ch.write_inbound(ByteBuf::copy_of("abc"));
  ASSERT_EQ(f.app->bodies, std::vector<std::string>{"abc"});
  EXPECT_THAT(f.output(), StartsWith("HTTP/1.1 200 OK\r\n"));
}

struct StatusCase {
  const char* name;
  std::string input;
  int status;
};

class ServerCodecErrorTest : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ServerCodecErrorTest, AnswersTheStatusAndCloses) {
  Limits limits;
  limits.max_body = 16;
  Fixture f(limits);
  f.ch.write_inbound(ByteBuf::copy_of(GetParam().input));
  std::string expected_line = "HTTP/1.1 " + std::to_string(GetParam().status) + " ";
  std::string out = f.output();
  EXPECT_THAT(out, StartsWith(expected_line)) << out;
  EXPECT_THAT(out, HasSubstr("Content-Length: 0\r\nConnection: close\r\n\r\n"));
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
  EXPECT_TRUE(f.app->paths.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ServerCodecErrorTest,
    ::testing::Values(StatusCase{"malformed", "NOT HTTP AT ALL\r\n\r\n", 400},
                      StatusCase{"uri_too_long", "GET /" + std::string(5000, 'x') + " HTTP/1.1\r\n", 414},
                      StatusCase{"headers_too_large", "GET / HTTP/1.1\r\nX: " + std::string(9000, 'x'), 431},
                      StatusCase{"body_too_large", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n", 413},
                      StatusCase{"chunked_too_large",
                                 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n", 413},
                      StatusCase{"bad_chunk_size", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                                 400},
                      StatusCase{"chunk_without_crlf",
                                 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabcd", 400},
                      StatusCase{"unsupported_coding",
                                 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: br\r\n\r\n", 501},
                      StatusCase{"version", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", 505},
                      StatusCase{"smuggling_cl_te",
                                 "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
                                 400},
                      StatusCase{"smuggling_two_cl",
                                 "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400}),
    [](const ::testing::TestParamInfo<StatusCase>& info) { return info.param.name; });

TEST(ServerCodecTest, RequestThatDoesNotCompleteInTimeGets408) {
  Limits limits;
  limits.request_timeout = 5s;
  Fixture f(limits);
  f.ch.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHo"));
  f.ch.advance_time(4s);
  EXPECT_TRUE(f.ch.is_open());
  f.ch.advance_time(2s);
  EXPECT_THAT(f.output(), StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
  f.ch.run_pending();
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ServerCodecTest, IdleKeepAliveConnectionIsNotTimedOut) {
  Limits limits;
  limits.request_timeout = 1s;
  Fixture f(limits);
  f.ch.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  f.output();
  f.ch.advance_time(10s);
  EXPECT_TRUE(f.ch.is_open());
  EXPECT_EQ(f.output(), "");
}

TEST(ServerCodecTest, ResponseHeadersRefuseCrLf) {
  HttpResponse r(200);
  EXPECT_THROW(r.header("X-Evil", "a\r\nSet-Cookie: x=y"), std::invalid_argument);
  EXPECT_THROW(r.header("X-Evil", "a\nb"), std::invalid_argument);
  EXPECT_THROW(r.header("Bad Name", "v"), std::invalid_argument);
  EXPECT_NO_THROW(r.header("X-Ok", "value with spaces\tand tab"));
}

TEST(ServerCodecTest, AResponseToHeadHasTheLengthButNoBodyWhetherCopiedOrReferenced) {
  for (std::size_t size : {std::size_t{5}, std::size_t{100000}}) {
    Fixture f;
    f.app->answer = false;
    f.ch.write_inbound(ByteBuf::copy_of("HEAD / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"));
    f.ch.write_outbound(HttpResponse(200).body(ByteBuf::copy_of(std::string(size, 'z'))));
    f.ch.write_outbound(HttpResponse(200).body_view("after"));
    std::string out;
    while (auto b = f.ch.read_outbound<ByteBuf>()) out += b->to_string();
    const std::string length = "Content-Length: " + std::to_string(size) + "\r\n";
    const auto first_end = out.find("\r\n\r\n");
    ASSERT_NE(first_end, std::string::npos) << out;
    EXPECT_THAT(out.substr(0, first_end + 2), HasSubstr(length)) << size;
    EXPECT_EQ(count(out, "z"), 0) << size;
    // The next response follows the first head directly.
    EXPECT_EQ(out.compare(first_end + 4, 15, "HTTP/1.1 200 OK"), 0) << out;
    EXPECT_THAT(out, testing::EndsWith("\r\n\r\nafter"));
  }
}

TEST(ServerCodecTest, ManyHeadersSpillOutOfTheInlineSpace) {
  HttpResponse r(200);
  for (int i = 0; i < 40; ++i) r.header("X-Header-" + std::to_string(i), std::string(20, 'v'));
  EXPECT_EQ(count(std::string(r.header_block()), "X-Header-"), 40);
  EXPECT_THAT(std::string(r.header_block()), StartsWith("X-Header-0: vvvv"));
}

TEST(ServerCodecTest, LargeOwnedBodyIsWrittenWithoutCopy) {
  Fixture f;
  f.app->answer = false;
  f.ch.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  ByteBuf big = ByteBuf::copy_of(std::string(100000, 'z'));
  const std::uint8_t* storage = big.read_ptr();
  f.ch.write_outbound(HttpResponse(200).body(std::move(big)));
  auto head = f.ch.read_outbound<ByteBuf>();
  auto body = f.ch.read_outbound<ByteBuf>();
  ASSERT_TRUE(head && body);
  EXPECT_THAT(head->to_string(), HasSubstr("Content-Length: 100000\r\n\r\n"));
  EXPECT_EQ(body->read_ptr(), storage);
}

TEST(ServerCodecTest, RouterAnswers404And405) {
  EmbeddedChannel ch;
  auto router = std::make_shared<Router>();
  router->get("/x", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("x")); });
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("router", router);
  ch.write_inbound(ByteBuf::copy_of(
      "GET /x HTTP/1.1\r\nHost: h\r\n\r\nGET /nope HTTP/1.1\r\nHost: h\r\n\r\nPOST /x HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::string out;
  while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
  auto first = out.find("HTTP/1.1 200 OK");
  auto second = out.find("HTTP/1.1 404 Not Found");
  auto third = out.find("HTTP/1.1 405 Method Not Allowed");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  ASSERT_NE(third, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_THAT(out, HasSubstr("Allow: GET, HEAD\r\n"));
}

TEST(ServerCodecTest, RouterListsEveryMethodOfAPathIn405AndServesHeadFromGet) {
  EmbeddedChannel ch;
  auto router = std::make_shared<Router>();
  router->get("/y", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("get")); });
  router->post("/y", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("post")); });
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("router", router);
  auto ask = [&](const std::string& request) {
    ch.write_inbound(ByteBuf::copy_of(request));
    std::string out;
    while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
    return out;
  };
  EXPECT_THAT(ask("POST /y HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"), HasSubstr("\r\n\r\npost"));
  const std::string head = ask("HEAD /y HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_THAT(head, AllOf(StartsWith("HTTP/1.1 200 OK"), HasSubstr("Content-Length: 3\r\n")));
  EXPECT_THAT(head, Not(HasSubstr("get")));
  EXPECT_THAT(ask("DELETE /y HTTP/1.1\r\nHost: h\r\n\r\n"),
              AllOf(StartsWith("HTTP/1.1 405 Method Not Allowed"), HasSubstr("Allow: GET, HEAD, POST\r\n")));
}

// Paths of every length class the router compares (bytes, 4-byte words, 8-byte words, and more
// than one word), each also asked with one byte changed at its start, middle and end.
TEST(ServerCodecTest, RouterMatchesWholePathsOfEveryLength) {
  const std::vector<std::string> paths = {"/", "/ab", "/abc", "/abcdefg", "/abcdefgh", "/abcdefghijklmno",
                                          "/abcdefghijklmnopqrstu"};
  EmbeddedChannel ch;
  auto router = std::make_shared<Router>();
  for (const std::string& p : paths) {
    router->get(p, [p](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body(ByteBuf::copy_of("hit " + p))); });
  }
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.pipeline().add_last("router", router);
  auto ask = [&](const std::string& path) {
    ch.write_inbound(ByteBuf::copy_of("GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n"));
    std::string out;
    while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
    return out;
  };
  for (const std::string& p : paths) {
    EXPECT_THAT(ask(p), AllOf(StartsWith("HTTP/1.1 200 OK"), HasSubstr("\r\n\r\nhit " + p))) << p;
    for (std::size_t at : {std::size_t{1}, p.size() / 2, p.size() - 1}) {
      if (at == 0 || at >= p.size()) continue;
      std::string other = p;
      other[at] = 'Z';
      EXPECT_THAT(ask(other), StartsWith("HTTP/1.1 404")) << other;
    }
  }
}

}  // namespace
}  // namespace weft::http

namespace weft::http {
namespace {

TEST(ServerCodecTest, SharedHeaderBlocksAreValidatedOnceAndWrittenFirst) {
  EXPECT_THROW(HeaderBlock().add("X", "a\r\nb"), std::invalid_argument);
  static const HeaderBlock kBlock = HeaderBlock().add("Server", "weft").add("Content-Type", "text/plain");
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.write_inbound(ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  ch.write_outbound(HttpResponse(200).headers(kBlock).header("X-Own", "1").body_view("hi"));
  std::string out;
  while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
  EXPECT_THAT(out, HasSubstr("Server: weft\r\nContent-Type: text/plain\r\nX-Own: 1\r\nContent-Length: 2\r\n\r\nhi"));
}

}  // namespace
}  // namespace weft::http

namespace weft::http {
namespace {

// Writes `response` as the answer to one request on a fresh codec and returns the bytes.
std::string encoded(HttpResponse response, std::string_view request = "GET / HTTP/1.1\r\nHost: h\r\n\r\n") {
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  ch.write_inbound(ByteBuf::copy_of(request));
  ch.write_outbound(std::move(response));
  std::string out;
  while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
  return out;
}

std::string without_date(std::string head) {
  const auto at = head.find("Date: ");
  if (at != std::string::npos) head.erase(at, head.find("\r\n", at) + 2 - at);
  return head;
}

// The encoder reuses the last head it built when the next response is alike; each case below
// changes one thing the head depends on and must see it in the bytes.
TEST(ServerCodecHeadReuseTest, AlikeResponsesGetTheSameHead) {
  static const HeaderBlock kBlock = HeaderBlock().add("Server", "weft");
  const std::string first = encoded(HttpResponse(200).headers(kBlock).body_view("hi"));
  EXPECT_EQ(without_date(first), "HTTP/1.1 200 OK\r\nServer: weft\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(without_date(encoded(HttpResponse(200).headers(kBlock).body_view("ho"))),
            "HTTP/1.1 200 OK\r\nServer: weft\r\nContent-Length: 2\r\n\r\nho");
}

TEST(ServerCodecHeadReuseTest, ABlockChangedBetweenResponsesIsWrittenAsItIsNow) {
  HeaderBlock block;
  block.add("Server", "weft");
  EXPECT_THAT(encoded(HttpResponse(200).headers(block).body_view("hi")), HasSubstr("Server: weft\r\nContent-Length: 2"));
  block.add("X-More", "1");
  EXPECT_THAT(encoded(HttpResponse(200).headers(block).body_view("hi")),
              HasSubstr("Server: weft\r\nX-More: 1\r\nContent-Length: 2"));
}

TEST(ServerCodecHeadReuseTest, AMovedFromBlockIsEmptyAndWrittenSo) {
  HeaderBlock block;
  block.add("Server", "weft");
  HeaderBlock moved = std::move(block);
  EXPECT_THAT(encoded(HttpResponse(200).headers(moved).body_view("hi")), HasSubstr("Server: weft\r\n"));
  EXPECT_TRUE(block.bytes().empty());  // NOLINT(bugprone-use-after-move): the documented state
  EXPECT_EQ(block.id(), 0u);           // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(without_date(encoded(HttpResponse(200).headers(block).body_view("hi"))),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
}

TEST(ServerCodecHeadReuseTest, StatusLengthConnectionAndOwnHeadersEachChangeTheHead) {
  static const HeaderBlock kBlock = HeaderBlock().add("Server", "weft");
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).body_view("hi")), HasSubstr("Content-Length: 2\r\n\r\nhi"));
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).body_view("hello")), HasSubstr("Content-Length: 5\r\n\r\nhello"));
  EXPECT_THAT(encoded(HttpResponse(404).headers(kBlock).body_view("hello")), StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).close_connection().body_view("hello")),
              HasSubstr("Content-Length: 5\r\nConnection: close\r\n\r\nhello"));
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).body_view("hello"), "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
              HasSubstr("Content-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"));
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).body_view("hello")),
              AllOf(HasSubstr("Content-Length: 5\r\n\r\nhello"), Not(HasSubstr("Connection:"))));
  EXPECT_THAT(encoded(HttpResponse(200).headers(kBlock).header("X-Own", "1").body_view("hello")),
              HasSubstr("Server: weft\r\nX-Own: 1\r\nContent-Length: 5\r\n\r\nhello"));
  EXPECT_THAT(encoded(HttpResponse(204).headers(kBlock)), Not(HasSubstr("Content-Length")));
}

}  // namespace
}  // namespace weft::http
