// WebSocket over HTTP/2 (RFC 8441) over real sockets, on every transport: a raw HTTP/2 client
// (frames built by hand, the server's HPACK read by nghttp2's inflater) opens WebSockets with
// extended CONNECT on ws::websocket routes, the same routes HTTP/1.1 upgrades on, and checks the
// exact frames that come back: SETTINGS_ENABLE_CONNECT_PROTOCOL, the 200 and its headers, echoes in
// DATA frames, close handshakes that end the stream with END_STREAM both ways, resets, refusals, the
// pseudo-header rules, permessage-deflate and RFC 6455's violations.

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/h2_frames.h"
#include "support/h2_raw_connection.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/drain.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/websocket/upgrade.h"

using namespace std::chrono_literals;

// A namespace of its own: the unity build puts this file beside the HTTP/1.1 WebSocket tests.
namespace weft::websocket_http2_test {
namespace {

using test::RawH2Connection;
using test::ServerFrames;

// ---- WebSocket frames as a client writes them (masked) and as the server writes them

std::string ws_frame(std::uint8_t opcode, std::string_view payload, bool fin = true, std::uint8_t rsv = 0,
                     bool masked = true) {
  std::string out;
  out += static_cast<char>((fin ? 0x80 : 0) | (rsv << 4) | opcode);
  const std::size_t n = payload.size();
  const char mask_bit = masked ? static_cast<char>(0x80) : 0;
  if (n < 126) {
    out += static_cast<char>(mask_bit | static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    out += static_cast<char>(mask_bit | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  } else {
    out += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((std::uint64_t{n} >> shift) & 0xFF);
  }
  const char key[4] = {0x11, static_cast<char>(0xa2), 0x5c, 0x07};
  if (masked) out.append(key, 4);
  for (std::size_t i = 0; i < n; ++i) out += masked ? static_cast<char>(payload[i] ^ key[i % 4]) : payload[i];
  return out;
}

std::string code_bytes(std::uint16_t code) { return {static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)}; }

struct WsReply {
  std::uint8_t opcode;
  std::string payload;
  bool rsv1 = false;
  bool operator==(const WsReply&) const = default;
};

std::ostream& operator<<(std::ostream& os, const WsReply& r) {
  return os << "{op " << int(r.opcode) << (r.rsv1 ? " rsv1" : "") << ", " << r.payload.size()
            << " bytes: " << r.payload.substr(0, 32) << "}";
}

// The next whole server frame in `data` from `at` (advanced past it); nullopt while incomplete.
std::optional<WsReply> parse_reply(const std::string& data, std::size_t& at) {
  if (data.size() < at + 2) return std::nullopt;
  const auto b0 = static_cast<std::uint8_t>(data[at]);
  const auto b1 = static_cast<std::uint8_t>(data[at + 1]);
  EXPECT_EQ(b1 & 0x80, 0) << "a server's frames are not masked";
  std::size_t head = 2;
  std::uint64_t n = b1 & 0x7F;
  if (n >= 126) {
    const std::size_t ext = n == 126 ? 2 : 8;
    if (data.size() < at + 2 + ext) return std::nullopt;
    n = 0;
    for (std::size_t i = 0; i < ext; ++i) n = (n << 8) | static_cast<std::uint8_t>(data[at + 2 + i]);
    head += ext;
  }
  if (data.size() < at + head + n) return std::nullopt;
  WsReply r{static_cast<std::uint8_t>(b0 & 0x0F), data.substr(at + head, n), (b0 & 0x40) != 0};
  EXPECT_EQ(b0 & 0x80, 0x80) << "the server sends no fragments here";
  at += head + n;
  return r;
}

WsReply close_reply(std::uint16_t code) { return {8, code_bytes(code)}; }

// permessage-deflate as a client does it (RFC 7692 7.2.1): raw DEFLATE, sync flush, tail removed.
std::string deflate_message(std::string_view in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(in.size() + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  EXPECT_EQ(out.substr(out.size() - 4), std::string("\0\0\xff\xff", 4));
  out.resize(out.size() - 4);
  return out;
}

std::string inflate_message(std::string in) {
  in += std::string("\0\0\xff\xff", 4);
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, -15), Z_OK);
  std::string out(1 << 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rv = inflate(&z, Z_SYNC_FLUSH);
  EXPECT_TRUE(rv == Z_OK || rv == Z_STREAM_END) << rv;
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

// ---- HTTP/2 as the client writes it

constexpr std::uint32_t kWindow = 1 << 20;

// An extended CONNECT's head: :method CONNECT, :protocol, :scheme http, :path, :authority, version 13
// (unless `version` is empty), then `extra` (literal fields).
std::string connect_block(std::string_view path, std::string_view extra = {}, std::string_view version = "13",
                          std::string_view protocol = "websocket") {
  std::string block = test::literal(":method", "CONNECT") + test::literal(":protocol", protocol) + "\x86" +
                      test::literal(":path", path) + "\x01\x0ctest.example";
  if (!version.empty()) block += test::literal("sec-websocket-version", version);
  return block + std::string(extra);
}

std::string headers(std::uint32_t stream, std::string_view block, bool end_stream = false) {
  return test::frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0), stream,
                     block);
}

std::string data(std::uint32_t stream, std::string_view bytes, bool end_stream = false) {
  return test::frame(NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0, stream, bytes);
}

// A client connection: the preface with large windows (the server's answers never wait for a
// WINDOW_UPDATE), the server's SETTINGS read and acknowledged.
class Client {
 public:
  explicit Client(std::uint16_t port) : conn_(port, false) {
    EXPECT_TRUE(
        conn_.send(std::string(test::kH2Preface) +
                   test::frame(NGHTTP2_SETTINGS, 0, 0, test::setting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kWindow)) +
                   test::frame(NGHTTP2_WINDOW_UPDATE, 0, 0, test::u32(1 << 28))));
    EXPECT_TRUE(wait([](const ServerFrames& f) { return f.count(NGHTTP2_SETTINGS) > 0; }));
    EXPECT_TRUE(conn_.send(test::frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "")));
  }
  // The server's first SETTINGS frame's entries: id -> value.
  std::vector<std::pair<std::uint16_t, std::uint32_t>> server_settings() const {
    std::vector<std::pair<std::uint16_t, std::uint32_t>> out;
    for (const auto& f : frames.frames) {
      if (f.type != NGHTTP2_SETTINGS || (f.flags & NGHTTP2_FLAG_ACK) != 0) continue;
      for (std::size_t i = 0; i + 6 <= f.payload.size(); i += 6) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(f.payload.data() + i);
        out.emplace_back(static_cast<std::uint16_t>(p[0] << 8 | p[1]),
                         std::uint32_t{p[2]} << 24 | std::uint32_t{p[3]} << 16 | std::uint32_t{p[4]} << 8 | p[5]);
      }
      break;
    }
    return out;
  }
  bool send(std::string_view bytes) { return conn_.send(bytes); }
  // Reads until done(frames) (true), the server's EOF or 10 s of silence (false). PINGs are
  // acknowledged as they come (a drain's GOAWAY waits for one).
  template <class Done>
  bool wait(Done done) {
    return conn_.read_until(frames, [&](ServerFrames& f) {
      for (; pings_seen_ < f.frames.size(); ++pings_seen_) {
        const test::ServerFrame& p = f.frames[pings_seen_];
        if (p.type == NGHTTP2_PING && (p.flags & NGHTTP2_FLAG_ACK) == 0) {
          conn_.send(test::frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, p.payload));
        }
      }
      return done(f);
    });
  }
  bool eof() const { return conn_.eof(); }
  // Opens a WebSocket on `stream`: true once its 200 arrived.
  bool open(std::uint32_t stream, std::string_view path, std::string_view extra = {}) {
    if (!send(headers(stream, connect_block(path, extra)))) return false;
    if (!wait([&](const ServerFrames& f) { return f.status.count(stream) > 0 || f.resets.count(stream) > 0; })) {
      return false;
    }
    return frames.status[stream] == 200;
  }
  // Sends a WebSocket frame on `stream`.
  bool send_ws(std::uint32_t stream, std::string_view frame_bytes, bool end_stream = false) {
    return send(data(stream, frame_bytes, end_stream));
  }
  // The next WebSocket frame the server sent on `stream`.
  std::optional<WsReply> next(std::uint32_t stream) {
    std::optional<WsReply> r;
    wait([&](ServerFrames& f) { return (r = parse_reply(f.data[stream], read_at_[stream])).has_value(); });
    return r;
  }
  // Waits for the server's END_STREAM on `stream` (or its reset).
  bool wait_ended(std::uint32_t stream) {
    return wait([&](const ServerFrames& f) { return f.ended.count(stream) > 0 || f.resets.count(stream) > 0; });
  }
  ServerFrames frames;

 private:
  RawH2Connection conn_;
  std::map<std::uint32_t, std::size_t> read_at_;
  std::size_t pings_seen_ = 0;  // frames looked at for PINGs
};

