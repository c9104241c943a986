// weft-proxy's header rules (tools/proxy/forwarded_headers.h): every hop-by-hop field is dropped in
// either case and only those (a name of the same length is kept), the fields Connection names too,
// and the forwarding fields are appended to what the client sent.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "forwarded_headers.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http1/request_parser.h"

namespace weft::proxy {
namespace {

TEST(ProxyHeadersTest, TheHopByHopFieldsAreDroppedInAnyCaseAndOnlyThey) {
  for (std::string_view name : {"connection", "Keep-Alive", "PROXY-CONNECTION", "te", "TE", "Trailer",
                                "transfer-encoding", "Upgrade", "Content-Length"}) {
    EXPECT_TRUE(is_hop_by_hop(name, "")) << name;
  }
  // Names of the same lengths (and one letter off) are end-to-end.
  for (std::string_view name : {"tf", "Tz", "trailex", "upgradx", "connectiom", "keep-alivf", "content-lengtx",
                                "proxy-connectiom", "transfer-encodinh", "x-forwarded-host", "x-forwarded-proto", "Via",
                                "Date", "Expect", "Forwarded", "X-Forwarded-For", "Host", "a"}) {
    EXPECT_FALSE(is_hop_by_hop(name, "")) << name;
  }
  EXPECT_TRUE(is_hop_by_hop("X-Drop", "close, x-drop"));
  EXPECT_TRUE(is_hop_by_hop("x-drop", " X-DROP "));
  EXPECT_FALSE(is_hop_by_hop("X-Drop", "close, x-dropped"));
}

http::RequestHead parsed(const std::string& text) {
  http::RequestHead head;
  const http::ParseResult r = http::parse_request_head(text, head, http::Limits{});
  EXPECT_EQ(r.kind, http::ParseResult::Kind::complete) << r.reason;
  return head;
}

TEST(ProxyHeadersTest, ARequestKeepsItsEndToEndFieldsAndGainsTheForwardingOnes) {
  const std::string text =
      "POST /up HTTP/1.1\r\nHost: front:8080\r\nConnection: keep-alive, X-Private\r\nX-Private: 1\r\n"
      "Keep-Alive: timeout=5\r\nTE: trailers\r\nExpect: 100-continue\r\nContent-Length: 3\r\n"
      "X-Forwarded-For: 10.0.0.1\r\nForwarded: for=10.0.0.1\r\nVia: 1.0 edge\r\nX-Forwarded-Proto: https\r\n"
      "Accept: */*\r\n\r\n";
  const http::RequestHead head = parsed(text);
  http::HttpClientRequest out("POST", "/up");
  forward_request_headers(head, Origin{"127.0.0.2", "http", "1.1 weft-proxy"}, out);
  EXPECT_EQ(out.header_block(),
            "Host: front:8080\r\nX-Forwarded-Proto: https\r\nAccept: */*\r\n"
            "X-Forwarded-For: 10.0.0.1, 127.0.0.2\r\n"
            "Forwarded: for=10.0.0.1, for=127.0.0.2;proto=http;host=\"front:8080\"\r\n"
            "X-Forwarded-Host: front:8080\r\nVia: 1.0 edge, 1.1 weft-proxy\r\n");
}

TEST(ProxyHeadersTest, AnAnswerLosesItsHopByHopFieldsAndDateAndGainsVia) {
  const std::string text =
      "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 22:07:08 GMT\r\nConnection: X-Internal\r\nX-Internal: 1\r\n"
      "Transfer-Encoding: chunked\r\nServer: weft\r\nVia: 1.1 inner\r\nContent-Type: text/plain\r\n\r\n";
  http::ResponseHead head;
  ASSERT_EQ(http::parse_response_head(text, head, http::Limits{}).kind, http::ParseResult::Kind::complete);
  http::HttpResponse out(200);
  forward_response_headers(head, "1.1 weft-proxy", out);
  EXPECT_EQ(out.header_block(), "Server: weft\r\nContent-Type: text/plain\r\nVia: 1.1 inner, 1.1 weft-proxy\r\n");
}

}  // namespace
}  // namespace weft::proxy
