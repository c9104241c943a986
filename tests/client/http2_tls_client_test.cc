// client::HttpClient over h2c (prior knowledge), h2 and HTTP/1.1 over TLS chosen by ALPN, on every
// transport: 1,000 URLs 16 at a time, certificate checks (untrusted: TlsHandshakeError with cause
// certificate; `insecure` accepts it), and a POST body both ways.

#include <gtest/gtest.h>

#include <deque>

#include "client/origin_servers.h"
#include "weft/codec/tls/tls_error.h"

namespace weft {
namespace {

using client::ClientOptions;
using client::HttpClient;
using test::OriginKind;

ClientOptions trusting_test_ca() {
  ClientOptions options;
  options.tls =
      TlsContext::client().trust_pem(test::test_pki().ca.cert_pem).application_protocols({"h2", "http/1.1"}).build();
  return options;
}

class Http2TlsClientTest : public test::ClientTest {
 protected:
  // 1,000 GETs, 16 at a time; every answer "hello" in `version`.
  void fetch_thousand(HttpClient& client, const std::string& url, http::Version version) {
    std::deque<Future<http::HttpClientResponse>> window;
    int ok = 0;
    for (int i = 0; i < 1000 || !window.empty();) {
      if (i < 1000 && window.size() < 16) {
        window.push_back(client.get(url));
        ++i;
        continue;
      }
      const http::HttpClientResponse& r = test::answer_of(window.front());
      ok += (r.status() == 200 && r.body_view() == "hello" && r.version() == version) ? 1 : 0;
      window.pop_front();
    }
    EXPECT_EQ(ok, 1000);
  }
};

TEST_P(Http2TlsClientTest, H2cByPriorKnowledge) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2c, accepted_);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  HttpClient client(clients_, options);
  fetch_thousand(client, test::url_of(server, "http", "/hello"), http::Version::http2);
  EXPECT_LE(client.stats().connections_opened, clients_.size());  // one per loop's pool: streams, not connections
  const std::string body(70'000, 'z');
  auto echoed = client.request("POST", test::url_of(server, "http", "/echo"), ByteBuf::copy_of(body));
  EXPECT_EQ(test::answer_of(echoed).body_view(), body);
}

// A request's fields as the caller wrote them for HTTP/1.1 ("Content-Type", "Connection"): over
// HTTP/2 their names go lowercase (RFC 9113 8.2.1) and HTTP/1.1's connection fields are left out
// (8.2.2), where they made a streamed request (stream(), upload()) fail before it left.
TEST_P(Http2TlsClientTest, H2cLowercasesTheCallersFieldNamesAndLeavesOutTheConnectionOnes) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2c, accepted_);
  ClientOptions options;
  options.http2_prior_knowledge = true;
  HttpClient client(clients_, options);
  for (const char* name : {"x-mixed-case", "connection", "keep-alive"}) {
    http::HttpClientRequest request("GET", test::url_of(server, "http", std::string("/header/") + name));
    request.header("X-Mixed-Case", "kept").header("Connection", "X-Mixed-Case-2").header("Keep-Alive", "timeout=5");
    Future<client::StreamedResponse> answer = client.stream(std::move(request));
    ASSERT_TRUE(answer.wait_for(std::chrono::seconds(60)));
    ASSERT_FALSE(answer.error()) << name;
    client::StreamedResponse r = answer.take();
    EXPECT_EQ(r.head.status(), 200) << name;
    std::string body;
    while (std::optional<ByteBuf> chunk = r.body.next().take()) body += chunk->view();
    EXPECT_EQ(body, std::string_view(name) == "x-mixed-case" ? "kept" : "none") << name;
  }
}

TEST_P(Http2TlsClientTest, H2OverTlsByAlpn) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2_tls, accepted_);
  HttpClient client(clients_, trusting_test_ca());
  fetch_thousand(client, test::url_of(server, "https", "/hello"), http::Version::http2);
  EXPECT_LE(client.stats().connections_opened, clients_.size());
}

TEST_P(Http2TlsClientTest, Http1OverTlsWhenTheServerChoosesIt) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::http1_tls, accepted_);
  HttpClient client(clients_, trusting_test_ca());
  fetch_thousand(client, test::url_of(server, "https", "/hello"), http::Version::http11);
}

TEST_P(Http2TlsClientTest, LocalhostIsCheckedByName) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2_tls, accepted_);
  HttpClient client(clients_, trusting_test_ca());
  const std::string url = "https://localhost:" + std::to_string(server->local_address().port()) + "/hello";
  EXPECT_EQ(test::answer_of(client.get(url)).body_view(), "hello");
}

TEST_P(Http2TlsClientTest, UntrustedCertificateFailsClearlyAndInsecureAcceptsIt) {
  ChannelPtr server = test::serve_origin(servers_, OriginKind::h2_tls, accepted_);
  const std::string url = test::url_of(server, "https", "/hello");
  {
    HttpClient client(clients_);  // the system's trust store: the test CA is not in it
    auto f = client.get(url);
    ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
    ASSERT_TRUE(f.error());
    try {
      std::rethrow_exception(f.error());
    } catch (const TlsHandshakeError& e) {
      EXPECT_EQ(e.cause(), TlsHandshakeError::Cause::certificate) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "another error: " << e.what();
    }
  }
  ClientOptions insecure;
  insecure.insecure = true;
  HttpClient client(clients_, insecure);
  EXPECT_EQ(test::answer_of(client.get(url)).body_view(), "hello");
}

WEFT_ON_EVERY_TRANSPORT(Http2TlsClientTest);

}  // namespace
}  // namespace weft