// What the handlers saw end, in order: close codes, counted.
class Ends {
 public:
  void add(std::uint16_t code) {
    std::lock_guard lock(mutex_);
    codes_.push_back(code);
    changed_.notify_all();
  }
  // Waits (bounded: a failure guard, not a timing) until `n` ends were seen; their codes.
  std::vector<std::uint16_t> wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return codes_.size() >= n; });
    return codes_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::uint16_t> codes_;
};

class WebSocketHttp2Test : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 6));
    auto router = std::make_shared<http::Router>();
    const ws::Callbacks echo{.on_open =
                                 [](Context& ctx, const ws::Handshake& h) {
                                   ctx.write_and_flush(ws::Message::text(
                                       std::string(h.version == http::Version::http2 ? "h2 " : "h1 ") + h.target + "|" +
                                       h.subprotocol + "|" + std::string(h.header("x-user").value_or("-"))));
                                 },
                             .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); },
                             .on_close = [this](Context&, const ws::Message& m) { ends_.add(m.close_code()); }};
    ws::UpgradeOptions chat;
    chat.subprotocols = {"superchat", "chat"};
    ws::websocket(*router, "/echo", echo, chat);
    ws::UpgradeOptions small;
    small.connection.max_message_size = 64;
    ws::websocket(*router, "/small", echo, small);
    ws::UpgradeOptions deflate;
    deflate.deflate.enabled = true;
    ws::websocket(*router, "/deflate", echo, deflate);
    // A coroutine echo that closes on "bye" (the server's close first).
    ws::websocket(*router, "/co", [this](Connection<ws::Message>& c, const ws::Handshake& h) -> Task<> {
      co_await c.write(ws::Message::text(h.version == http::Version::http2 ? "co h2" : "co h1"));
      c.flush();
      for (;;) {
        ws::Message m = co_await c.read();
        if (m.is_close()) {
          ends_.add(m.close_code());
          co_return;
        }
        if (m.is_text() && m.view() == "bye") {
          co_await c.write(ws::Message::close(1000, "bye"));
          c.flush();
          continue;
        }
        co_await c.write(std::move(m));
        c.flush();
      }
    });
    // A WebSocket whose application stops reading at once.
    ws::websocket(*router, "/stall",
                  ws::Callbacks{.on_open =
                                    [](Context& ctx, const ws::Handshake&) {
                                      ctx.channel().set_auto_read(false);
                                      ctx.write_and_flush(ws::Message::text("stalled"));
                                    },
                                .on_close = echo.on_close});
    router->get("/plain", [](http::Request&) { return http::HttpResponse(200).body_view("plain"); });
    server_ = serve(router, true);
    without_setting_ = serve(router, false);
  }
  ChannelPtr serve(std::shared_ptr<http::Router> router, bool connect_protocol) {
    http2::Settings settings;
    settings.enable_connect_protocol = connect_protocol;
    return ServerBootstrap()
        .group(*group_)
        .child_handler([router, settings](Channel& ch) {
          ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
          ch.pipeline().add_last("router", router);
        })
        .bind(SocketAddress::loopback(0))
        .get();
  }
  void TearDown() override {
    server_->close().wait();  // (closed already after a drain)
    without_setting_->close().wait();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }
  std::uint16_t port() const { return server_->local_address().port(); }

  std::optional<EventLoopGroup> group_;
  ChannelPtr server_;
  ChannelPtr without_setting_;
  Ends ends_;
};

