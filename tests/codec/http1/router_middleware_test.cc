// Router: routes that return their response or are coroutines, the middleware chain (order,
// short-circuit), the ready middleware (compression, CORS, request ids, access log), error pages and
// routes that throw. Over an EmbeddedChannel with the HTTP/1.1 codec; tests/integration/
// router_concurrency_test.cc runs the concurrency cases over sockets on every transport.
#include <gtest/gtest.h>
#include <zlib.h>

#include <coroutine>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/access_log.h"
#include "weft/codec/http1/compression.h"
#include "weft/codec/http1/cors.h"
#include "weft/codec/http1/request_id.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"

namespace weft::http::middleware_test {

struct Answer {
  int status = 0;
  std::string head;
  std::string body;
  std::optional<std::string> header(std::string_view name) const {
    const std::string key = "\r\n" + std::string(name) + ": ";
    const auto at = head.find(key);
    if (at == std::string::npos) return std::nullopt;
    const auto begin = at + key.size();
    return head.substr(begin, head.find("\r\n", begin) - begin);
  }
};

// The answers in `bytes`, in order (bodies by Content-Length).
std::vector<Answer> split(std::string bytes) {
  std::vector<Answer> out;
  while (!bytes.empty()) {
    const auto end = bytes.find("\r\n\r\n");
    if (end == std::string::npos) break;
    Answer a;
    a.head = bytes.substr(0, end + 2);
    a.status = std::stoi(a.head.substr(9, 3));
    const std::size_t length = a.header("Content-Length") ? std::stoul(*a.header("Content-Length")) : 0;
    a.body = bytes.substr(end + 4, length);
    bytes.erase(0, end + 4 + length);
    out.push_back(std::move(a));
  }
  return out;
}

struct Server {
  explicit Server(std::shared_ptr<Router> r, Limits limits = {}) : router(std::move(r)) {
    ch->pipeline().add_last("http", std::make_shared<ServerCodec>(std::move(limits)));
    ch->pipeline().add_last("router", router);
  }
  void send(const std::string& bytes) { ch->write_inbound(ByteBuf::copy_of(bytes)); }
  std::vector<Answer> answers() {
    std::string out;
    while (auto b = ch->read_outbound<ByteBuf>()) out += b->to_string();
    return split(std::move(out));
  }
  std::vector<Answer> ask(const std::string& method, const std::string& target, const std::string& headers = "") {
    send(method + " " + target + " HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
    return answers();
  }
  std::shared_ptr<Router> router;
  std::shared_ptr<EmbeddedChannel> ch = std::make_shared<EmbeddedChannel>();  // a route's task keeps it alive
};

// Records its before()/after() calls in a shared log; answers `short_circuit` when set.
class Recorder final : public Middleware {
 public:
  Recorder(std::string name, std::vector<std::string>& log, std::optional<int> short_circuit = std::nullopt)
      : name_(std::move(name)), log_(log), short_circuit_(short_circuit) {}
  std::optional<HttpResponse> before(Request& request) override {
    log_.push_back(name_ + ".before");
    request.set("seen-by", std::string(request.get("seen-by").value_or("")) + name_);
    if (short_circuit_) return HttpResponse(*short_circuit_);
    return std::nullopt;
  }
  void after(Request&, HttpResponse& response) override {
    log_.push_back(name_ + ".after");
    response.header("X-After", name_);
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  std::optional<int> short_circuit_;
};

// A coroutine parks here until the test resumes it (the loop is the test's own thread).
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

std::string gunzip(std::string_view data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

TEST(RouterChainTest, MiddlewareRunsInOrderAroundTheRouteAndSeesEveryForm) {
  std::vector<std::string> log;
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<Recorder>("a", log)).use(std::make_shared<Recorder>("b", log));
  router->get("/callback", [&log](Request& r) {
    log.push_back("route");
    return std::move(HttpResponse(200).body(std::string(*r.get("seen-by"))));
  });
  router->get("/coroutine/{id}", [&log](Request& r) -> Task<HttpResponse> {
    log.push_back("route");
    co_return HttpResponse(200).body(std::string(*r.get("seen-by")) + " " + std::string(*r.param("id")));
  });
  Server s(router);
  auto answers = s.ask("GET", "/callback");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].body, "ab");
  EXPECT_EQ(log, (std::vector<std::string>{"a.before", "b.before", "route", "b.after", "a.after"}));
  EXPECT_NE(answers[0].head.find("X-After: b\r\nX-After: a\r\n"), std::string::npos) << answers[0].head;
  log.clear();
  answers = s.ask("GET", "/coroutine/7");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].body, "ab 7");
  EXPECT_EQ(log, (std::vector<std::string>{"a.before", "b.before", "route", "b.after", "a.after"}));
}

