// The HTTP/2 client's bound on the header lists it receives (ClientSettings::max_header_list_size),
// against a scripted hostile server (support/h2_scripted_server.h) over sockets, on every
// transport, h2c and h2 over TLS: the client advertises SETTINGS_MAX_HEADER_LIST_SIZE; an HPACK
// bomb (~128 KiB of HEADERS and 7 CONTINUATIONs whose fields all reference one 4,000-byte
// dynamic-table entry: ~127,000 fields, ~500 MiB decoded) as a response head or as trailers, whole
// or streamed, resets its stream with RST_STREAM, fails the request with ClientStreamError, and
// leaves nothing of it held; the connection goes on serving other requests.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "support/h2_frames.h"
#include "support/h2_scripted_server.h"
#include "support/transports.h"
#include "weft/client/http2_connection.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft::http2 {
namespace {

using client::Http2Connection;

constexpr std::size_t kBombEntry = 4000;       // the dynamic-table entry every field refers to
constexpr std::size_t kBombBlock = 8 * 16384;  // HEADERS + 7 CONTINUATIONs of the default frame size

// An HPACK literal with incremental indexing: "x-bomb" and 4,000 bytes (it takes dynamic index 62).
std::string bomb_entry() {
  // The value's length, 4000, as an HPACK integer with a 7-bit prefix: 127, then 3873 in 7-bit groups.
  return std::string("\x40\x06x-bomb\x7f\xa1\x1e", 11) + std::string(kBombEntry, 'b');
}

// A header block of `prefix`, the entry, then index 62 (0xbe) until it is kBombBlock bytes, sent as
// HEADERS and CONTINUATIONs of 16,384 bytes on `stream`.
std::string bomb_frames(std::uint32_t stream, std::string_view prefix, bool end_stream) {
  std::string block = std::string(prefix) + bomb_entry();
  block.resize(kBombBlock, '\xbe');
  std::string out;
  for (std::size_t at = 0; at < block.size(); at += 16384) {
    const bool first = at == 0, last = at + 16384 >= block.size();
    std::uint8_t flags = last ? NGHTTP2_FLAG_END_HEADERS : 0;
    if (first && end_stream) flags |= NGHTTP2_FLAG_END_STREAM;
    out += test::frame(first ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, flags, stream, std::string_view(block).substr(at, 16384));
  }
  return out;
}

// ":status 200" and END_STREAM: the answer to the requests after the hostile one.
std::string plain_ok(std::uint32_t stream) {
  return test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, "\x88");
}

class Http2ClientHeaderLimitTest : public test::TransportTest {
 protected:
  ChannelPtr hostile_server(bool tls, std::function<std::string(std::uint32_t stream)> answer) {
    test::ScriptedH2Script script;
    script.answer = std::move(answer);
    return test::serve_scripted_h2(group_, tls, std::move(script), log_);
  }
  std::shared_ptr<Http2Connection> connect(const ChannelPtr& server, bool tls, ClientSettings settings = {}) {
    return Http2Connection::connect(group_, server->local_address(),
                                    test::scripted_h2_client_options(tls, std::move(settings)))
        .get();
  }
  void reset_log() { log_ = std::make_shared<test::ScriptedH2Log>(); }
  std::uint32_t advertised_header_list() {
    const auto settings = log_->snapshot().settings;
    const auto it = settings.find(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE);
    return it == settings.end() ? 0 : it->second;
  }
  bool stream1_reset() {
    return log_->wait_for(30s, [](const test::ScriptedH2Seen& s) { return s.resets.count(1) != 0; });
  }

  std::shared_ptr<test::ScriptedH2Log> log_ = std::make_shared<test::ScriptedH2Log>();
  EventLoopGroup group_{transport(), loops(2, 6)};
};

TEST_P(Http2ClientHeaderLimitTest, AnHpackBombAsAResponseHeadFailsTheRequestAndTheConnectionGoesOn) {
  for (const bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "h2 over TLS" : "h2c");
    reset_log();
    ChannelPtr server = hostile_server(tls, [](std::uint32_t stream) {
      return stream == 1 ? bomb_frames(stream, "\x88", /*end_stream=*/true) : plain_ok(stream);
    });
    std::shared_ptr<Http2Connection> client = connect(server, tls);
    Future<http::HttpClientResponse> bombed = client->request(http::HttpClientRequest("GET", "/bomb"));
    ASSERT_TRUE(bombed.wait_for(30s));
    // (The client's SETTINGS precede its request: the server had read them before it answered.)
    EXPECT_EQ(advertised_header_list(), ClientSettings{}.max_header_list_size);
    try {
      bombed.get();
      ADD_FAILURE() << "a response head of ~127,000 fields was accepted";
    } catch (const ClientStreamError& e) {
      EXPECT_THAT(e.what(), HasSubstr("max_header_list_size"));
      EXPECT_FALSE(e.refused());
    }
    ASSERT_TRUE(stream1_reset()) << "the client did not reset the stream";

    Future<http::HttpClientResponse> after = client->request(http::HttpClientRequest("GET", "/after"));
    ASSERT_TRUE(after.wait_for(30s));
    EXPECT_EQ(after.get().status(), 200);
    client->close().wait();
    server->close().wait();
  }
}

