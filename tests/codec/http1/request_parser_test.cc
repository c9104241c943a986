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

TEST(RequestParserTest, AbsoluteFormTargetsAreParsed) {
  struct Case {
    std::string target, path, query, authority;
  } cases[] = {
      {"http://example.com/plaintext?x=1", "/plaintext", "x=1", "example.com"},
      {"http://example.com", "/", "", "example.com"},
      {"http://example.com/", "/", "", "example.com"},
      {"http://example.com?x=1", "/", "x=1", "example.com"},
      {"http://example.com/?", "/", "", "example.com"},
      {"http://a/b?c?d/e", "/b", "c?d/e", "a"},
      {"http://a//b", "//b", "", "a"},
      {"https://example.com:8443/a/b", "/a/b", "", "example.com:8443"},
      {"HTTP://Example.COM:80/", "/", "", "Example.COM:80"},
      {"hTTpS://h/", "/", "", "h"},
      {"http://127.0.0.1:8080/plaintext", "/plaintext", "", "127.0.0.1:8080"},
      {"http://[::1]:8080/p", "/p", "", "[::1]:8080"},
      {"http://[2001:db8::a:b]", "/", "", "[2001:db8::a:b]"},
      {"http://[::ffff:192.0.2.1]/", "/", "", "[::ffff:192.0.2.1]"},
      {"http://[v1.fe80::a+en1]/", "/", "", "[v1.fe80::a+en1]"},
      {"http://h:/", "/", "", "h:"},
      {"http://xn--bcher-kva.example/%7Euser", "/%7Euser", "", "xn--bcher-kva.example"},
      {"http://a%2Db.example/", "/", "", "a%2Db.example"},
      {"http://a-b_c~d!$&'()*+,;=e/", "/", "", "a-b_c~d!$&'()*+,;=e"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    RequestHead h;
    // The Host header is ignored for the target's authority (RFC 9112 3.2.2).
    const std::string request = "GET " + c.target + " HTTP/1.1\r\nHost: other.example\r\n\r\n";
    expect_complete_in_every_split(request, h);
    EXPECT_EQ(h.target, c.target);  // as sent
    EXPECT_EQ(h.path, c.path);
    EXPECT_EQ(h.query, c.query);
    EXPECT_EQ(h.authority, c.authority);
    EXPECT_EQ(h.header("host"), "other.example");
  }
}

TEST(RequestParserTest, AbsoluteFormInHttp10NeedsNoHost) {
  RequestHead h;
  const std::string request = "GET http://example.com/x HTTP/1.0\r\n\r\n";
  expect_complete_in_every_split(request, h);
  EXPECT_EQ(h.path, "/x");
  EXPECT_EQ(h.authority, "example.com");
}

TEST(RequestParserTest, AuthorityOfOtherTargetsIsTheHostHeader) {
  RequestHead h;
  ASSERT_EQ(parse(kWrkRequest, h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.authority, "127.0.0.1:8080");
  ASSERT_EQ(parse("GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n", h).kind, ParseResult::Kind::complete);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", h).kind, ParseResult::Kind::complete);  // reused head
  EXPECT_EQ(h.authority, "");
  EXPECT_EQ(h.path, "/");
  ASSERT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.path, "*");
  EXPECT_EQ(h.authority, "h");
  ASSERT_EQ(parse("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", h).kind,
            ParseResult::Kind::complete);
  EXPECT_EQ(h.target, "example.com:443");
}

// "Host:" has a fast path past the field-name scan: every spelling of the name must count as it does
// through the scan, and near-misses must not.
TEST(RequestParserTest, TheHostHeaderIsRecognisedInAnyCaseAndOnlyByItsExactName) {
  RequestHead h;
  for (const char* name : {"Host", "host", "HOST", "hOsT"}) {
    SCOPED_TRACE(name);
    const std::string one = std::string("GET / HTTP/1.1\r\n") + name + ": a.example\r\n\r\n";
    ASSERT_EQ(parse(one, h).kind, ParseResult::Kind::complete);
    EXPECT_EQ(h.authority, "a.example");
    const std::string two = std::string("GET / HTTP/1.1\r\nHost: a\r\n") + name + ": b\r\n\r\n";
    EXPECT_EQ(parse(two, h).status, 400);  // more than one Host
    const std::string bad = std::string("GET / HTTP/1.1\r\n") + name + ": a b\r\n\r\n";
    EXPECT_EQ(parse(bad, h).status, 400);  // invalid Host value
  }
  // Not Host: a missing Host in HTTP/1.1.
  for (const char* line : {"Hostx: a", "Hos: a", "Host-Name: a", "Ho\x01t: a"}) {
    SCOPED_TRACE(line);
    EXPECT_EQ(parse(std::string("GET / HTTP/1.1\r\n") + line + "\r\n\r\n", h).status, 400);
  }
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost : a\r\n\r\n", h).status, 400);  // space before the colon
  // Split inside the name or before the colon: incomplete, then complete.
  const std::string whole = "GET / HTTP/1.1\r\nHOST:a\r\n\r\n";
  for (std::size_t cut = 16; cut < whole.size(); ++cut) {
    EXPECT_EQ(parse(std::string_view(whole).substr(0, cut), h).kind, ParseResult::Kind::incomplete) << cut;
  }
  ASSERT_EQ(parse(whole, h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.authority, "a");
  // Trailing whitespace of a value goes; a tab inside stays.
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\t2 \t \r\n\r\n", h).kind, ParseResult::Kind::complete);
  EXPECT_EQ(h.header("x-a"), "1\t2");
}

// Field names are scanned 16 bytes at a time for letters, digits and '-', then byte by byte by the
// token table: every byte, at every place of a name (inside the first 16 bytes, across, and in a
// tail shorter than 16 before the end of the input), is taken or refused as RFC 9110's tchar says.
TEST(RequestParserTest, EveryByteOfAFieldNameIsCheckedWhereverItIs) {
  const std::string tchar_punctuation = "!#$%&'*+-.^_`|~";
  RequestHead h;
  constexpr std::size_t kLength = 40;
  for (std::size_t at = 0; at < kLength; ++at) {
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      std::string name(kLength, 'n');
      name[at] = c;
      const std::string request = "GET / HTTP/1.1\r\nHost: h\r\n" + name + ":v\r\n\r\n";
      const bool alnum = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
      const bool tchar = alnum || (b != 0 && tchar_punctuation.find(c) != std::string::npos);
      const ParseResult r = parse(request, h);
      if (tchar) {
        ASSERT_EQ(r.kind, ParseResult::Kind::complete) << at << " " << b;
        EXPECT_EQ(h.header(name), "v") << at << " " << b;
      } else if (c == ':' && at > 0) {  // the name ends there; the rest is the value
        ASSERT_EQ(r.kind, ParseResult::Kind::complete) << at;
        EXPECT_EQ(h.header(name.substr(0, at)), name.substr(at + 1) + ":v");
      } else {
        EXPECT_EQ(r.status, 400) << at << " " << b;
      }
      // With nothing after the name, a short tail: incomplete or refused, never complete.
      const ParseResult cut = parse(std::string_view(request).substr(0, request.size() - 6), h);
      EXPECT_NE(cut.kind, ParseResult::Kind::complete) << at << " " << b;
    }
  }
}

TEST(RequestParserTest, AcceptsHostValuesOfTheUriGrammar) {
  // Host = uri-host [ ":" port ] (RFC 9110 7.2), uri-host = IP-literal / IPv4address / reg-name (RFC 3986)
  for (const char* host : {"", "example.com", "EXAMPLE.com", "example.com:8080", "example.com:", "127.0.0.1",
                           "127.0.0.1:8080", "[::1]", "[::1]:80", "[2001:db8:0:0:1:0:0:1]", "[::ffff:10.0.0.1]:1",
                           "[v7.abc:def]", "[V1a.x]", "a%20b", "%41", "a-b.c_d~e", "!$&'()*+,;=", "999.999.999.999",
                           ":80", "h:0123456789"}) {
    SCOPED_TRACE(host);
    RequestHead h;
    const std::string request = std::string("GET / HTTP/1.1\r\nHost: ") + host + "\r\n\r\n";
    expect_complete_in_every_split(request, h);
    EXPECT_EQ(h.authority, host);
  }
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

// Bytes arriving one at a time: no prefix of a bad request is taken for a request.
TEST_P(RequestParserErrorTest, NoPrefixIsComplete) {
  const std::string_view request = GetParam().request;
  for (std::size_t cut = 0; cut < request.size(); ++cut) {
    RequestHead h;
    ASSERT_NE(parse(request.substr(0, cut), h).kind, ParseResult::Kind::complete) << GetParam().name << " cut at " << cut;
  }
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
        ErrorCase{"absolute_ftp_scheme", "GET ftp://example.com/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_mailto_scheme", "GET mailto:a@example.com HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_urn_scheme", "GET urn:isbn:1 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_httpx_scheme", "GET httpx://a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_http_prefix_scheme", "GET htt://a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_no_scheme", "GET example.com/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_relative_path", "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_empty_scheme", "GET ://a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_digit_first_scheme", "GET 1http://a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_bad_scheme_char", "GET h_tp://a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_no_slashes", "GET http:a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_one_slash", "GET http:/a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_scheme_only", "GET http: HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_scheme_slashes_only", "GET http:// HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_empty_host", "GET http:///p HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_empty_host_port", "GET http://:80/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_empty_host_query", "GET http://?x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_userinfo", "GET http://user@a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_userinfo_password", "GET http://u:p@a/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_fragment_in_host", "GET http://a#f HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_bad_pct", "GET http://a%zz/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_short_pct", "GET http://a%4/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_unclosed_ipv6", "GET http://[::1/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_bad_ipv6", "GET http://[zz::1]/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_ipv4_in_brackets", "GET http://[1.2.3.4]/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_ipv6_bad_suffix", "GET http://[::1]x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_bad_port", "GET http://a:8x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_two_ports", "GET http://a:1:2/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_backslash_host", "GET http://a\\b/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_host_with_caret", "GET http://a^b/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_host_with_brace", "GET http://a{b}/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_ipvfuture_no_dot", "GET http://[v1]/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_ipvfuture_empty", "GET http://[v1.]/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        ErrorCase{"absolute_form_needs_host_in_http11", "GET http://a/ HTTP/1.1\r\n\r\n", 400},
        ErrorCase{"absolute_form_two_hosts", "GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
        ErrorCase{"absolute_form_invalid_host", "GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
        ErrorCase{"host_space", "GET / HTTP/1.1\r\nHost: a b/c\r\n\r\n", 400},
        ErrorCase{"host_inner_space", "GET / HTTP/1.1\r\nHost: exa mple.com\r\n\r\n", 400},
        ErrorCase{"host_tab", "GET / HTTP/1.1\r\nHost: a\tb\r\n\r\n", 400},
        ErrorCase{"host_slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
        ErrorCase{"host_question", "GET / HTTP/1.1\r\nHost: a?b\r\n\r\n", 400},
        ErrorCase{"host_at", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400},
        ErrorCase{"host_hash", "GET / HTTP/1.1\r\nHost: a#b\r\n\r\n", 400},
        ErrorCase{"host_backslash", "GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n", 400},
        ErrorCase{"host_quote", "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 400},
        ErrorCase{"host_angle", "GET / HTTP/1.1\r\nHost: <a>\r\n\r\n", 400},
        ErrorCase{"host_caret", "GET / HTTP/1.1\r\nHost: a^b\r\n\r\n", 400},
        ErrorCase{"host_backtick", "GET / HTTP/1.1\r\nHost: a`b\r\n\r\n", 400},
        ErrorCase{"host_pipe", "GET / HTTP/1.1\r\nHost: a|b\r\n\r\n", 400},
        ErrorCase{"host_brace", "GET / HTTP/1.1\r\nHost: a{b\r\n\r\n", 400},
        ErrorCase{"host_obs_text", "GET / HTTP/1.1\r\nHost: caf\xc3\xa9\r\n\r\n", 400},
        ErrorCase{"host_pct_bad", "GET / HTTP/1.1\r\nHost: %zz\r\n\r\n", 400},
        ErrorCase{"host_pct_short", "GET / HTTP/1.1\r\nHost: a%4\r\n\r\n", 400},
        ErrorCase{"host_pct_end", "GET / HTTP/1.1\r\nHost: a%\r\n\r\n", 400},
        ErrorCase{"host_two_colons", "GET / HTTP/1.1\r\nHost: a:80:80\r\n\r\n", 400},
        ErrorCase{"host_port_sign", "GET / HTTP/1.1\r\nHost: a:-1\r\n\r\n", 400},
        ErrorCase{"host_port_hex", "GET / HTTP/1.1\r\nHost: a:8a\r\n\r\n", 400},
        ErrorCase{"host_port_space", "GET / HTTP/1.1\r\nHost: a: 80\r\n\r\n", 400},
        ErrorCase{"host_unclosed_ipv6", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400},
        ErrorCase{"host_ipv6_junk", "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 400},
        ErrorCase{"host_ipv6_bad", "GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n", 400},
        ErrorCase{"host_ipv6_too_long", "GET / HTTP/1.1\r\nHost: [1:2:3:4:5:6:7:8:9]\r\n\r\n", 400},
        ErrorCase{"host_ipv6_empty", "GET / HTTP/1.1\r\nHost: []\r\n\r\n", 400},
        ErrorCase{"host_ipv6_port_junk", "GET / HTTP/1.1\r\nHost: [::1]:8a\r\n\r\n", 400},
        ErrorCase{"host_ipv6_nested", "GET / HTTP/1.1\r\nHost: [[::1]]\r\n\r\n", 400},
        ErrorCase{"host_ipvfuture_no_hex", "GET / HTTP/1.1\r\nHost: [v.x]\r\n\r\n", 400},
        ErrorCase{"host_ipvfuture_bad", "GET / HTTP/1.1\r\nHost: [v1.a/b]\r\n\r\n", 400},
        ErrorCase{"host_bracket_inside", "GET / HTTP/1.1\r\nHost: a[::1]\r\n\r\n", 400},
        ErrorCase{"host_close_bracket", "GET / HTTP/1.1\r\nHost: a]\r\n\r\n", 400},
        ErrorCase{"host_comma_space", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 400},
        ErrorCase{"two_hosts_case_differs", "GET / HTTP/1.1\r\nhost: a\r\nHOST: a\r\n\r\n", 400},
        ErrorCase{"invalid_host_in_http10", "GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400},
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