TEST_P(WebSocketHttp2Test, SettingsAdvertiseExtendedConnectAndTheSameRouteEchoesOverAStream) {
  Client c(port());
  const auto settings = c.server_settings();
  EXPECT_NE(std::find(settings.begin(), settings.end(), std::pair<std::uint16_t, std::uint32_t>{0x8, 1}),
            settings.end())
      << "SETTINGS_ENABLE_CONNECT_PROTOCOL = 1";
  ASSERT_TRUE(c.open(1, "/echo?room=7",
                     test::literal("sec-websocket-protocol", "chat, superchat") + test::literal("x-user", "ann")));
  EXPECT_EQ(c.frames.header(1, "sec-websocket-protocol"), "superchat");
  EXPECT_EQ(c.frames.header(1, "sec-websocket-accept"), std::nullopt) << "no accept over HTTP/2 (RFC 8441 5)";
  EXPECT_FALSE(c.frames.ended[1]) << "the 200 leaves the stream open";
  EXPECT_EQ(c.next(1), (WsReply{1, "h2 /echo?room=7|superchat|ann"}));
  ASSERT_TRUE(c.send_ws(1, ws_frame(1, "hello")));
  EXPECT_EQ(c.next(1), (WsReply{1, "hello"}));
  // A message over several DATA frames (16 KiB each at most), both ways.
  std::string big(40000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  const std::string wire = ws_frame(2, big);
  ASSERT_TRUE(c.send_ws(1, wire.substr(0, 10000)));
  ASSERT_TRUE(c.send_ws(1, wire.substr(10000, 16384)));
  ASSERT_TRUE(c.send_ws(1, wire.substr(26384)));
  EXPECT_EQ(c.next(1), (WsReply{2, big}));
  EXPECT_GE(c.frames.count(NGHTTP2_DATA, 1), 4u);
}

TEST_P(WebSocketHttp2Test, TwoWebSocketsAndAGetShareOneConnection) {
  Client c(port());
  ASSERT_TRUE(c.open(1, "/echo"));
  ASSERT_TRUE(c.open(3, "/co"));
  EXPECT_EQ(c.next(1), (WsReply{1, "h2 /echo||-"}));
  EXPECT_EQ(c.next(3), (WsReply{1, "co h2"}));
  // The frames of both, and a GET between them, in one write.
  ASSERT_TRUE(c.send(data(3, ws_frame(1, "three")) + headers(5, test::request_block("GET", "/plain"), true) +
                     data(1, ws_frame(2, "one"))));
  EXPECT_EQ(c.next(1), (WsReply{2, "one"}));
  EXPECT_EQ(c.next(3), (WsReply{1, "three"}));
  ASSERT_TRUE(c.wait_ended(5));
  EXPECT_EQ(c.frames.status[5], 200);
  EXPECT_EQ(c.frames.data[5], "plain");
  EXPECT_FALSE(c.frames.ended[1]);
  EXPECT_FALSE(c.frames.ended[3]);
  EXPECT_TRUE(c.frames.resets.empty());
}

TEST_P(WebSocketHttp2Test, CloseHandshakesEndTheStreamWithEndStreamBothWays) {
  Client c(port());
  // The client closes: the close is echoed, then END_STREAM; the client's END_STREAM ends it.
  ASSERT_TRUE(c.open(1, "/echo"));
  ASSERT_TRUE(c.next(1).has_value());
  ASSERT_TRUE(c.send_ws(1, ws_frame(8, code_bytes(1000) + "done")));
  EXPECT_EQ(c.next(1), close_reply(1000));
  ASSERT_TRUE(c.wait_ended(1));
  EXPECT_TRUE(c.frames.ended[1]);
  ASSERT_TRUE(c.send(data(1, "", true)));
  // The server closes ("bye" on /co): its close, the client's, then both ends.
  ASSERT_TRUE(c.open(3, "/co"));
  EXPECT_EQ(c.next(3), (WsReply{1, "co h2"}));
  ASSERT_TRUE(c.send_ws(3, ws_frame(1, "bye")));
  EXPECT_EQ(c.next(3), (WsReply{8, code_bytes(1000) + "bye"}));
  ASSERT_TRUE(c.send_ws(3, ws_frame(8, code_bytes(1000)), true));
  ASSERT_TRUE(c.wait_ended(3));
  EXPECT_TRUE(c.frames.ended[3]);
  EXPECT_EQ(ends_.wait_for(2), (std::vector<std::uint16_t>{1000, 1000}));
  // Nothing was reset, and the connection serves on.
  ASSERT_TRUE(c.send(headers(5, test::request_block("GET", "/plain"), true)));
  ASSERT_TRUE(c.wait_ended(5));
  EXPECT_EQ(c.frames.data[5], "plain");
  EXPECT_TRUE(c.frames.resets.empty()) << "stream " << c.frames.resets.begin()->first << " code "
                                       << c.frames.resets.begin()->second;
}

TEST_P(WebSocketHttp2Test, AClientResetOrTheConnectionsEndReachesTheHandlerAs1006) {
  {
    Client c(port());
    ASSERT_TRUE(c.open(1, "/echo"));
    ASSERT_TRUE(c.open(3, "/co"));
    ASSERT_TRUE(c.next(1).has_value());
    ASSERT_TRUE(c.next(3).has_value());
    ASSERT_TRUE(c.send(test::frame(NGHTTP2_RST_STREAM, 0, 1, test::u32(NGHTTP2_CANCEL))));
    EXPECT_EQ(ends_.wait_for(1), (std::vector<std::uint16_t>{1006}));
    // The other WebSocket is still served.
    ASSERT_TRUE(c.send_ws(3, ws_frame(1, "still")));
    EXPECT_EQ(c.next(3), (WsReply{1, "still"}));
  }  // the connection ends with the WebSocket on stream 3 open
  EXPECT_EQ(ends_.wait_for(2), (std::vector<std::uint16_t>{1006, 1006}));
}

TEST_P(WebSocketHttp2Test, ProtocolWithoutTheSettingOrOnAnotherMethodIsAStreamError) {
  {
    Client c(without_setting_->local_address().port());
    const auto settings = c.server_settings();
    for (const auto& [id, value] : settings) EXPECT_NE(id, 0x8) << "not advertised";
    ASSERT_TRUE(c.send(headers(1, connect_block("/echo"))));
    ASSERT_TRUE(c.wait([](const ServerFrames& f) { return f.resets.count(1) > 0; }));
    EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  }
  Client c(port());
  // :protocol on a GET; an extended CONNECT without :path.
  ASSERT_TRUE(c.send(headers(1, test::request_block("GET", "/echo", test::literal(":protocol", "websocket")), true)));
  ASSERT_TRUE(c.send(headers(3, test::literal(":method", "CONNECT") + test::literal(":protocol", "websocket") + "\x86" +
                                    "\x01\x0ctest.example" + test::literal("sec-websocket-version", "13"))));
  ASSERT_TRUE(c.wait([](const ServerFrames& f) { return f.resets.count(1) > 0 && f.resets.count(3) > 0; }));
  EXPECT_EQ(c.frames.resets[1], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  EXPECT_EQ(c.frames.resets[3], std::uint32_t{NGHTTP2_PROTOCOL_ERROR});
  // Stream errors: the connection serves on, and a plain CONNECT is not an extended one.
  ASSERT_TRUE(c.send(headers(5, test::request_block("GET", "/plain"), true)));
  ASSERT_TRUE(c.wait_ended(5));
  EXPECT_EQ(c.frames.data[5], "plain");
  EXPECT_FALSE(c.frames.goaway.has_value());
}

TEST_P(WebSocketHttp2Test, HandshakeRefusalsOverHttp2SayWhy) {
  Client c(port());
  struct Refusal {
    std::string block;
    int status;
    std::string body_part;
  };
  const std::vector<Refusal> refusals = {
      {connect_block("/echo", {}, ""), 426, "Version 13"},
      {connect_block("/echo", {}, "8"), 426, "Version 13"},
      {connect_block("/echo", {}, "13", "chat"), 400, ":protocol websocket"},
      {connect_block("/nowhere"), 404, ""},
  };
  std::uint32_t stream = 1;
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.status);
    ASSERT_TRUE(c.send(headers(stream, r.block)));
    ASSERT_TRUE(c.wait_ended(stream));
    EXPECT_EQ(c.frames.status[stream], r.status);
    EXPECT_NE(c.frames.data[stream].find(r.body_part), std::string::npos) << c.frames.data[stream];
    if (r.status == 426) {
      EXPECT_EQ(c.frames.header(stream, "sec-websocket-version"), "13");
    }
    stream += 2;
  }
  // The client's side of a refused stream may still send: it is dropped, the connection serves on.
  ASSERT_TRUE(c.send(data(1, std::string(1000, 'x'), true)));
  ASSERT_TRUE(c.send(headers(stream, test::request_block("GET", "/plain"), true)));
  ASSERT_TRUE(c.wait_ended(stream));
  EXPECT_EQ(c.frames.data[stream], "plain");
}

