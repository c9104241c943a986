#include "weft/codec/http1/client_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace weft::http {
namespace {

struct Fixture {
  Fixture() { ch.pipeline().add_last("http", std::make_shared<ClientCodec>()); }
  std::string sent() {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  }
  EmbeddedChannel ch;
};

TEST(ClientCodecTest, EncodesRequests) {
  Fixture f;
  f.ch.write_outbound(HttpClientRequest("GET", "/x?y=1").header("Host", "h"));
  EXPECT_EQ(f.sent(), "GET /x?y=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  f.ch.write_outbound(HttpClientRequest("POST", "/p").header("Host", "h").body(ByteBuf::copy_of("abc")));
  EXPECT_EQ(f.sent(), "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_THROW(HttpClientRequest("GET", "/").header("X", "a\r\nb"), std::invalid_argument);
}

// The value scan reads 16 bytes at a time and its tail in one overlapping load: a control at any
// position of any length is refused, a tab anywhere is not.
TEST(ClientCodecTest, AControlAnywhereInAHeaderValueIsRefused) {
  for (std::size_t length = 1; length <= 48; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (char bad : {'\r', '\n', '\0', '\x01', '\x7f'}) {
        std::string value(length, 'v');
        value[at] = bad;
        EXPECT_THROW(HttpClientRequest("GET", "/").header("X", value), std::invalid_argument)
            << "length " << length << ", at " << at << ", byte " << int(bad);
      }
      std::string tabbed(length, 'v');
      tabbed[at] = '\t';
      EXPECT_NO_THROW(HttpClientRequest("GET", "/").header("X", tabbed)) << "length " << length << ", at " << at;
    }
  }
}

// A name is checked 16 bytes (or two overlapping 8 or 4) at a time for the usual bytes, then by
// the token table: every byte value at every position of every length up to 40 is taken exactly
// when it is a token byte (RFC 9110 5.6.2), in HttpClientRequest and HttpResponse alike.
TEST(ClientCodecTest, ANameIsTakenExactlyWhenEveryByteIsATokenByte) {
  const std::string_view specials = "!#$%&'*+-.^_`|~";
  auto is_token_byte = [&](unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           specials.find(static_cast<char>(c)) != std::string_view::npos;
  };
  for (std::size_t length = 1; length <= 40; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int c = 0; c < 256; ++c) {
        std::string name(length, ' ');
        for (std::size_t i = 0; i < length; ++i) name[i] = "Xa-9z"[i % 5];
        name[at] = static_cast<char>(c);
        const bool token = is_token_byte(static_cast<unsigned char>(c));
        bool taken = true;
        try {
          HttpClientRequest("GET", "/").header(name, "v");
        } catch (const std::invalid_argument&) {
          taken = false;
        }
        ASSERT_EQ(taken, token) << "length " << length << ", at " << at << ", byte " << c;
        taken = true;
        try {
          HttpResponse(200).header(name, "v");
        } catch (const std::invalid_argument&) {
          taken = false;
        }
        ASSERT_EQ(taken, token) << "response: length " << length << ", at " << at << ", byte " << c;
      }
    }
  }
  EXPECT_THROW(HttpClientRequest("GET", "/").header("", "v"), std::invalid_argument);
}

