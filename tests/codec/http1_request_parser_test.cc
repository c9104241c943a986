#include "weft/codec/http1/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::http {
namespace {

const std::string kWrkRequest = "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

const std::string kBrowserRequest =
    "GET /index.html?lang=en&x=1 HTTP/1.1\r\n"
    "Host: example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36\r\n"
    "Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Encoding: gzip, deflate\r\n"
    "Cookie: a=b; c=d\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

ParseResult parse(std::string_view s, RequestHead& h, Limits limits = {}) { return parse_request_head(s, h, limits); }

TEST(RequestParserTest, ParsesARequestInPlace) {
  RequestHead h;
  auto r = parse(kBrowserRequest, h);
  ASSERT_EQ(r.kind, ParseResult::Kind::complete) << r.reason;
  EXPECT_EQ(r.consumed, kBrowserRequest.size());
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/index.html?lang=en&x=1");
  EXPECT_EQ(h.path, "/index.html");
  EXPECT_EQ(h.query, "lang=en&x=1");
  EXPECT_EQ(h.version, Version::http11);
  EXPECT_EQ(h.header_count, 6u);
  EXPECT_EQ(h.header("user-agent"), "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36");
  EXPECT_EQ(h.header("COOKIE"), "a=b; c=d");
  EXPECT_FALSE(h.header("missing").has_value());
  EXPECT_TRUE(h.keep_alive);
  // Views point into the input: nothing was copied.
  EXPECT_GE(h.method.data(), kBrowserRequest.data());
  EXPECT_LT(h.header("host")->data(), kBrowserRequest.data() + kBrowserRequest.size());
}

TEST(RequestParserTest, EverySplitPointIsIncompleteUntilTheLastByte) {
  for (const std::string& req : {kWrkRequest, kBrowserRequest}) {
    for (std::size_t cut = 0; cut < req.size(); ++cut) {
      RequestHead h;
      auto r = parse(std::string_view(req).substr(0, cut), h);
      ASSERT_EQ(r.kind, ParseResult::Kind::incomplete) << "cut at " << cut << ": " << r.reason;
    }
    RequestHead h;
    ASSERT_EQ(parse(req, h).kind, ParseResult::Kind::complete);
  }
}

TEST(RequestParserTest, PipelinedRequestsParseOneAfterAnother) {
  for (int count : {1, 2, 16, 1024}) {
    std::string batch;
    for (int i = 0; i < count; ++i) batch += "GET /r" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    std::string_view rest = batch;
    for (int i = 0; i < count; ++i) {
      RequestHead h;
      auto r = parse(rest, h);
      ASSERT_EQ(r.kind, ParseResult::Kind::complete);
      EXPECT_EQ(h.path, "/r" + std::to_string(i));
      rest.remove_prefix(r.consumed);
    }
    EXPECT_TRUE(rest.empty());
  }
}

TEST(RequestParserTest, KeepAliveRulesOfHttp10And11) {
  struct Case {
    std::string request;
    bool keep_alive;
  } cases[] = {
      {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, Close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: Keep-Alive, close\r\n\r\n", false},
  };
  for (const auto& c : cases) {
    RequestHead h;
    ASSERT_EQ(parse(c.request, h).kind, ParseResult::Kind::complete) << c.request;
    EXPECT_EQ(h.keep_alive, c.keep_alive) << c.request;
  }
}

TEST(RequestParserTest, BodyFraming) {
  RequestHead h;
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n", h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.content_length, 12u);
  EXPECT_FALSE(h.chunked);
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.content_length, 5u);
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", h).kind,
            ParseResult::Kind::complete);
  EXPECT_TRUE(h.chunked);
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n", h).kind,
            ParseResult::Kind::complete);
  EXPECT_TRUE(h.expect_continue);
}

// Parses `request` (which `h` then points into), then checks that each of its prefixes is incomplete.
void expect_complete_in_every_split(const std::string& request, RequestHead& h) {
  for (std::size_t cut = 0; cut < request.size(); ++cut) {
    RequestHead partial;
    ASSERT_EQ(parse(std::string_view(request).substr(0, cut), partial).kind, ParseResult::Kind::incomplete)
        << request << " cut at " << cut;
  }
  auto r = parse(request, h);
  ASSERT_EQ(r.kind, ParseResult::Kind::complete) << request << ": " << r.reason;
  EXPECT_EQ(r.consumed, request.size());
}