TEST_P(WebSocketHttp2Test, PermessageDeflateIsNegotiatedAndWorksOverAStream) {
  Client c(port());
  ASSERT_TRUE(
      c.open(1, "/deflate", test::literal("sec-websocket-extensions", "permessage-deflate; client_max_window_bits")));
  EXPECT_EQ(c.frames.header(1, "sec-websocket-extensions"), "permessage-deflate");
  ASSERT_TRUE(c.next(1).has_value());
  const std::string text(600, 'w');
  ASSERT_TRUE(c.send_ws(1, ws_frame(1, deflate_message(text), true, 4)));
  const std::optional<WsReply> echoed = c.next(1);
  ASSERT_TRUE(echoed.has_value());
  EXPECT_TRUE(echoed->rsv1) << "compressed";
  EXPECT_LT(echoed->payload.size(), 100u);
  EXPECT_EQ(inflate_message(echoed->payload), text);
}

// RFC 6455's violations get the close codes they get over HTTP/1.1, and the stream then ends.
TEST_P(WebSocketHttp2Test, Rfc6455ViolationsGetTheSameCloseCodesOverHttp2) {
  struct Case {
    const char* name;
    const char* path;
    std::string send;
    std::vector<WsReply> expect;
  };
  const std::vector<Case> cases = {
      {"ping answered", "/echo", ws_frame(9, "pp") + ws_frame(8, code_bytes(1000)), {{10, "pp"}, close_reply(1000)}},
      {"unmasked frame", "/echo", ws_frame(1, "x", true, 0, false), {close_reply(1002)}},
      {"reserved bit", "/echo", ws_frame(1, "x", true, 2), {close_reply(1002)}},
      {"reserved opcode", "/echo", ws_frame(3, ""), {close_reply(1002)}},
      {"invalid UTF-8", "/echo", ws_frame(1, "\xc0\xaf"), {close_reply(1007)}},
      {"message too big", "/small", ws_frame(2, std::string(65, 'b')), {close_reply(1009)}},
      {"invalid close code", "/echo", ws_frame(8, code_bytes(999)), {close_reply(1002)}},
  };
  Client c(port());
  std::uint32_t stream = 1;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    ASSERT_TRUE(c.open(stream, k.path));
    ASSERT_TRUE(c.next(stream).has_value());
    ASSERT_TRUE(c.send_ws(stream, k.send));
    for (const WsReply& want : k.expect) EXPECT_EQ(c.next(stream), want);
    ASSERT_TRUE(c.wait_ended(stream));
    EXPECT_TRUE(c.frames.ended[stream]) << "END_STREAM, not a reset";
    ASSERT_TRUE(c.send(data(stream, "", true)));
    stream += 2;
  }
  EXPECT_EQ(ends_.wait_for(cases.size()).size(), cases.size());
  EXPECT_TRUE(c.frames.resets.empty());
}

