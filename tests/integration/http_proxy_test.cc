// weft-proxy (tools/proxy) in front of weft-hello and of python's http.server
// (tests/integration/proxy_backend.py), served on every transport, asked by weft's client over
// HTTP/1.1 and h2c: answers byte-exact in every framing (Content-Length, chunked, DATA), uploads
// streamed with and without a declared length, the hop-by-hop fields dropped and the forwarding
// fields added, a backend that dies mid-body a failure at the client (never a complete-looking
// answer), 502 for a backend that is down (the next backend tried first), 504 for one that never
// answers, and SIGTERM letting a download under way end before the proxy exits.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/hello_process.h"
#include "support/random_port.h"
#include "weft/client/http_client.h"
#include "weft/weft.h"

#if defined(WEFT_HTTP_PROXY_BIN) && defined(WEFT_HELLO_BIN)

namespace weft::http_proxy_test {

using client::ClientOptions;
using client::HttpClient;
using client::StreamedResponse;

// Byte i of weft-hello's /download and of the python backend's bodies.
std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) % 251);
  return s;
}

// weft-hello's /upload answer for `body`: its length and FNV-1a 64.
std::string upload_answer(std::string_view body) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : body) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return std::to_string(body.size()) + " " + std::to_string(hash) + "\n";
}

// What the client got: a status and the whole body, or the error that ended it.
struct Answer {
  int status = 0;
  std::string via;
  std::string body;
  std::string error;  // set when the request or its body failed
};

Answer read_all(Future<StreamedResponse> pending) {
  Answer a;
  try {
    StreamedResponse r = pending.take();
    a.status = r.head.status();
    a.via = std::string(r.head.header("via").value_or(""));
    while (std::optional<ByteBuf> chunk = r.body.next().take()) a.body += chunk->view();
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  return a;
}

// The backends, shared by every test of the process: weft-hello (coroutine mode, HTTP/1.1 and
// h2c) and the python one.
struct Backends {
  test::HelloProcess hello{WEFT_HELLO_BIN, "epoll", "coroutine"};
  test::HelloProcess python{WEFT_PROXY_BACKEND_SCRIPT, test::HelloProcess::PortFirst{"ready"}, {}};
  std::string hello_url() const { return "http://127.0.0.1:" + std::to_string(hello.port()); }
  std::string python_url() const { return "http://127.0.0.1:" + std::to_string(python.port()); }
};

Backends& backends() {
  static Backends b;
  return b;
}

class HttpProxyTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(backends().hello.is_running()) << backends().hello.error();
    ASSERT_TRUE(backends().python.is_running()) << backends().python.error();
  }

  // weft-proxy on this test's transport in front of `backend_urls`, with `extra` flags.
  std::unique_ptr<test::HelloProcess> start_proxy(std::vector<std::string> backend_urls,
                                                  std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--transport", GetParam(), "--loops", "1"};
    for (std::string& url : backend_urls) {
      args.push_back("--backend");
      args.push_back(std::move(url));
    }
    args.insert(args.end(), extra.begin(), extra.end());
    auto proxy = std::make_unique<test::HelloProcess>(WEFT_HTTP_PROXY_BIN, args);
    EXPECT_TRUE(proxy->is_running()) << proxy->error();
    return proxy;
  }

  static std::string url(const test::HelloProcess& proxy, std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(proxy.port()) + std::string(path);
  }

  // One client per HTTP version: [0] HTTP/1.1, [1] h2c by prior knowledge.
  HttpClient& client(bool h2) { return h2 ? h2c_ : http1_; }

  EventLoopGroup loops_{epoll(), 1, "proxy-test"};
  HttpClient http1_{loops_};
  HttpClient h2c_{loops_, [] {
                    ClientOptions o;
                    o.http2_prior_knowledge = true;
                    return o;
                  }()};
};

