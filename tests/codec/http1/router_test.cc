// Router patterns, fallback and match(). The exact-path cases (404, 405, HEAD, word compares) are
// in http1_server_codec_test.cc.
#include "weft/codec/http1/router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <coroutine>
#include <string>

#include "weft/channel/connection.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/server_codec.h"

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace weft::http {
namespace {

// Answers with "<tag> name=value name=value ..." so tests can see which route ran with what.
Router::ParamRouteFn answer(std::string tag) {
  return [tag](Context& ctx, HttpRequest&, const RouteParams& params) {
    std::string body = tag;
    for (const RouteParams::Param& p : params) body += " " + std::string(p.name) + "=" + std::string(p.value);
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(body)));
  };
}

struct Server {
  explicit Server(std::shared_ptr<Router> r) : router(std::move(r)) {
    ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
    ch.pipeline().add_last("router", router);
  }
  // The response to one request, as bytes.
  std::string ask(std::string_view method, std::string_view target) {
    ch.write_inbound(ByteBuf::copy_of(std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: h\r\n\r\n"));
    std::string out;
    while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
    return out;
  }
  std::shared_ptr<Router> router;
  EmbeddedChannel ch;
};

std::string body_of(const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); }

TEST(RouterPatternTest, ParametersCaptureWholeSegments) {
  auto router = std::make_shared<Router>();
  router->get("/users/{id}", answer("user"));
  router->get("/users/{id}/posts/{post}", answer("post"));
  Server s(router);
  EXPECT_EQ(body_of(s.ask("GET", "/users/42")), "user id=42");
  EXPECT_EQ(body_of(s.ask("GET", "/users/42/posts/7?x=1")), "post id=42 post=7");
  EXPECT_THAT(s.ask("GET", "/users"), StartsWith("HTTP/1.1 404"));
}

TEST(RouterPatternTest, ExactPathsWinOverPatternsWhateverTheOrderAdded) {
  auto router = std::make_shared<Router>();
  router->get("/users/{id}", answer("pattern"));
  router->get("/users/me", answer("exact"));
  Server s(router);
  EXPECT_EQ(body_of(s.ask("GET", "/users/me")), "exact");
  EXPECT_EQ(body_of(s.ask("GET", "/users/you")), "pattern id=you");
}

TEST(RouterPatternTest, TheFirstPatternAddedThatMatchesWins) {
  auto router = std::make_shared<Router>();
  router->get("/a/{first}", answer("one"));
  router->get("/a/{second}", answer("two"));
  router->get("/{x}/b", answer("three"));
  Server s(router);
  EXPECT_EQ(body_of(s.ask("GET", "/a/b")), "one first=b");
  EXPECT_EQ(body_of(s.ask("GET", "/z/b")), "three x=z");
}

TEST(RouterPatternTest, MatchingIsStrictAboutSlashesAndEmptySegments) {
  Router router;
  router.get("/users/{id}", answer("user"));
  router.get("/files/{name}/", answer("dir"));  // a trailing slash in the pattern is a segment too
  for (std::string_view path : {"/users/1/", "/users/", "/users//", "//users/1", "/users//1", "/users/1/x", "/users",
                                "users/1", "", "*", "http://h/users/1", "/Users/1"}) {
    EXPECT_EQ(router.match("GET", path).outcome(), RouteMatch::Outcome::not_found) << path;
  }
  EXPECT_TRUE(router.match("GET", "/files/a/"));
  EXPECT_FALSE(router.match("GET", "/files/a"));
  EXPECT_FALSE(router.match("GET", "/files//"));
}

TEST(RouterPatternTest, ValuesAreTheBytesAsSentAndEscapesDoNotSplitSegments) {
  Router router;
  router.get("/files/{name}", answer("file"));
  RouteMatch m = router.match("GET", "/files/a%2Fb%20c+d");
  ASSERT_TRUE(m);
  EXPECT_EQ(m.params().get("name"), "a%2Fb%20c+d");
  EXPECT_EQ(m.params().get("other"), std::nullopt);
  EXPECT_FALSE(router.match("GET", "/files/a/b"));
}

TEST(RouterPatternTest, VeryLongPathsAreMatchedOrRefusedWithoutTrouble) {
  Router router;
  router.get("/p/{value}", answer("long"));
  router.get("/q/x", answer("exact"));
  const std::string segment(100'000, 'v');
  RouteMatch m = router.match("GET", "/p/" + segment);
  ASSERT_TRUE(m);
  EXPECT_EQ(m.params().get("value")->size(), segment.size());
  std::string deep;
  for (int i = 0; i < 20'000; ++i) deep += "/p";
  EXPECT_EQ(router.match("GET", deep).outcome(), RouteMatch::Outcome::not_found);
  EXPECT_EQ(router.match("GET", "/q/" + segment).outcome(), RouteMatch::Outcome::not_found);
}

TEST(RouterPatternTest, OtherMethodsGet405ListingExactAndPatternRoutes) {
  auto router = std::make_shared<Router>();
  router->get("/users/{id}", answer("get"));
  router->route("DELETE", "/users/{id}", answer("delete"));
  router->post("/users/me", answer("post-me"));
  Server s(router);
  EXPECT_THAT(s.ask("PUT", "/users/1"),
              AllOf(StartsWith("HTTP/1.1 405"), HasSubstr("Allow: GET, HEAD, DELETE\r\n")));
  EXPECT_THAT(s.ask("PUT", "/users/me"),
              AllOf(StartsWith("HTTP/1.1 405"), HasSubstr("Allow: POST, GET, HEAD, DELETE\r\n")));
  EXPECT_EQ(body_of(s.ask("DELETE", "/users/1")), "delete id=1");
  // HEAD goes to the GET pattern: the length of its body, no body.
  EXPECT_THAT(s.ask("HEAD", "/users/1"), AllOf(StartsWith("HTTP/1.1 200"), HasSubstr("Content-Length: 8\r\n")));
  EXPECT_EQ(body_of(s.ask("HEAD", "/users/1")), "");
}

TEST(RouterPatternTest, BothFunctionShapesWorkOnBothKindsOfPath) {
  auto router = std::make_shared<Router>();
  router->get("/exact", answer("exact-with-params"));
  router->get("/pat/{x}", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("pattern-without")); });
  Server s(router);
  EXPECT_EQ(body_of(s.ask("GET", "/exact")), "exact-with-params");
  EXPECT_EQ(body_of(s.ask("GET", "/pat/1")), "pattern-without");
}

TEST(RouterPatternTest, MalformedPatternsThrowAtSetup) {
  Router router;
  for (const char* bad : {"users/{id}", "/a{b}", "/{a}b", "/{}", "/{a}/{a}", "/{a-b}", "/{a", "/a}", "/{{a}}",
                          "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"}) {
    EXPECT_THROW(router.get(bad, answer("x")), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(router.get("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", answer("eight")));
  RouteMatch m = router.match("GET", "/1/2/3/4/5/6/7/8");
  ASSERT_TRUE(m);
  EXPECT_EQ(m.params().size(), RouteParams::kMax);
  EXPECT_EQ(m.params()[7].name, "h");
  EXPECT_EQ(m.params()[7].value, "8");
}

TEST(RouterFallbackTest, ReplacesThe404ButNotThe405) {
  auto router = std::make_shared<Router>();
  router->get("/x", answer("x"));
  router->fallback([](Context& ctx, HttpRequest& request) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of("fallback " + std::string(request.path()))));
  });
  Server s(router);
  EXPECT_EQ(body_of(s.ask("GET", "/nowhere")), "fallback /nowhere");
  EXPECT_THAT(s.ask("POST", "/x"), StartsWith("HTTP/1.1 405"));
  EXPECT_EQ(body_of(s.ask("GET", "/x")), "x");
}