TEST(RequestParserTest, HigherHttp1MinorVersionsAreServedAsHttp11) {
  for (const char* version : {"HTTP/1.2", "HTTP/1.5", "HTTP/1.9"}) {
    SCOPED_TRACE(version);
    RequestHead h;
    const std::string request = std::string("GET /v HTTP/1.1\r\nHost: h\r\n\r\n").replace(7, 8, version);
    expect_complete_in_every_split(request, h);
    EXPECT_EQ(h.version, Version::http11);
    EXPECT_TRUE(h.keep_alive);
    EXPECT_EQ(parse(std::string("GET / ") + version + "\r\n\r\n", h).status, 400);  // Host is required
  }
}

struct ErrorCase {
  const char* name;
  std::string request;
  int status;
};

class RequestParserErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(RequestParserErrorTest, AnswersWithTheRightStatus) {
  RequestHead h;
  auto r = parse(GetParam().request, h);
  ASSERT_EQ(r.kind, ParseResult::Kind::error) << GetParam().name;
  EXPECT_EQ(r.status, GetParam().status) << GetParam().name << ": " << r.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, RequestParserErrorTest,
    ::testing::Values(
        ErrorCase{"garbage", "HELLO\r\n\r\n", 400},
        ErrorCase{"two_spaces", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"bad_method", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"ctl_in_target", std::string("GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n"), 400},
        ErrorCase{"bare_lf_line", "GET / HTTP/1.1\nHost: h\r\n\r\n", 400},
        ErrorCase{"bare_lf_header", "GET / HTTP/1.1\r\nHost: h\n\r\n", 400},
        ErrorCase{"no_colon", "GET / HTTP/1.1\r\nHost h\r\n\r\n", 400},
        ErrorCase{"space_before_colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},
        ErrorCase{"obs_fold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400},
        ErrorCase{"nul_in_value", std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 35), 400},
        ErrorCase{"missing_host", "GET / HTTP/1.1\r\n\r\n", 400},
        ErrorCase{"two_hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        ErrorCase{"bad_version", "GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"http2_version", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        ErrorCase{"http09_version", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505},
        ErrorCase{"uri_too_long", "GET /" + std::string(5000, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n", 414},
        ErrorCase{"uri_too_long_incomplete", "GET /" + std::string(5000, 'a'), 414},
        ErrorCase{"headers_too_large", "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", 431},
        ErrorCase{"headers_too_large_incomplete", "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'a'), 431},
        ErrorCase{"too_many_headers",
                  [] {
                    std::string s = "GET / HTTP/1.1\r\nHost: h\r\n";
                    for (int i = 0; i < 80; ++i) s += "X" + std::to_string(i) + ": v\r\n";
                    return s + "\r\n";
                  }(),
                  431},
        ErrorCase{"unsupported_coding", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
        ErrorCase{"unknown_coding", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: foo\r\n\r\n", 501},
        ErrorCase{"unsupported_expectation", "POST / HTTP/1.1\r\nHost: h\r\nExpect: magic\r\n\r\n", 417},
        // request smuggling
        ErrorCase{"cl_and_te", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                  400},
        ErrorCase{"te_and_cl", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                  400},
        ErrorCase{"conflicting_cl", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
        ErrorCase{"conflicting_cl_list", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\n", 400},
        ErrorCase{"negative_cl", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
        ErrorCase{"cl_plus", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\n", 400},
        ErrorCase{"cl_overflow", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
        ErrorCase{"chunked_twice", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
        ErrorCase{"chunked_two_headers",
                  "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        ErrorCase{"http3_version", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", 505},
        ErrorCase{"http2_minor", "GET / HTTP/2.1\r\nHost: h\r\n\r\n", 505},
        ErrorCase{"http9_version", "GET / HTTP/9.9\r\nHost: h\r\n\r\n", 505},
        ErrorCase{"two_digit_minor", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"two_digit_major", "GET / HTTP/11.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"letter_minor", "GET / HTTP/1.a\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"missing_minor", "GET / HTTP/1.\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"missing_dot", "GET / HTTP/11\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"lowercase_http", "GET / http/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"comma_version", "GET / HTTP/1,1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"space_after_version", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
        ErrorCase{"te_in_http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(RequestParserTest, LimitsAreConfigurable) {
  Limits tight;
  tight.max_request_line = 16;
  RequestHead h;
  EXPECT_EQ(parse("GET /0123456789abcdef HTTP/1.1\r\nHost: h\r\n\r\n", h, tight).status, 414);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n", h, tight).kind, ParseResult::Kind::complete);
}

}  // namespace
}  // namespace weft::http
