// Hostile HTTP/2 clients as raw frames over real sockets, on epoll, io_uring and blocking, over h2c
// and over TLS: the floods and attacks RFC 9113 §10.5 and the CVEs of 2023–2025 describe. Each is
// ended (GOAWAY(ENHANCE_YOUR_CALM) and the connection closed) or answered and bounded (431 for a
// header list past the limit), and the server keeps serving a new connection after it.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "support/h2_frames.h"
#include "support/h2_matrix.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::frame;
using test::literal;
using test::request_block;
using test::ServerFrames;
using test::u32;

constexpr std::uint8_t kHostileEH = NGHTTP2_FLAG_END_HEADERS;
constexpr std::uint8_t kHostileES = NGHTTP2_FLAG_END_STREAM;

std::string hostile_get(std::uint32_t id, std::string_view path = "/plaintext", std::string_view extra = {}) {
  return frame(NGHTTP2_HEADERS, kHostileEH | kHostileES, id, request_block("GET", path, extra));
}

// An HPACK literal with incremental indexing, new name, whose value may be long (RFC 7541 5.1's
// integer with a 7-bit prefix for its length).
std::string long_indexed_literal(std::string_view name, std::string_view value) {
  std::string out = std::string(1, '\x40') + static_cast<char>(name.size()) + std::string(name);
  std::size_t n = value.size();
  if (n < 127) {
    out += static_cast<char>(n);
  } else {
    out += static_cast<char>(127);
    for (n -= 127; n >= 128; n >>= 7) out += static_cast<char>((n & 0x7f) | 0x80);
    out += static_cast<char>(n);
  }
  return out + std::string(value);
}

struct HostileCase {
  const char* name;
  std::function<std::string()> frames;  // after the preface
  // Ended: GOAWAY(ENHANCE_YOUR_CALM) then close. Otherwise stream `stream` gets `status`, and the
  // connection serves a request on `stream + 2`.
  bool ended = true;
  std::uint32_t stream = 0;
  int status = 0;
};

std::vector<HostileCase> hostile_cases() {
  std::vector<HostileCase> c;
  c.push_back({"rapid reset (CVE-2023-44487): streams opened and reset at once", [] {
                 std::string f;
                 for (std::uint32_t id = 1; id < 2 * 1000; id += 2) {
                   f += frame(NGHTTP2_HEADERS, kHostileEH, id, request_block("GET", "/hold"));
                   f += frame(NGHTTP2_RST_STREAM, 0, id, u32(NGHTTP2_CANCEL));
                 }
                 return f;
               }});
  c.push_back({"MadeYouReset (CVE-2025-8671): frames that make the server reset streams", [] {
                 std::string f;
                 for (std::uint32_t id = 1; id < 2 * 1000; id += 2) {
                   f += frame(NGHTTP2_HEADERS, kHostileEH, id, request_block("GET", "/hold"));
                   f += frame(NGHTTP2_WINDOW_UPDATE, 0, id, u32(0x7fffffffu));  // past 2^31-1: the server resets
                 }
                 return f;
               }});
  c.push_back({"CONTINUATION flood (CVE-2024-27316): a header block that never ends", [] {
                 std::string f = frame(NGHTTP2_HEADERS, kHostileES, 1, request_block("GET", "/plaintext"));
                 for (int i = 0; i < 1000; ++i) f += frame(NGHTTP2_CONTINUATION, 0, 1, literal("x-flood", "0123456789"));
                 return f;
               }});
  c.push_back({"PING flood", [] {
                 std::string f;
                 for (int i = 0; i < 2000; ++i) f += frame(NGHTTP2_PING, 0, 0, "pingping");
                 return f;
               }});
  c.push_back({"SETTINGS flood", [] {
                 std::string f;
                 for (int i = 0; i < 2000; ++i) f += frame(NGHTTP2_SETTINGS, 0, 0, "");
                 return f;
               }});
  c.push_back({"empty DATA frames that do not end the stream", [] {
                 std::string f = frame(NGHTTP2_HEADERS, kHostileEH, 1, request_block("POST", "/plaintext"));
                 for (int i = 0; i < 2000; ++i) f += frame(NGHTTP2_DATA, 0, 1, "");
                 return f;
               }});
  c.push_back({"WINDOW_UPDATE flood on the connection", [] {
                 std::string f;
                 for (int i = 0; i < 2000; ++i) f += frame(NGHTTP2_WINDOW_UPDATE, 0, 0, u32(1));
                 return f;
               }});
  c.push_back({"HPACK bomb: one 4,000-byte table entry referenced 4,000 times", [] {
                 // Stream 1 puts the entry in the table; stream 3's block (spread over CONTINUATIONs)
                 // refers to it 4,000 times: 16 MB decoded from 4 KB.
                 std::string f = hostile_get(1, "/plaintext", long_indexed_literal("x-bomb", std::string(4000, 'b')));
                 const std::string refs(4000, '\xbe');  // index 62: the entry
                 const std::string block = request_block("GET", "/plaintext") + refs;
                 f += frame(NGHTTP2_HEADERS, kHostileES, 3, block.substr(0, 2000));
                 f += frame(NGHTTP2_CONTINUATION, kHostileEH, 3, block.substr(2000));
                 return f;
               },
               false, 3, 431});
  return c;
}