// A streamed fallback (a reverse proxy's one route): the codec is told to hand over the body of
// every request no route's path matches, and only of those.
TEST(RouterFallbackTest, AStreamedFallbackStreamsTheBodiesOfUnroutedRequestsOnly) {
  auto router = std::make_shared<Router>();
  router->post("/whole", [](Request&) { return HttpResponse(200); });
  EXPECT_FALSE(router->has_streamed_routes());
  EXPECT_FALSE(router->streams_body("POST", "/nowhere"));
  router->fallback([](Request&, BodyReader&) -> Task<HttpResponse> { co_return HttpResponse(200); });
  EXPECT_TRUE(router->has_streamed_routes());
  EXPECT_TRUE(router->streams_body("POST", "/nowhere"));
  EXPECT_TRUE(router->streams_body("PUT", "/a/b?c"));
  EXPECT_FALSE(router->streams_body("POST", "/whole"));  // its route gathers it
  EXPECT_FALSE(router->streams_body("PUT", "/whole"));   // 405: no body to hand over
}

TEST(RouterMatchTest, ReportsOutcomePatternAndParams) {
  Router router;
  router.get("/plain", answer("plain"));
  router.post("/items/{id}", answer("item"));
  RouteMatch exact = router.match("HEAD", "/plain");
  EXPECT_EQ(exact.outcome(), RouteMatch::Outcome::route);
  EXPECT_EQ(exact.pattern(), "/plain");
  EXPECT_TRUE(exact.params().empty());
  RouteMatch item = router.match("POST", "/items/9");
  EXPECT_EQ(item.pattern(), "/items/{id}");
  EXPECT_EQ(item.params().get("id"), "9");
  RouteMatch wrong_method = router.match("GET", "/items/9");
  EXPECT_EQ(wrong_method.outcome(), RouteMatch::Outcome::method_not_allowed);
  EXPECT_EQ(wrong_method.pattern(), "");
  EXPECT_EQ(router.match("GET", "/other").outcome(), RouteMatch::Outcome::not_found);
}