// A WebSocket that does not read holds its stream window and no more: its stream's window is not
// returned, the connection's is, and the other streams go on.
TEST_P(WebSocketHttp2Test, AWebSocketThatDoesNotReadStallsOnlyItsOwnStream) {
  Client c(port());
  ASSERT_TRUE(c.open(1, "/stall"));
  EXPECT_EQ(c.next(1), (WsReply{1, "stalled"}));
  // The start of a 100 000-byte message, as much as the stream's window (64 KiB - 1) lets in.
  std::string wire = ws_frame(2, std::string(100000, 's')).substr(0, 65535);
  for (std::size_t at = 0; at < wire.size(); at += 16384) ASSERT_TRUE(c.send_ws(1, wire.substr(at, 16384)));
  ASSERT_TRUE(c.wait([](const ServerFrames& f) {
    const auto it = f.window_updates.find(0);
    return it != f.window_updates.end() && it->second >= 65535;
  })) << "the connection's window comes back as bytes arrive";
  ASSERT_TRUE(c.open(3, "/echo"));
  EXPECT_EQ(c.next(3), (WsReply{1, "h2 /echo||-"}));
  ASSERT_TRUE(c.send_ws(3, ws_frame(1, "flowing")));
  EXPECT_EQ(c.next(3), (WsReply{1, "flowing"}));
  EXPECT_EQ(c.frames.window_updates.count(1), 0u) << "the stalled stream's does not";
  EXPECT_TRUE(c.frames.resets.empty());
}

