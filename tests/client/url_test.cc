// client::Url: RFC 3986 parsing for http and https, table-driven, hostile inputs included.

#include "weft/client/url.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace weft::client {
namespace {

struct Good {
  std::string text;
  Scheme scheme;
  std::string host;
  std::uint16_t port;
  std::string target;
  std::string authority;
};

TEST(Url, ParsesWhatAClientFetches) {
  const std::vector<Good> cases = {
      {"http://example.com", Scheme::http, "example.com", 80, "/", "example.com"},
      {"http://example.com/", Scheme::http, "example.com", 80, "/", "example.com"},
      {"HTTPS://Example.COM/A/b", Scheme::https, "example.com", 443, "/A/b", "example.com"},
      {"http://127.0.0.1:8080/x?y=1", Scheme::http, "127.0.0.1", 8080, "/x?y=1", "127.0.0.1:8080"},
      {"https://[::1]:8443/a%20b?q=%2F#frag", Scheme::https, "::1", 8443, "/a%20b?q=%2F", "[::1]:8443"},
      {"http://[2001:db8::1]/", Scheme::http, "2001:db8::1", 80, "/", "[2001:db8::1]"},
      {"http://localhost:80/", Scheme::http, "localhost", 80, "/", "localhost"},  // the default port left out
      {"https://h:443", Scheme::https, "h", 443, "/", "h"},
      {"http://h:/p", Scheme::http, "h", 80, "/p", "h"},   // an empty port is the default (RFC 3986 3.2.3)
      {"http://h/p?", Scheme::http, "h", 80, "/p?", "h"},  // an empty query is still one
      {"http://h/a:b@c;d=e,f!$&'()*+~-._", Scheme::http, "h", 80, "/a:b@c;d=e,f!$&'()*+~-._", "h"},
      {"http://h?q", Scheme::http, "h", 80, "/?q", "h"},
      {"http://my_host.example:65535/", Scheme::http, "my_host.example", 65535, "/", "my_host.example:65535"},
  };
  for (const Good& c : cases) {
    SCOPED_TRACE(c.text);
    Url url = Url::parse(c.text);
    EXPECT_EQ(url.scheme(), c.scheme);
    EXPECT_EQ(url.host(), c.host);
    EXPECT_EQ(url.port(), c.port);
    EXPECT_EQ(url.target(), c.target);
    EXPECT_EQ(url.authority(), c.authority);
    EXPECT_EQ(Url::parse(url.to_string()), url);  // written back, it parses to the same
  }
  EXPECT_TRUE(Url::parse("https://[::1]/").host_is_ipv6());
  EXPECT_FALSE(Url::parse("https://127.0.0.1/").host_is_ipv6());
}

struct Bad {
  std::string text;
  UrlError::Part part;
};

TEST(Url, RefusesWithTheNameOfTheWrongPart) {
  const std::vector<Bad> cases = {
      {"", UrlError::Part::syntax},
      {"example.com/path", UrlError::Part::syntax},
      {"http:example.com", UrlError::Part::syntax},
      {"http:/example.com", UrlError::Part::syntax},
      {":/x", UrlError::Part::syntax},
      {"ftp://example.com/", UrlError::Part::scheme},
      {"file:///etc/passwd", UrlError::Part::scheme},
      {"javascript://x", UrlError::Part::scheme},
      {"http://user:pass@example.com/", UrlError::Part::userinfo},
      {"http://@example.com/", UrlError::Part::userinfo},
      {"http://evil.com@good.com/", UrlError::Part::userinfo},
      {"http:///path", UrlError::Part::host},
      {"http://:80/", UrlError::Part::host},
      {"http://exa mple.com/", UrlError::Part::host},
      {"http://exa%41mple.com/", UrlError::Part::host},
      {"http://ex\xc3\xa4mple.com/", UrlError::Part::host},
      {"http://[::1/", UrlError::Part::host},
      {"http://[::1]x/", UrlError::Part::host},
      {"http://[]/", UrlError::Part::host},
      {"http://[fe80::1%25eth0]/", UrlError::Part::host},
      {"http://[v1.fe]/", UrlError::Part::host},
      {"http://[127.0.0.1]/", UrlError::Part::host},
      {"http://h:0/", UrlError::Part::port},
      {"http://h:65536/", UrlError::Part::port},
      {"http://h:99999999999999999999/", UrlError::Part::port},
      {"http://h:-1/", UrlError::Part::port},
      {"http://h:+80/", UrlError::Part::port},
      {"http://h:8o/", UrlError::Part::port},
      {"http://h:80:80/", UrlError::Part::host},
      {"http://h/a b", UrlError::Part::path},
      {"http://h/a%2", UrlError::Part::path},
      {"http://h/a%zz", UrlError::Part::path},
      {"http://h/a%", UrlError::Part::path},
      {"http://h/a\r\nHost: evil", UrlError::Part::path},
      {std::string("http://h/a\0b", 12), UrlError::Part::path},
      {"http://h/\x7f", UrlError::Part::path},
      {"http://h/a\\b", UrlError::Part::path},
      {"http://h/?q=<script>", UrlError::Part::query},
      {"http://h/?q=%G0", UrlError::Part::query},
      {"http://h/?q=a b", UrlError::Part::query},
      {"http://h/#a b", UrlError::Part::fragment},
      {"http://h/" + std::string(Url::kMaxLength, 'a'), UrlError::Part::syntax},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      Url::parse(c.text);
      ADD_FAILURE() << "parsed";
    } catch (const UrlError& e) {
      EXPECT_EQ(e.part(), c.part) << e.what();
      const std::string message = e.what();
      EXPECT_EQ(message.find('\r'), std::string::npos);  // what the URL smuggles stays out of logs
      EXPECT_EQ(message.find('\n'), std::string::npos);
      EXPECT_LE(message.size(), 400u);
    }
  }
}