// A streamed request to the bomb: the response's head (a header list of `head`), its DATA "hello",
// then the trailers as the bomb. Returns what the stream showed; `held` the trailer bytes it kept.
Task<std::string> streamed_bomb(Http2Connection& client, std::size_t* held) {
  ClientStream s = client.open("GET", "/bomb", {});
  s.end();
  std::string what;
  try {
    what = std::to_string(co_await s.response());
    while (std::optional<ByteBuf> chunk = co_await s.read()) what += " " + chunk->to_string();
    what += " ended";
  } catch (const ClientStreamError& e) {
    what += std::string(" failed: ") + e.what();
  }
  for (const auto& f : s.trailers()) *held += f.name.size() + f.value.size() + 32;
  co_return what;
}

TEST_P(Http2ClientHeaderLimitTest, AnHpackBombAsStreamedTrailersFailsTheStreamAndKeepsNoneOfThem) {
  for (const bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "h2 over TLS" : "h2c");
    reset_log();
    ChannelPtr server = hostile_server(tls, [](std::uint32_t stream) {
      if (stream != 1) return plain_ok(stream);
      return test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream, "\x88") +
             test::frame(NGHTTP2_DATA, 0, stream, "hello") + bomb_frames(stream, "", /*end_stream=*/true);
    });
    std::shared_ptr<Http2Connection> client = connect(server, tls);
    std::size_t held = 0;
    Future<std::string> done = spawn(client->loop(), streamed_bomb(*client, &held));
    ASSERT_TRUE(done.wait_for(30s));
    EXPECT_THAT(done.get(), HasSubstr("200 hello failed: "));
    EXPECT_THAT(done.get(), HasSubstr("max_header_list_size"));
    EXPECT_LE(held, ClientSettings{}.max_header_list_size) << "trailer bytes the client kept";
    ASSERT_TRUE(stream1_reset()) << "the client did not reset the stream";

    Future<http::HttpClientResponse> after = client->request(http::HttpClientRequest("GET", "/after"));
    ASSERT_TRUE(after.wait_for(30s));
    EXPECT_EQ(after.get().status(), 200);
    client->close().wait();
    server->close().wait();
  }
}

// A head within the field count a ResponseHead holds but past a configured budget: three fields of
// 4,000 bytes against 8 KiB, whole (stream 1) and streamed (stream 3).
Task<std::string> streamed_head(Http2Connection& client) {
  ClientStream s = client.open("GET", "/big-head", {});
  s.end();
  try {
    co_return std::to_string(co_await s.response());
  } catch (const ClientStreamError& e) {
    co_return std::string("failed: ") + e.what();
  }
}

TEST_P(Http2ClientHeaderLimitTest, AHeadPastTheConfiguredLimitFailsWholeAndStreamed) {
  ChannelPtr server = hostile_server(false, [](std::uint32_t stream) {
    // Literals without indexing; the values' length, 4,000, as a multi-byte HPACK integer.
    std::string fields = "\x88";
    for (const char* name : {"x-a", "x-b", "x-c"}) {
      fields += std::string("\x00\x03", 2) + name + std::string("\x7f\xa1\x1e", 3) + std::string(4000, 'v');
    }
    return test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, fields);
  });
  ClientSettings settings;
  settings.max_header_list_size = 8192;
  std::shared_ptr<Http2Connection> client = connect(server, false, settings);
  Future<http::HttpClientResponse> whole = client->request(http::HttpClientRequest("GET", "/big-head"));
  ASSERT_TRUE(whole.wait_for(30s));
  EXPECT_EQ(advertised_header_list(), 8192u);  // (read before the request was answered)
  EXPECT_THROW(whole.get(), ClientStreamError);
  Future<std::string> streamed = spawn(client->loop(), streamed_head(*client));
  ASSERT_TRUE(streamed.wait_for(30s));
  EXPECT_THAT(streamed.get(), HasSubstr("failed: "));
  EXPECT_THAT(streamed.get(), HasSubstr("max_header_list_size"));
  client->close().wait();
  server->close().wait();
}

WEFT_ON_EVERY_TRANSPORT(Http2ClientHeaderLimitTest);

}  // namespace
}  // namespace weft::http2