// The connection's graceful end (a drain: GOAWAY) closes its open WebSockets with 1001; once their
// close handshakes end their streams, the connection closes.
TEST_P(WebSocketHttp2Test, ADrainClosesOpenWebSocketsWithGoingAway) {
  std::optional<Future<DrainReport>> drained;
  {
    Client c(port());
    ASSERT_TRUE(c.open(1, "/echo"));
    ASSERT_TRUE(c.open(3, "/co"));
    ASSERT_TRUE(c.next(1).has_value());
    ASSERT_TRUE(c.next(3).has_value());
    drained = drain_server(server_, 10s);
    for (const std::uint32_t stream : {1u, 3u}) {
      const std::optional<WsReply> close = c.next(stream);
      ASSERT_TRUE(close.has_value());
      EXPECT_EQ(close->opcode, 8);
      EXPECT_EQ(close->payload.substr(0, 2), code_bytes(1001));
      ASSERT_TRUE(c.send_ws(stream, ws_frame(8, code_bytes(1001)), true));
    }
    // Both streams end, then the connection: GOAWAY(NO_ERROR), then the server's FIN.
    EXPECT_FALSE(c.wait([](const ServerFrames&) { return false; }));
    EXPECT_TRUE(c.eof());
    EXPECT_TRUE(c.frames.ended[1]);
    EXPECT_TRUE(c.frames.ended[3]);
    EXPECT_EQ(c.frames.goaway.value_or(99), std::uint32_t{NGHTTP2_NO_ERROR});
    EXPECT_TRUE(c.frames.resets.empty());
  }  // the client's FIN: the server's linger ends
  ASSERT_TRUE(drained->wait_for(10s));
  EXPECT_EQ(drained->get().forced, 0u) << "the connection ended on its own";
  EXPECT_EQ(ends_.wait_for(2).size(), 2u);
}

WEFT_ON_EVERY_TRANSPORT(WebSocketHttp2Test);

}  // namespace
}  // namespace weft::websocket_http2_test