class Http2HostileTest : public test::H2MatrixTest {
 protected:
  void SetUp() override {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
    router->post("/plaintext", [](Context& ctx, HttpRequest&) { ctx.write(HttpResponse(200).body_view("Hello, World!")); });
    router->get("/hold", [](Context&, HttpRequest&) {});
    Settings settings;
    settings.idle_timeout = std::chrono::hours(1);
    serve(router, settings);
  }

  void run(const HostileCase& c) {
    SCOPED_TRACE(c.name);
    {
      test::RawH2Connection conn(port(), tls());
      ASSERT_TRUE(conn.is_open());
      // (A send may fail once the server has closed: what it answered before is read below.)
      conn.send(test::raw_preface() + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") + c.frames());
      ServerFrames f;
      if (c.ended) {
        conn.read_until(f, [](const ServerFrames&) { return false; });
        EXPECT_TRUE(conn.eof()) << "the connection must close";
        ASSERT_TRUE(f.goaway.has_value()) << "no GOAWAY";
        EXPECT_EQ(*f.goaway, std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM});
      } else {
        const std::uint32_t id = c.stream;
        ASSERT_TRUE(conn.read_until(f, [id](const ServerFrames& fr) { return fr.ended.count(id) || fr.resets.count(id) || fr.goaway; }));
        EXPECT_EQ(f.status[id], c.status) << "GOAWAY " << (f.goaway ? std::to_string(*f.goaway) : "none") << ": "
                                          << f.goaway_debug << "; reset " << (f.resets.count(id) ? f.resets[id] : 0);
        ASSERT_TRUE(conn.send(hostile_get(id + 2)));
        ASSERT_TRUE(conn.read_until(f, [id](const ServerFrames& fr) { return fr.ended.count(id + 2) || fr.goaway; }));
        EXPECT_EQ(f.status[id + 2], 200) << "the connection serves on";
      }
    }
    // A new connection is served.
    test::RawH2Connection next(port(), tls());
    ASSERT_TRUE(next.is_open());
    ASSERT_TRUE(next.send(test::raw_preface() + hostile_get(1)));
    ServerFrames f;
    ASSERT_TRUE(next.read_until(f, [](const ServerFrames& fr) { return fr.ended.count(1) || fr.goaway; }));
    EXPECT_EQ(f.status[1], 200);
  }
};

TEST_P(Http2HostileTest, EachAttackIsEndedOrBoundedAndTheServerServesOn) {
  for (const HostileCase& c : hostile_cases()) run(c);
}

WEFT_H2_ON_EVERY_TRANSPORT(Http2HostileTest);

}  // namespace
}  // namespace weft::http2