TEST(RouterChainTest, AShortCircuitSkipsTheRestAndTheRouteButNotTheAftersBeforeIt) {
  std::vector<std::string> log;
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<Recorder>("a", log))
      .use(std::make_shared<Recorder>("b", log, 401))
      .use(std::make_shared<Recorder>("c", log));
  router->get("/x", [&log](Request&) {
    log.push_back("route");
    return HttpResponse(200);
  });
  Server s(router);
  auto answers = s.ask("GET", "/x");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 401);
  EXPECT_EQ(log, (std::vector<std::string>{"a.before", "b.before", "a.after"}));
}

TEST(RouterChainTest, UnroutedRequestsPassTheChainAndGetTheCustomErrorPages) {
  std::vector<std::string> log;
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<Recorder>("a", log));
  router->get("/only-get", [](Request&) { return HttpResponse(200); });
  router->error_page([](int status, Request& r) {
    return std::move(
        HttpResponse(status)
            .content_type("application/json")
            .body("{\"status\":" + std::to_string(status) + ",\"path\":\"" + std::string(r.path()) + "\"}"));
  });
  Server s(router);
  auto answers = s.ask("GET", "/missing");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 404);
  EXPECT_EQ(answers[0].body, R"({"status":404,"path":"/missing"})");
  EXPECT_EQ(answers[0].header("X-After"), "a");
  answers = s.ask("DELETE", "/only-get");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 405);
  EXPECT_EQ(answers[0].header("Allow"), "GET, HEAD");
  EXPECT_EQ(answers[0].body, R"({"status":405,"path":"/only-get"})");
}

TEST(RouterChainTest, TheCodecsOwnErrorAnswersTakeTheConfiguredBody) {
  Limits limits;
  limits.max_body = 8;
  limits.error_body = [](int status) { return ErrorBody{"text/html", "<h1>" + std::to_string(status) + "</h1>"}; };
  Server s(std::make_shared<Router>(), limits);
  auto answers = s.ask("POST", "/upload", "Content-Length: 100\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 413);
  EXPECT_EQ(answers[0].header("Content-Type"), "text/html");
  EXPECT_EQ(answers[0].body, "<h1>413</h1>");
}

TEST(RouterChainTest, ARouteThatThrowsGets500AndTheConnectionServesOn) {
  auto router = std::make_shared<Router>();
  router->get("/throw", [](Request&) -> HttpResponse { throw std::runtime_error("callback failed"); });
  router->get("/throw-later", [](Request&) -> Task<HttpResponse> {
    co_await std::suspend_never{};
    throw std::runtime_error("coroutine failed");
  });
  router->get("/ok", [](Request&) { return std::move(HttpResponse(200).body_view("ok")); });
  Server s(router);
  s.send(
      "GET /throw HTTP/1.1\r\nHost: h\r\n\r\n"
      "GET /throw-later HTTP/1.1\r\nHost: h\r\n\r\n"
      "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n");
  auto answers = s.answers();
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].status, 500);
  EXPECT_EQ(answers[0].body, "Internal Server Error");
  EXPECT_EQ(answers[1].status, 500);
  EXPECT_EQ(answers[2].status, 200);
  EXPECT_TRUE(s.ch->is_active());
}

TEST(RouterCoroutineTest, ASuspendedFirstRequestHoldsTheSecondsAnswerNotItsWork) {
  Gate gate;
  std::vector<std::string> events;
  auto router = std::make_shared<Router>();
  router->get("/slow", [&](Request&) -> Task<HttpResponse> {
    co_await gate.wait();
    events.push_back("slow done");
    co_return HttpResponse(200).body_view("slow");
  });
  router->get("/fast", [&](Request&) {
    events.push_back("fast done");
    return std::move(HttpResponse(200).body_view("fast"));
  });
  Server s(router);
  s.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\nGET /fast HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(events, std::vector<std::string>{"fast done"});
  EXPECT_TRUE(s.answers().empty()) << "the fast answer waits for the slow one";
  ASSERT_TRUE(gate.waiting);
  std::exchange(gate.waiting, {}).resume();
  s.ch->run_pending();
  auto answers = s.answers();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].body, "slow");
  EXPECT_EQ(answers[1].body, "fast");
}