TEST_P(HttpProxyTest, ForwardsAnswersAndUploadsByteExactOverHttp1AndH2c) {
  auto proxy = start_proxy({backends().hello_url()});
  ASSERT_TRUE(proxy->is_running());
  const std::string upload = pattern((1u << 20) + 3);
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "HTTP/1.1");
    Answer plain = read_all(client(h2).stream("GET", url(*proxy, "/plaintext")));
    EXPECT_EQ(plain.error, "");
    EXPECT_EQ(plain.status, 200);
    EXPECT_EQ(plain.body, "Hello, World!");
    EXPECT_EQ(plain.via, "1.1 weft-proxy");  // the backend's answer came over HTTP/1.1
    // weft-hello's download is chunked: streamed through, not gathered.
    Answer download = read_all(client(h2).stream("GET", url(*proxy, "/download?bytes=300007")));
    EXPECT_EQ(download.status, 200);
    EXPECT_TRUE(download.body == pattern(300007)) << download.body.size() << " bytes " << download.error;
    const std::string_view body = upload;
    Answer sent = read_all(client(h2).stream("POST", url(*proxy, "/upload"), ByteBuf::copy_of(body)));
    EXPECT_EQ(sent.status, 200);
    EXPECT_EQ(sent.body, upload_answer(body));
  }
  // Chunked in (no declared length), streamed to the backend as it comes.
  client::Upload up = http1_.upload("POST", url(*proxy, "/upload"));
  for (std::size_t at = 0; at < upload.size(); at += 65521) {
    up.body.write(ByteBuf::copy_of(std::string_view(upload).substr(at, 65521))).get();
  }
  up.body.finish().get();
  Answer chunked = read_all(std::move(up.response));
  EXPECT_EQ(chunked.status, 200);
  EXPECT_EQ(chunked.body, upload_answer(upload));
}

// HTTP/2 to the backend (h2c by prior knowledge): the client's fields, written for HTTP/1.1, go
// out lowercased and without the connection ones.
TEST_P(HttpProxyTest, ForwardsToAnHttp2Backend) {
  auto proxy = start_proxy({backends().hello_url()}, {"--backend-http2"});
  ASSERT_TRUE(proxy->is_running());
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "HTTP/1.1");
    Answer plain = read_all(client(h2).stream("GET", url(*proxy, "/plaintext")));
    EXPECT_EQ(plain.status, 200) << plain.error << plain.body;
    EXPECT_EQ(plain.body, "Hello, World!");
    Answer download = read_all(client(h2).stream("GET", url(*proxy, "/download?bytes=100003")));
    EXPECT_TRUE(download.body == pattern(100003)) << download.body.size() << " bytes " << download.error;
    const std::string body = pattern(100001);
    Answer sent = read_all(client(h2).stream("POST", url(*proxy, "/upload"), ByteBuf::copy_of(body)));
    EXPECT_EQ(sent.body, upload_answer(body)) << sent.error;
  }
}