TEST(Url, ResolvesRedirectLocations) {
  const Url base = Url::parse("http://h:8080/a/b/c?q=1");
  EXPECT_EQ(base.resolve("https://other/x").to_string(), "https://other/x");
  EXPECT_EQ(base.resolve("//other:81/y").to_string(), "http://other:81/y");
  EXPECT_EQ(base.resolve("/root?z").to_string(), "http://h:8080/root?z");
  EXPECT_EQ(base.resolve("d").to_string(), "http://h:8080/a/b/d");
  EXPECT_EQ(base.resolve("?n=2").to_string(), "http://h:8080/a/b/c?n=2");
  EXPECT_EQ(base.resolve("").to_string(), "http://h:8080/a/b/c?q=1");
  EXPECT_THROW(base.resolve("ftp://x/"), UrlError);
  EXPECT_THROW(base.resolve("/a b"), UrlError);
  EXPECT_THROW(base.resolve("http://u@h/"), UrlError);
}

TEST(Url, TakesAnOriginFormTargetOnItsOrigin) {
  const Url origin = Url::parse("https://[::1]:8443/base?old=1");
  const Url url = origin.with_target("/x/y%20z?q=a/b?c#frag");
  EXPECT_EQ(url.to_string(), "https://[::1]:8443/x/y%20z?q=a/b?c");  // the fragment is dropped
  EXPECT_EQ(url, Url::parse("https://[::1]:8443/x/y%20z?q=a/b?c"));
  EXPECT_FALSE(origin.with_target("/p").has_query());
  EXPECT_EQ(origin.with_target("/p?").target(), "/p?");            // an empty query is still one
  EXPECT_EQ(origin.to_string(), "https://[::1]:8443/base?old=1");  // the origin's own is unchanged

  const std::vector<std::pair<std::string, UrlError::Part>> bad = {
      {"", UrlError::Part::syntax},
      {"*", UrlError::Part::syntax},
      {"http://other/x", UrlError::Part::syntax},  // absolute-form: the origin is this URL's
      {"p", UrlError::Part::syntax},
      {"/a b", UrlError::Part::path},
      {"/a%2", UrlError::Part::path},
      {"/a\r\nX: y", UrlError::Part::path},
      {"/a?b c", UrlError::Part::query},
      {"/" + std::string(Url::kMaxLength, 'a'), UrlError::Part::syntax},
  };
  for (const auto& [target, part] : bad) {
    SCOPED_TRACE(target.substr(0, 40));
    try {
      (void)origin.with_target(target);
      ADD_FAILURE() << "accepted";
    } catch (const UrlError& e) {
      EXPECT_EQ(e.part(), part);
    }
  }
}

}  // namespace
}  // namespace weft::client