TEST(RouterCoroutineTest, ATaskWhoseChannelClosedEndsQuietly) {
  Gate gate;
  int finished = 0;
  auto router = std::make_shared<Router>();
  router->get("/slow", [&](Request&) -> Task<HttpResponse> {
    co_await gate.wait();
    ++finished;
    co_return HttpResponse(200);
  });
  Server s(router);
  s.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n");
  s.ch->close();
  s.ch->run_pending();
  ASSERT_TRUE(gate.waiting);
  std::exchange(gate.waiting, {}).resume();  // its answer has nowhere to go; the frame ends
  s.ch->run_pending();
  EXPECT_EQ(finished, 1);
  EXPECT_TRUE(s.answers().empty());
}

std::shared_ptr<Router> text_router(std::string body, std::string type = "text/plain") {
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<Compression>(CompressionOptions{.min_size = 64}));
  router->get("/t", [body = std::move(body), type = std::move(type)](Request&) {
    return std::move(HttpResponse(200).content_type(type).body(body));
  });
  return router;
}

TEST(CompressionTest, GzipWhenNegotiatedWithVaryEitherWay) {
  const std::string text(4000, 'w');
  Server s(text_router(text));
  auto answers = s.ask("GET", "/t", "Accept-Encoding: br;q=1.0, gzip;q=0.5\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].header("Content-Encoding"), "gzip");
  EXPECT_EQ(answers[0].header("Vary"), "Accept-Encoding");
  EXPECT_LT(answers[0].body.size(), text.size());
  EXPECT_EQ(gunzip(answers[0].body), text);
  for (const std::string& accept :
       std::vector<std::string>{"", "Accept-Encoding: gzip;q=0, deflate\r\n", "Accept-Encoding: identity\r\n",
                                "Accept-Encoding: *;q=1, gzip;q=0\r\n"}) {
    answers = s.ask("GET", "/t", accept);
    ASSERT_EQ(answers.size(), 1u) << accept;
    EXPECT_FALSE(answers[0].header("Content-Encoding")) << accept;
    EXPECT_EQ(answers[0].header("Vary"), "Accept-Encoding") << accept;
    EXPECT_EQ(answers[0].body, text) << accept;
  }
}

TEST(CompressionTest, NeverForSmallBodiesOrCompressedTypes) {
  Server small(text_router(std::string(63, 'w')));
  auto answers = small.ask("GET", "/t", "Accept-Encoding: gzip\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].header("Content-Encoding"));
  EXPECT_FALSE(answers[0].header("Vary"));
  Server image(text_router(std::string(4000, 'w'), "image/png"));
  answers = image.ask("GET", "/t", "Accept-Encoding: gzip\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].header("Content-Encoding"));
  EXPECT_EQ(answers[0].body.size(), 4000u);
}

TEST(CompressionTest, AcceptEncodingQValues) {
  EXPECT_TRUE(Compression::accepts_gzip("gzip"));
  EXPECT_TRUE(Compression::accepts_gzip("deflate, GZIP;q=0.001"));
  EXPECT_TRUE(Compression::accepts_gzip("x-gzip"));
  EXPECT_TRUE(Compression::accepts_gzip("*"));
  EXPECT_FALSE(Compression::accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(Compression::accepts_gzip("gzip;q=0.000, *"));
  EXPECT_FALSE(Compression::accepts_gzip("gzip;q=abc"));
  EXPECT_FALSE(Compression::accepts_gzip("br, deflate"));
  EXPECT_FALSE(Compression::accepts_gzip(""));
}

std::shared_ptr<Router> cors_router() {
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<Cors>(CorsOptions{.allowed_origins = {"https://app.example"},
                                                 .allowed_methods = {"GET", "PUT"},
                                                 .allowed_headers = {"Content-Type", "X-Token"},
                                                 .exposed_headers = {"X-Request-Id"},
                                                 .max_age = std::chrono::seconds(60)}));
  router->get("/data", [](Request&) { return std::move(HttpResponse(200).body_view("data")); });
  return router;
}

TEST(CorsTest, APreflightIsAnsweredBeforeTheRoutes) {
  Server s(cors_router());
  auto answers = s.ask("OPTIONS", "/data",
                       "Origin: https://app.example\r\nAccess-Control-Request-Method: PUT\r\n"
                       "Access-Control-Request-Headers: x-token, content-type\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 204);
  EXPECT_EQ(answers[0].header("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(answers[0].header("Access-Control-Allow-Methods"), "GET, PUT");
  EXPECT_EQ(answers[0].header("Access-Control-Allow-Headers"), "Content-Type, X-Token");
  EXPECT_EQ(answers[0].header("Access-Control-Max-Age"), "60");
  EXPECT_EQ(answers[0].header("Vary"), "Origin");
  for (const std::string& bad :
       std::vector<std::string>{"Origin: https://evil.example\r\nAccess-Control-Request-Method: GET\r\n",
                                "Origin: https://app.example\r\nAccess-Control-Request-Method: DELETE\r\n",
                                "Origin: https://app.example\r\nAccess-Control-Request-Method: GET\r\n"
                                "Access-Control-Request-Headers: X-Other\r\n"}) {
    answers = s.ask("OPTIONS", "/data", bad);
    ASSERT_EQ(answers.size(), 1u) << bad;
    EXPECT_EQ(answers[0].status, 403) << bad;
    EXPECT_FALSE(answers[0].header("Access-Control-Allow-Origin")) << bad;
  }
  answers = s.ask("OPTIONS", "/data");  // not a preflight: the router answers (405 here)
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, 405);
}

TEST(CorsTest, ActualRequestsGetTheirHeadersOnlyForAllowedOrigins) {
  Server s(cors_router());
  auto answers = s.ask("GET", "/data", "Origin: https://app.example\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].body, "data");
  EXPECT_EQ(answers[0].header("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(answers[0].header("Access-Control-Expose-Headers"), "X-Request-Id");
  EXPECT_EQ(answers[0].header("Vary"), "Origin");
  answers = s.ask("GET", "/data", "Origin: https://evil.example\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].header("Access-Control-Allow-Origin"));
  answers = s.ask("GET", "/data");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].header("Access-Control-Allow-Origin"));
}

TEST(RequestIdTest, TheClientsIdIsKeptAnInvalidOneReplacedAndAMissingOneMade) {
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<RequestId>());
  router->get("/id", [](Request& r) { return std::move(HttpResponse(200).body(std::string(*RequestId::of(r)))); });
  Server s(router);
  auto answers = s.ask("GET", "/id", "X-Request-Id: abc-123\r\n");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].body, "abc-123");
  EXPECT_EQ(answers[0].header("X-Request-Id"), "abc-123");
  const std::regex made("[0-9a-f]{32}");
  std::vector<std::string> ids;
  for (const std::string& incoming :
       std::vector<std::string>{"", "X-Request-Id: has space\r\n", "X-Request-Id: " + std::string(129, 'a') + "\r\n"}) {
    answers = s.ask("GET", "/id", incoming);
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_TRUE(std::regex_match(answers[0].body, made)) << answers[0].body;
    EXPECT_EQ(answers[0].header("X-Request-Id"), answers[0].body);
    ids.push_back(answers[0].body);
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
}

TEST(AccessLogTest, OneCommonLogFormatLinePerRequestAfterTheOthersHaveRun) {
  std::vector<std::string> lines;
  auto router = std::make_shared<Router>();
  router->use(std::make_shared<AccessLog>([&lines](std::string_view line) { lines.emplace_back(line); }));
  router->use(std::make_shared<Compression>(CompressionOptions{.min_size = 64}));
  router->get("/big", [](Request&) { return std::move(HttpResponse(200).body(std::string(5000, 'z'))); });
  Server s(router);
  s.ask("GET", "/big?q=\"x\"", "Accept-Encoding: gzip\r\n");
  s.ask("HEAD", "/big");
  s.ask("GET", "/none");
  ASSERT_EQ(lines.size(), 3u);
  const std::regex gzipped(
      R"(\S+ - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /big\?q=\\x22x\\x22 HTTP/1\.1" 200 (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, gzipped)) << lines[0];
  EXPECT_LT(std::stoul(m[1]), 5000u) << "the size sent, compressed";
  EXPECT_TRUE(lines[1].ends_with("\"HEAD /big HTTP/1.1\" 200 -")) << lines[1];
  EXPECT_TRUE(lines[2].ends_with("\"GET /none HTTP/1.1\" 404 9")) << lines[2];
}

}  // namespace weft::http::middleware_test