TEST_P(HttpProxyTest, DropsHopByHopFieldsAndAddsTheForwardingOnes) {
  auto proxy = start_proxy({backends().python_url()});
  ASSERT_TRUE(proxy->is_running());
  http::HttpClientRequest request("GET", url(*proxy, "/headers"));
  request.header("Connection", "X-Drop-Me")
      .header("X-Drop-Me", "1")
      .header("Keep-Alive", "timeout=5")
      .header("X-Forwarded-For", "10.1.2.3")
      .header("X-Kept", "yes");
  Answer a = read_all(http1_.stream(std::move(request)));
  ASSERT_EQ(a.status, 200) << a.error;
  const std::string host = "127.0.0.1:" + std::to_string(proxy->port());
  EXPECT_NE(a.body.find("x-kept: yes\n"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("x-forwarded-for: 10.1.2.3, 127.0.0.1\n"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("forwarded: for=127.0.0.1;proto=http;host=\"" + host + "\"\n"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("x-forwarded-proto: http\n"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("x-forwarded-host: " + host + "\n"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("via: 1.1 weft-proxy\n"), std::string::npos) << a.body;
  EXPECT_EQ(a.body.find("x-drop-me"), std::string::npos) << a.body;
  EXPECT_EQ(a.body.find("keep-alive"), std::string::npos) << a.body;
  // python's chunked answer and its echo of a chunked upload, byte-exact through both versions.
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "HTTP/1.1");
    Answer chunked = read_all(client(h2).stream("GET", url(*proxy, "/chunked?n=123457")));
    EXPECT_EQ(chunked.status, 200);
    EXPECT_TRUE(chunked.body == pattern(123457)) << chunked.body.size() << " bytes " << chunked.error;
  }
  client::Upload up = http1_.upload("POST", url(*proxy, "/echo"));
  const std::string body = pattern(100003);
  up.body.write(ByteBuf::copy_of(std::string_view(body).substr(0, 50000))).get();
  up.body.write(ByteBuf::copy_of(std::string_view(body).substr(50000))).get();
  up.body.finish().get();
  Answer echoed = read_all(std::move(up.response));
  EXPECT_EQ(echoed.status, 200);
  EXPECT_TRUE(echoed.body == body) << echoed.body.size() << " bytes " << echoed.error;
}

TEST_P(HttpProxyTest, ABackendThatDiesMidBodyFailsTheAnswerNeverTruncatesIt) {
  auto proxy = start_proxy({backends().python_url()});
  ASSERT_TRUE(proxy->is_running());
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "h2c" : "HTTP/1.1");
    for (const char* path : {"/cut?n=200000&sent=70000", "/cut?n=200000&sent=70000&chunked=1"}) {
      SCOPED_TRACE(path);
      Answer a = read_all(client(h2).stream("GET", url(*proxy, path)));
      // The head was sent: HTTP/1.1 closes the connection short of the body's end, HTTP/2 resets the stream.
      EXPECT_NE(a.error, "") << "a cut body was taken for whole: " << a.status << ", " << a.body.size() << " bytes";
      EXPECT_LT(a.body.size(), 200000u);
    }
    // A short answer whose body fails before the proxy sent anything: a 502 instead.
    Answer small = read_all(client(h2).stream("GET", url(*proxy, "/cut?n=1000&sent=0")));
    EXPECT_EQ(small.error, "");
    EXPECT_EQ(small.status, 502);
  }
  // The proxy serves on.
  EXPECT_EQ(read_all(http1_.stream("GET", url(*proxy, "/chunked?n=10"))).body, pattern(10));
}

TEST_P(HttpProxyTest, ADownBackendIsSkippedAndAloneGets502) {
  const std::string down = "http://127.0.0.1:" + std::to_string(test::random_port());  // nothing listens
  auto both = start_proxy({down, backends().hello_url()});
  ASSERT_TRUE(both->is_running());
  for (int i = 0; i < 4; ++i) {  // round robin: two of them start at the down backend
    Answer a = read_all(http1_.stream("GET", url(*both, "/plaintext")));
    EXPECT_EQ(a.status, 200) << a.error << a.body;
  }
  auto alone = start_proxy({down});
  ASSERT_TRUE(alone->is_running());
  for (bool h2 : {false, true}) {
    Answer a = read_all(client(h2).stream("GET", url(*alone, "/plaintext")));
    EXPECT_EQ(a.status, 502) << a.error;
    EXPECT_NE(a.body.find("502 Bad Gateway"), std::string::npos) << a.body;
  }
  both->stop();
  EXPECT_NE(both->output().find("2 sent to the next backend"), std::string::npos) << both->output();
}

TEST_P(HttpProxyTest, ABackendThatNeverAnswersGets504) {
  auto proxy = start_proxy({backends().python_url()}, {"--timeout", "0.5"});
  ASSERT_TRUE(proxy->is_running());
  Answer a = read_all(http1_.stream("GET", url(*proxy, "/hang")));
  EXPECT_EQ(a.status, 504) << a.error;
  EXPECT_NE(a.body.find("504 Gateway Timeout"), std::string::npos) << a.body;
}

TEST_P(HttpProxyTest, SigtermLetsADownloadUnderWayEndBeforeTheProxyExits) {
  auto proxy = start_proxy({backends().hello_url()});
  ASSERT_TRUE(proxy->is_running());
  constexpr std::size_t kBytes = 4u << 20;
  StreamedResponse r = http1_.stream("GET", url(*proxy, "/download?bytes=" + std::to_string(kBytes))).take();
  ASSERT_EQ(r.head.status(), 200);
  std::string body;
  std::optional<ByteBuf> chunk = r.body.next().take();
  ASSERT_TRUE(chunk);
  body += chunk->view();
  proxy->terminate();  // drains: the download goes on
  while ((chunk = r.body.next().take())) body += chunk->view();
  EXPECT_TRUE(body == pattern(kBytes)) << body.size() << " bytes";
  const int status = proxy->stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(proxy->output().find("drained: 1 connection(s) open, 1 ended gracefully"), std::string::npos)
      << proxy->output();
}

INSTANTIATE_TEST_SUITE_P(On, HttpProxyTest, ::testing::Values("epoll", "io_uring", "blocking"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace weft::http_proxy_test

#endif  // WEFT_HTTP_PROXY_BIN && WEFT_HELLO_BIN