TEST(ClientCodecTest, StreamedRequestBodiesAreFramedChunkedOrSized) {
  Fixture f;
  HttpClientRequest chunked("POST", "/up");
  chunked.header("Host", "h").stream_body(std::nullopt);
  f.ch.write_outbound(std::move(chunked));
  EXPECT_EQ(f.sent(), "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
  f.ch.write_outbound(ByteBuf::copy_of("hello"));
  f.ch.write_outbound(ByteBuf());  // an empty piece is no chunk (it would end the body)
  f.ch.write_outbound(ByteBuf::copy_of(std::string(26, 'x')));
  f.ch.write_outbound(RequestBodyEnd{});
  EXPECT_EQ(f.sent(), "5\r\nhello\r\n1a\r\n" + std::string(26, 'x') + "\r\n0\r\n\r\n");
  // The next request may follow; one written before a streamed body's end is refused.
  HttpClientRequest sized("PUT", "/s");
  sized.header("Host", "h").stream_body(4);
  f.ch.write_outbound(std::move(sized));
  EXPECT_EQ(f.sent(), "PUT /s HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n");
  f.ch.write_outbound(ByteBuf::copy_of("ab"));
  try {  // refused: whether it reaches the caller or the pipeline's exception, no byte of it leaves
    f.ch.write_outbound(HttpClientRequest("GET", "/early").header("Host", "h"));
    f.ch.check_exception();
  } catch (const std::exception&) {
  }
  EXPECT_EQ(f.sent(), "ab");
  f.ch.write_outbound(ByteBuf::copy_of("cd"));  // the declared length's last byte ends the body
  EXPECT_EQ(f.sent(), "cd");
  f.ch.write_outbound(RequestBodyEnd{});  // taken and ignored
  f.ch.write_outbound(HttpClientRequest("GET", "/next").header("Host", "h"));
  EXPECT_EQ(f.sent(), "GET /next HTTP/1.1\r\nHost: h\r\n\r\n");
}

TEST(ClientCodecTest, AddsHostWhenTheRequestHasNone) {
  {
    Fixture f;  // an embedded channel has no remote address: Host is empty, as RFC 9110 asks then
    f.ch.write_outbound(HttpClientRequest("GET", "/a"));
    EXPECT_EQ(f.sent(), "GET /a HTTP/1.1\r\nHost: \r\n\r\n");
    f.ch.write_outbound(HttpClientRequest("GET", "/b").header("host", "given"));  // any case counts
    EXPECT_EQ(f.sent(), "GET /b HTTP/1.1\r\nhost: given\r\n\r\n");
  }
  EmbeddedChannel ch;
  ch.pipeline().add_last("http", std::make_shared<ClientCodec>(Limits{}, "api.example:8443"));
  auto sent = [&ch] {
    std::string all;
    while (auto b = ch.read_outbound<ByteBuf>()) all += b->to_string();
    return all;
  };
  ch.write_outbound(HttpClientRequest("GET", "/c").header("Accept", "*/*"));
  EXPECT_EQ(sent(), "GET /c HTTP/1.1\r\nHost: api.example:8443\r\nAccept: */*\r\n\r\n");
  // An absolute-form target names its own authority (what a proxy is asked for); userinfo is dropped.
  ch.write_outbound(HttpClientRequest("GET", "http://user:pw@origin.example:81/p?q=http://x"));
  EXPECT_EQ(sent(), "GET http://user:pw@origin.example:81/p?q=http://x HTTP/1.1\r\nHost: origin.example:81\r\n\r\n");
  ch.write_outbound(HttpClientRequest("GET", "https://bare.example"));
  EXPECT_EQ(sent(), "GET https://bare.example HTTP/1.1\r\nHost: bare.example\r\n\r\n");
  EXPECT_THROW(ClientCodec(Limits{}, "evil\r\nX-Injected: 1"), std::invalid_argument);
}

TEST(ClientCodecTest, DecodesPipelinedResponsesInOrderAtEverySplit) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nsec\r\n3\r\nond\r\n0\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"  // answer to a HEAD: no body follows
      "HTTP/1.1 204 No Content\r\n\r\n";
  for (std::size_t cut = 1; cut < wire.size(); cut += 7) {
    Fixture f;
    for (const char* m : {"GET", "POST", "HEAD", "DELETE"}) f.ch.write_outbound(HttpClientRequest(m, "/").header("Host", "h"));
    f.sent();
    f.ch.write_inbound(ByteBuf::copy_of(wire.substr(0, cut)));
    f.ch.write_inbound(ByteBuf::copy_of(wire.substr(cut)));
    auto a = f.ch.read_inbound<HttpClientResponse>();
    auto b = f.ch.read_inbound<HttpClientResponse>();
    auto c = f.ch.read_inbound<HttpClientResponse>();
    auto d = f.ch.read_inbound<HttpClientResponse>();
    ASSERT_TRUE(a && b && c && d) << cut;
    EXPECT_EQ(a->status(), 200);
    EXPECT_EQ(a->body_view(), "first");
    EXPECT_EQ(b->status(), 201);
    EXPECT_EQ(b->body_view(), "second");
    EXPECT_EQ(c->status(), 200);
    EXPECT_EQ(c->body_view(), "");
    EXPECT_EQ(d->status(), 204);
  }
}

TEST(ClientCodecTest, BodyWithoutFramingEndsWithTheConnection) {
  Fixture f;
  f.ch.write_outbound(HttpClientRequest("GET", "/").header("Host", "h"));
  f.ch.write_inbound(ByteBuf::copy_of("HTTP/1.0 200 OK\r\n\r\nuntil "));
  f.ch.write_inbound(ByteBuf::copy_of("close"));
  EXPECT_EQ(f.ch.inbound_count(), 0u);
  f.ch.close();
  auto r = f.ch.read_inbound<HttpClientResponse>();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body_view(), "until close");
  EXPECT_FALSE(r->keep_alive());
}

TEST(ClientCodecTest, MalformedResponseFailsAndCloses) {
  Fixture f;
  f.ch.write_outbound(HttpClientRequest("GET", "/").header("Host", "h"));
  f.ch.write_inbound(ByteBuf::copy_of("HTTP/1.1 2x0 OK\r\n\r\n"));
  EXPECT_THROW(f.ch.check_exception(), HttpProtocolError);
  EXPECT_FALSE(f.ch.is_open());
}