// Suspends the coroutine until the test resumes it (a stand-in for a downstream call).
struct Gate {
  std::coroutine_handle<> waiting;
  auto wait() {
    struct Awaiter {
      Gate& gate;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) noexcept { gate.waiting = h; }
      void await_resume() const noexcept {}
    };
    return Awaiter{*this};
  }
};

// A coroutine server uses the router's table: it answers one pattern itself (with a co_await in the
// middle) and lets run() do the rest, routes, 405 and fallback alike; responses stay in order.
TEST(RouterMatchTest, ACoroutineDispatchesThroughTheSameTable) {
  auto router = std::make_shared<Router>();
  router->get("/hello/{name}", answer("hello"));
  router->get("/slow/{ms}", answer("never: the coroutine answers this one"));
  router->fallback([](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(404).body_view("custom")); });
  auto channel = std::make_shared<EmbeddedChannel>();  // a Connection keeps its channel alive
  EmbeddedChannel& ch = *channel;
  ch.pipeline().add_last("http", std::make_shared<ServerCodec>());
  Gate gate;
  serve<HttpRequest>(ch, [router, &gate](Connection<HttpRequest>& c) -> Task<> {
    Context& ctx = *c.channel().pipeline().context("connection");
    for (;;) {
      HttpRequest request = co_await c.read();
      RouteMatch m = router->match(request.method(), request.path());
      if (m.pattern() == "/slow/{ms}") {
        const std::string ms(*m.params().get("ms"));  // copied: the request is not kept across the await
        co_await gate.wait();
        co_await c.write(HttpResponse(200).body(ByteBuf::copy_of("slept " + ms)));
      } else {
        m.run(ctx, request);
      }
      c.flush();
    }
  });
  ch.write_inbound(ByteBuf::copy_of(
      "GET /slow/5 HTTP/1.1\r\nHost: h\r\n\r\n"
      "GET /hello/ann HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /hello/ann HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
      "GET /missing HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(gate.waiting);  // the later requests wait in the Connection meanwhile
  std::exchange(gate.waiting, {}).resume();
  ch.run_pending();
  std::string out;
  while (auto b = ch.read_outbound<ByteBuf>()) out += b->to_string();
  const auto slept = out.find("slept 5"), hello = out.find("hello name=ann"), not_allowed = out.find("405"),
             custom = out.find("custom");
  ASSERT_NE(slept, std::string::npos) << out;
  ASSERT_NE(hello, std::string::npos) << out;
  ASSERT_NE(not_allowed, std::string::npos) << out;
  ASSERT_NE(custom, std::string::npos) << out;
  EXPECT_LT(slept, hello);
  EXPECT_LT(hello, not_allowed);
  EXPECT_LT(not_allowed, custom);
  ch.finish();  // ends the coroutine, which lets go of the channel
}

}  // namespace
}  // namespace weft::http