// The status code is three digits, 100 to 999; anything else in its place is refused.
TEST(ClientCodecTest, StatusCodesAreThreeDigitsFrom100) {
  const Limits limits;
  for (const auto& [code, status] :
       std::vector<std::pair<std::string, int>>{{"100", 100}, {"200", 200}, {"404", 404}, {"599", 599}, {"999", 999}}) {
    ResponseHead head;
    const std::string text = "HTTP/1.1 " + code + " X\r\n\r\n";
    ParseResult r = parse_response_head(text, head, limits);
    ASSERT_EQ(r.kind, ParseResult::Kind::complete) << code;
    EXPECT_EQ(head.status, status);
  }
  for (const std::string code : {"099", "000", "2x0", "20x", "-20", "+20", " 20", "2 0", "20:", "/00",
                                 "2\x80"
                                 "0"}) {
    ResponseHead head;
    const std::string text = "HTTP/1.1 " + code + " X\r\n\r\n";
    ParseResult r = parse_response_head(text, head, limits);
    EXPECT_EQ(r.kind, ParseResult::Kind::error) << code;
  }
}

// Content-Length: plain digits (the common case), a repeated equal value, and each refused form.
TEST(ClientCodecTest, ContentLengthIsDigitsAndOneValue) {
  const Limits limits;
  auto parse = [&limits](const std::string& fields, ResponseHead& head) {
    return parse_response_head("HTTP/1.1 200 OK\r\n" + fields + "\r\n", head, limits);
  };
  for (const auto& [fields, length] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"Content-Length: 13\r\n", 13},
           {"content-length:0\r\n", 0},
           {"Content-Length: 5\r\nContent-Length: 5\r\n", 5},
           {"Content-Length: 5, 5\r\n", 5},
           {"Content-Length: 18446744073709551\r\n", 18446744073709551ull}}) {
    ResponseHead head;
    ASSERT_EQ(parse(fields, head).kind, ParseResult::Kind::complete) << fields;
    ASSERT_TRUE(head.content_length) << fields;
    EXPECT_EQ(*head.content_length, length) << fields;
  }
  for (const std::string fields :
       {"Content-Length: 5\r\nContent-Length: 6\r\n", "Content-Length: 5, 6\r\n", "Content-Length: \r\n",
        "Content-Length: -1\r\n", "Content-Length: +1\r\n", "Content-Length: 1x\r\n",
        "Content-Length: 12345678901234567890\r\n", "Content-Length: 5\r\nContent-Length: 05, 6\r\n"}) {
    ResponseHead head;
    EXPECT_EQ(parse(fields, head).kind, ParseResult::Kind::error) << fields;
  }
}

// Found by fuzz_http1_response: two 204s for one request both reached the application.
TEST(ClientCodecTest, AResponseToNoRequestFailsAndCloses) {
  Fixture f;
  f.ch.write_outbound(HttpClientRequest("GET", "/").header("Host", "h"));
  f.sent();
  f.ch.write_inbound(ByteBuf::copy_of("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"));
  auto answer = f.ch.read_inbound<HttpClientResponse>();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status(), 204);
  EXPECT_FALSE(f.ch.read_inbound<HttpClientResponse>()) << "the second answers no request";
  EXPECT_THROW(f.ch.check_exception(), HttpProtocolError);
  EXPECT_FALSE(f.ch.is_open());
}

TEST(ClientCodecTest, TalksToTheServerCodec) {
  // client pipeline -> bytes -> server pipeline -> bytes -> client pipeline
  EmbeddedChannel server;
  auto router = std::make_shared<Router>();
  router->post("/echo", [](Context& ctx, HttpRequest& req) {
    ctx.write(HttpResponse(200).body(ByteBuf::copy_of(req.body_view())));
  });
  server.pipeline().add_last("http", std::make_shared<ServerCodec>());
  server.pipeline().add_last("router", router);
  Fixture client;
  for (int i = 0; i < 3; ++i) {
    client.ch.write_outbound(
        HttpClientRequest("POST", "/echo").header("Host", "h").body(ByteBuf::copy_of("msg" + std::to_string(i))));
  }
  server.write_inbound(ByteBuf::copy_of(client.sent()));
  std::string answer;
  while (auto b = server.read_outbound<ByteBuf>()) answer += b->to_string();
  client.ch.write_inbound(ByteBuf::copy_of(answer));
  for (int i = 0; i < 3; ++i) {
    auto r = client.ch.read_inbound<HttpClientResponse>();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body_view(), "msg" + std::to_string(i));
  }
}

}  // namespace
}  // namespace weft::http
