// The WebSocket client (client::HttpClient::websocket, ws::ClientUpgrade, ws::Codec's client role).
// The codec alone on an EmbeddedChannel (masking, the close handshake as a client, idle keepalive
// pings on the manual clock); then over real sockets on every transport: the weft client against the
// weft server (echo, close codes both ways, subprotocols, permessage-deflate's parameters,
// backpressure), against scripted raw servers (each handshake flaw its typed error, a masked frame,
// bytes right behind the 101), and against python3-websockets' and node's ws servers.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client_script.h"
#include "support/blocking_client.h"
#include "support/random_port.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/embedded_channel.h"
#include "weft/channel/events.h"
#include "weft/client/http_client.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/tls/tls_error.h"
#include "weft/codec/websocket/client_upgrade.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/upgrade.h"

using namespace std::chrono_literals;

// Options and scripts leave their rarely used fields to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace weft::ws_client_test {
namespace {

using test::from_message;
using test::open_error;
using test::Outcome;
using test::run_script;
using test::Script;
using test::to_message;

// ---- the codec's client role, alone

// A server's frame (unmasked), or a masked one with `masked`.
std::string server_frame(std::uint8_t first_byte, std::string_view payload, bool masked = false) {
  std::string out;
  out += static_cast<char>(first_byte);
  out += static_cast<char>((masked ? 0x80 : 0) | static_cast<int>(payload.size()));  // < 126 here
  const char key[4] = {1, 2, 3, 4};
  if (masked) out.append(key, 4);
  for (std::size_t i = 0; i < payload.size(); ++i)
    out += masked ? static_cast<char>(payload[i] ^ key[i % 4]) : payload[i];
  return out;
}

struct SentFrame {
  std::uint8_t first_byte = 0;
  bool masked = false;
  std::string key;
  std::string payload;  // unmasked
};

// The frame the codec wrote (one buffer, a payload under 126 bytes).
SentFrame decode_sent(const ByteBuf& buf) {
  const std::string_view b = buf.view();
  SentFrame f;
  f.first_byte = static_cast<std::uint8_t>(b[0]);
  f.masked = (static_cast<std::uint8_t>(b[1]) & 0x80) != 0;
  const std::size_t n = static_cast<std::uint8_t>(b[1]) & 0x7F;
  std::size_t at = 2;
  if (f.masked) {
    f.key = std::string(b.substr(2, 4));
    at = 6;
  }
  f.payload = std::string(b.substr(at, n));
  if (f.masked) {
    for (std::size_t i = 0; i < f.payload.size(); ++i) f.payload[i] = static_cast<char>(f.payload[i] ^ f.key[i % 4]);
  }
  return f;
}

std::shared_ptr<ws::Codec> client_codec(ws::Options options = {}) {
  return std::make_shared<ws::Codec>(ws::Codec::Role::client, options, ByteBuf(), std::nullopt);
}

TEST(WebSocketClientCodec, MasksEveryFrameWithAFreshKey) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("ws", client_codec());
  ch.write_outbound(ws::Message::text("hello"));
  ch.write_outbound(ws::Message::text("hello"));
  const auto a = decode_sent(*ch.read_outbound<ByteBuf>());
  const auto b = decode_sent(*ch.read_outbound<ByteBuf>());
  EXPECT_EQ(a.first_byte, 0x81);
  EXPECT_TRUE(a.masked);
  EXPECT_EQ(a.payload, "hello");
  EXPECT_EQ(b.payload, "hello");
  EXPECT_NE(a.key, b.key) << "each frame has its own key";
  // A large message too (the client copies it as it masks it; the caller's bytes are unchanged).
  std::string big(70000, 'x');
  ByteBuf payload = ByteBuf::copy_of(big);
  ch.write_outbound(ws::Message::binary(payload.duplicate()));
  EXPECT_EQ(payload.view(), big);
  const auto out = ch.read_outbound<ByteBuf>();
  ASSERT_TRUE(out);
  const std::string_view v = out->view();
  ASSERT_EQ(v.size(), 2u + 8 + 4 + big.size());
  EXPECT_EQ(static_cast<std::uint8_t>(v[1]), 0x80 | 127);
  const std::string_view key = v.substr(10, 4);
  for (std::size_t i = 0; i < big.size(); i += 997) EXPECT_EQ(static_cast<char>(v[14 + i] ^ key[i % 4]), 'x');
}

TEST(WebSocketClientCodec, AMaskedFrameFromTheServerFailsWith1002) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("ws", client_codec());
  ch.write_inbound(ByteBuf::copy_of(server_frame(0x81, "hi", true)));
  const auto close = ch.read_inbound<ws::Message>();
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), ws::close_code::protocol_error);
  const auto sent = decode_sent(*ch.read_outbound<ByteBuf>());
  EXPECT_EQ(sent.first_byte, 0x88);
  EXPECT_TRUE(sent.masked);
  EXPECT_EQ(sent.payload, std::string("\x03\xea", 2));
}

TEST(WebSocketClientCodec, WaitsForTheServersFinAfterTheCloseThenClosesItself) {
  ws::Options options;
  options.close_timeout = 5s;
  {
    EmbeddedChannel ch;
    ch.pipeline().add_last("ws", client_codec(options));
    ch.write_outbound(ws::Message::close(1000, "done"));
    const auto sent = decode_sent(*ch.read_outbound<ByteBuf>());
    EXPECT_EQ(sent.first_byte, 0x88);
    EXPECT_TRUE(sent.masked);
    ch.write_inbound(ByteBuf::copy_of(server_frame(0x88, std::string("\x03\xe8", 2))));
    EXPECT_EQ(ch.read_inbound<ws::Message>()->close_code(), 1000);
    EXPECT_TRUE(ch.is_open()) << "the server closes TCP first";
    ch.advance_time(4s);
    EXPECT_TRUE(ch.is_open());
    ch.advance_time(1s);
    EXPECT_FALSE(ch.is_open()) << "close_timeout passed";
  }
  {
    EmbeddedChannel ch;
    ch.pipeline().add_last("ws", client_codec(options));
    ch.write_inbound(ByteBuf::copy_of(server_frame(0x88, std::string("\x0f\xa2", 2))));  // the server's 4002
    EXPECT_EQ(ch.read_inbound<ws::Message>()->close_code(), 4002);
    EXPECT_EQ(decode_sent(*ch.read_outbound<ByteBuf>()).payload, std::string("\x0f\xa2", 2)) << "echoed";
    EXPECT_TRUE(ch.is_open());
    ch.pipeline().fire_user_event(ChannelInputShutdownEvent{});
    ch.run_pending();
    EXPECT_FALSE(ch.is_open()) << "the server's FIN ends it";
  }
}

// Idle keepalive, on the embedded loop's manual clock, for both roles.
void check_keepalive(ws::Codec::Role role) {
  ws::Options options;
  options.ping_interval = 30s;
  options.ping_timeout = 10s;
  EmbeddedChannel ch;
  ch.pipeline().add_last("ws", std::make_shared<ws::Codec>(role, options, ByteBuf(), std::nullopt));
  const bool client = role == ws::Codec::Role::client;
  ch.advance_time(29s);
  EXPECT_EQ(ch.outbound_count(), 0u);
  ch.advance_time(1s);
  auto ping = ch.read_outbound<ByteBuf>();
  ASSERT_TRUE(ping) << "a ping after 30 s idle";
  EXPECT_EQ(decode_sent(*ping).first_byte, 0x89);
  EXPECT_EQ(decode_sent(*ping).masked, client);
  // The pong (any frame) answers it; the next ping comes 30 s after it.
  ch.advance_time(5s);
  ch.write_inbound(ByteBuf::copy_of(server_frame(0x8A, "", !client)));
  ch.advance_time(29s);
  EXPECT_EQ(ch.outbound_count(), 0u);
  EXPECT_TRUE(ch.is_open());
  ch.advance_time(1s);
  ASSERT_TRUE(ch.read_outbound<ByteBuf>()) << "the second ping";
  // Silence: cut after ping_timeout, the application told 1006.
  ch.advance_time(9s);
  EXPECT_TRUE(ch.is_open());
  ch.advance_time(1s);
  EXPECT_FALSE(ch.is_open());
  const auto close = ch.read_inbound<ws::Message>();
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), ws::close_code::abnormal);
}

TEST(WebSocketKeepalive, PingsWhenIdleAndCutsASilentPeer) {
  check_keepalive(ws::Codec::Role::client);
  check_keepalive(ws::Codec::Role::server);
}

TEST(WebSocketKeepalive, SilenceIsNotCountedWhileReadingIsSuspended) {
  ws::Options options;
  options.ping_interval = 30s;
  options.ping_timeout = 10s;
  EmbeddedChannel ch;
  ch.pipeline().add_last("ws", client_codec(options));
  ch.suspend_reading();  // as backpressure does
  ch.advance_time(100s);
  EXPECT_EQ(ch.outbound_count(), 0u) << "no ping while not reading";
  EXPECT_TRUE(ch.is_open());
  ch.resume_reading();
  ch.advance_time(60s);
  ASSERT_TRUE(ch.read_outbound<ByteBuf>()) << "idle and reading again: a ping";
}

TEST(WebSocketKeepalive, OffByDefault) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("ws", client_codec());
  ch.advance_time(3600s);
  EXPECT_EQ(ch.outbound_count(), 0u);
  EXPECT_TRUE(ch.is_open());
}

// ---- the deflate answer's checks

TEST(WebSocketClientDeflate, OfferAndAnswers) {
  ws::DeflateOptions o;
  o.enabled = true;
  EXPECT_EQ(ws::deflate_offer(o), "permessage-deflate; client_max_window_bits");
  std::string why;
  auto agreed = ws::check_deflate_answer("permessage-deflate", o, why);
  ASSERT_TRUE(agreed) << why;
  EXPECT_EQ(*agreed, ws::DeflateParameters{});
  agreed = ws::check_deflate_answer(
      "permessage-deflate; server_no_context_takeover; client_max_window_bits=10; server_max_window_bits=\"12\"", o,
      why);
  ASSERT_TRUE(agreed) << why;
  EXPECT_EQ(*agreed, (ws::DeflateParameters{true, false, 12, 10}));
  for (const char* bad :
       {"x-webkit-deflate-frame", "permessage-deflate; foo", "permessage-deflate; client_max_window_bits",
        "permessage-deflate; server_max_window_bits=7", "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; client_no_context_takeover=1", "permessage-deflate, permessage-deflate",
        "permessage-deflate; server_max_window_bits=\"1", ""}) {
    why.clear();
    EXPECT_FALSE(ws::check_deflate_answer(bad, o, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  // What was asked of the server must be agreed; our own window is at most what we offered.
  o.server_no_context_takeover = true;
  o.server_max_window_bits = 10;
  o.client_max_window_bits = 9;
  o.client_no_context_takeover = true;
  EXPECT_EQ(ws::deflate_offer(o),
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; "
            "client_max_window_bits=9");
  EXPECT_FALSE(ws::check_deflate_answer("permessage-deflate; server_max_window_bits=10", o, why));
  EXPECT_FALSE(ws::check_deflate_answer("permessage-deflate; server_no_context_takeover", o, why));
  EXPECT_FALSE(
      ws::check_deflate_answer("permessage-deflate; server_no_context_takeover; server_max_window_bits=11", o, why));
  EXPECT_FALSE(ws::check_deflate_answer(
      "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits=10", o, why));
  agreed = ws::check_deflate_answer("permessage-deflate; server_no_context_takeover; server_max_window_bits=8", o, why);
  ASSERT_TRUE(agreed) << why;
  EXPECT_EQ(*agreed, (ws::DeflateParameters{true, true, 8, 9}));
}

// ---- over sockets: helpers

std::string compressible(std::size_t n) {
  std::string s;
  while (s.size() < n) s += "the quick brown fox jumps over the lazy dog " + std::to_string(s.size() % 97) + "; ";
  s.resize(n);
  return s;
}

// ---- the weft client against the weft server

class WebSocketClientTest : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 16));
    auto router = std::make_shared<http::Router>();
    const ws::Callbacks echo{
        .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); },
        .on_close =
            [this](Context&, const ws::Message& m) {
              std::lock_guard lock(mutex_);
              server_closes_.push_back(std::to_string(m.close_code()) + ":" + std::string(m.reason()));
            }};
    ws::UpgradeOptions chat;
    chat.subprotocols = {"superchat", "chat"};
    ws::websocket(*router, "/echo", echo, chat);
    ws::websocket(*router, "/bye", ws::Callbacks{.on_open = [](Context& ctx, const ws::Handshake&) {
      ctx.write_and_flush(ws::Message::close(4002, "server bye"));
    }});
    // permessage-deflate: an echo whose first message says what the server agreed.
    auto deflate_echo = ws::Callbacks{
        .on_open = [](Context& ctx,
                      const ws::Handshake& h) { ctx.write_and_flush(ws::Message::text(describe(h.deflate))); },
        .on_message = echo.on_message};
    ws::UpgradeOptions deflate;
    deflate.deflate.enabled = true;
    deflate.deflate.min_message_size = 1;
    ws::websocket(*router, "/deflate", deflate_echo, deflate);
    ws::UpgradeOptions strict = deflate;
    strict.deflate.server_no_context_takeover = true;
    strict.deflate.client_no_context_takeover = true;
    strict.deflate.server_max_window_bits = 10;
    strict.deflate.client_max_window_bits = 9;
    ws::websocket(*router, "/deflate-strict", deflate_echo, strict);
    // A server that stops reading once open, until the test lets it (backpressure).
    ws::websocket(*router, "/stall", ws::Callbacks{.on_open = [this](Context& ctx, const ws::Handshake&) {
      ctx.channel().set_auto_read(false);
      std::lock_guard lock(mutex_);
      stalled_ = ctx.channel().shared_from_this();
    }});
    router->get("/plain", [](http::Request&) { return http::HttpResponse(200).body_view("plain"); });
    ServerBootstrap bootstrap;
    bootstrap.group(*group_).child_handler([router](Channel& ch) {
      ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
      ch.pipeline().add_last("router", router);
    });
    server_ = bootstrap.bind(SocketAddress::loopback(0)).get();
    port_ = server_->local_address().port();
    client_.emplace(*group_);
  }
  void TearDown() override {
    client_->close().wait();
    client_.reset();
    server_->close().wait();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }
  static std::string describe(const std::optional<ws::DeflateParameters>& d) {
    if (!d) return "none";
    return std::to_string(d->server_max_window_bits) + "/" + std::to_string(d->client_max_window_bits) +
           (d->server_no_context_takeover ? " snct" : "") + (d->client_no_context_takeover ? " cnct" : "");
  }
  std::string url(std::string_view path) const { return "ws://127.0.0.1:" + std::to_string(port_) + std::string(path); }
  std::vector<std::string> server_closes() {
    std::lock_guard lock(mutex_);
    return server_closes_;
  }

  std::optional<EventLoopGroup> group_;
  ChannelPtr server_;
  std::uint16_t port_ = 0;
  std::optional<client::HttpClient> client_;
  std::mutex mutex_;
  std::vector<std::string> server_closes_;  // "code:reason" as the server's on_close saw them
  ChannelPtr stalled_;
};

TEST_P(WebSocketClientTest, EchoesTextBinaryAndLargeMessages) {
  const std::string large = "b:" + compressible(300 * 1024);
  ws::Handshake h;
  client::WebSocketOptions options;
  options.subprotocols = {"nope", "chat"};
  const Outcome o =
      run_script(*client_, url("/echo?room=7"), {{"t:héllo", "b:\x01\x02", large}, 3, 4001, "bye"}, options, &h);
  ASSERT_EQ(o.got.size(), 3u);
  EXPECT_EQ(o.got[0], "t:héllo");
  EXPECT_EQ(o.got[1], "b:\x01\x02");
  EXPECT_EQ(o.got[2], large);
  EXPECT_EQ(o.close_code, 4001) << "the server echoes the client's close";
  EXPECT_EQ(h.subprotocol, "chat");
  EXPECT_EQ(h.target, "/echo?room=7");
  EXPECT_FALSE(h.deflate);
  EXPECT_TRUE(
      std::any_of(h.headers.begin(), h.headers.end(), [](const auto& f) { return f.first == "Sec-WebSocket-Accept"; }));
  EXPECT_TRUE(test::eventually([&] { return server_closes() == std::vector<std::string>{"4001:bye"}; }));
}

TEST_P(WebSocketClientTest, TheServersCloseReachesTheClient) {
  const Outcome o = run_script(*client_, url("/bye"), {{}, 0, 0, {}});
  EXPECT_EQ(o.close_code, 4002);
  EXPECT_EQ(o.close_reason, "server bye");
}

TEST_P(WebSocketClientTest, CallbacksForm) {
  auto closed = std::make_shared<Promise<std::string>>();
  Future<std::string> result = closed->future();
  auto got = std::make_shared<std::string>();
  Future<ws::Handshake> opened = client_->websocket(
      url("/echo"),
      ws::Callbacks{
          .on_open = [](Context& ctx,
                        const ws::Handshake& h) { ctx.write_and_flush(ws::Message::text("sub=" + h.subprotocol)); },
          .on_message =
              [got](Context& ctx, ws::Message& m) {
                *got = std::string(m.view());
                ctx.write_and_flush(ws::Message::close(1000));
              },
          .on_close = [got, closed](
                          Context&,
                          const ws::Message& m) { closed->set_value(*got + "|" + std::to_string(m.close_code())); }},
      client::WebSocketOptions{.subprotocols = {"superchat"}});
  EXPECT_EQ(opened.get().subprotocol, "superchat");
  EXPECT_EQ(result.get(), "sub=superchat|1000");
}

TEST_P(WebSocketClientTest, DeflateParametersBothDirections) {
  struct Case {
    std::string path;
    ws::DeflateOptions client;
    std::string agreed;  // as the server describes it (its first message)
  };
  ws::DeflateOptions plain;
  plain.enabled = true;
  plain.min_message_size = 1;
  ws::DeflateOptions small = plain;
  small.client_max_window_bits = 9;
  small.client_no_context_takeover = true;
  ws::DeflateOptions ask = plain;
  ask.server_max_window_bits = 11;
  ask.server_no_context_takeover = true;
  const std::vector<Case> cases = {
      {"/deflate", plain, "15/15"},
      {"/deflate", small, "15/9 cnct"},
      {"/deflate", ask, "11/15 snct"},
      {"/deflate-strict", plain, "10/9 snct cnct"},
      {"/deflate-strict", ask, "10/9 snct cnct"},
      {"/echo", plain, "-"},  // a server without deflate: none agreed
  };
  const std::string text = "t:" + compressible(20000);
  const std::string bin = "b:" + compressible(3000);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " " + ws::deflate_offer(c.client));
    ws::Handshake h;
    const bool greets = c.path != "/echo";
    const Outcome o =
        run_script(*client_, url(c.path), {{text, bin, text}, greets ? 4u : 3u}, {.deflate = c.client}, &h);
    ASSERT_EQ(o.got.size(), greets ? 4u : 3u);
    if (greets) {
      EXPECT_EQ(o.got[0], "t:" + c.agreed);
      EXPECT_EQ(describe(h.deflate), c.agreed) << "the client agreed what the server did";
    } else {
      EXPECT_FALSE(h.deflate);
    }
    const std::size_t at = greets ? 1 : 0;
    EXPECT_EQ(o.got[at], text);
    EXPECT_EQ(o.got[at + 1], bin);
    EXPECT_EQ(o.got[at + 2], text);
    EXPECT_EQ(o.close_code, 1000);
  }
}

TEST_P(WebSocketClientTest, AWriterSuspendsWhileTheServerDoesNotRead) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark: the channel never turns "
                    "unwritable (the thread waits in send)";
  }
  auto suspended = std::make_shared<Promise<std::size_t>>();
  auto finished = std::make_shared<Promise<std::uint16_t>>();
  Future<std::size_t> suspended_after = suspended->future();
  Future<std::uint16_t> finish = finished->future();
  Future<ws::Handshake> opened =
      client_->websocket(url("/stall"), [suspended, finished](Connection<ws::Message>& c) -> Task<> {
        try {
          const std::string chunk(256 * 1024, 'z');
          std::size_t written = 0;
          for (;;) {
            auto write = c.write(ws::Message::binary(chunk));
            if (!write.await_ready()) {
              suspended->set_value(written);
              co_await write;  // resumes once the server reads again
              c.flush();
              break;
            }
            co_await write;
            c.flush();
            written += chunk.size();
            if (written > (1u << 30)) break;  // never suspended: the promise reports it
          }
          suspended->set_value(written);
          co_await c.write(ws::Message::close(1000));
          c.flush();
          for (;;) {
            ws::Message m = co_await c.read();
            if (m.is_close()) {
              finished->set_value(m.close_code());
              co_return;
            }
          }
        } catch (...) {
          finished->set_error(std::current_exception());
        }
      });
  opened.get();
  const std::size_t written = suspended_after.get();
  EXPECT_LT(written, 1u << 30) << "the write suspended";
  ChannelPtr stalled;
  ASSERT_TRUE(test::eventually([&] {
    std::lock_guard lock(mutex_);
    stalled = stalled_;
    return stalled != nullptr;
  }));
  stalled->set_auto_read(true);
  EXPECT_EQ(finish.get(), 1000) << "the suspended write went on once the server read";
}

TEST_P(WebSocketClientTest, APlainHttpAnswerIsAHandshakeError) {
  auto e = open_error<ws::HandshakeError>(client_->websocket(url("/plain"), [](Connection<ws::Message>&) -> Task<> {
    ADD_FAILURE() << "no WebSocket was opened";
    co_return;
  }));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 200);
}

TEST_P(WebSocketClientTest, ABadUrlOrARefusedConnectFails) {
  auto noop = [](Connection<ws::Message>&) -> Task<> { co_return; };
  EXPECT_TRUE(open_error<client::UrlError>(client_->websocket("http://127.0.0.1/", noop)));
  EXPECT_TRUE(open_error<IoError>(
      client_->websocket("ws://127.0.0.1:" + std::to_string(test::unused_loopback_port()) + "/", noop)));
}

WEFT_ON_EVERY_TRANSPORT(WebSocketClientTest);

// ---- the weft client against scripted raw servers

// A TCP server on a thread for one connection: reads the request's head, answers with
// `answer(key)` and FIN (none when the answer is empty), then reads until the client closes.
class RawServer {
 public:
  explicit RawServer(std::function<std::string(const std::string& key)> answer) : answer_(std::move(answer)) {
    for (int attempt = 0; attempt < 50 && fd_ < 0; ++attempt) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      port_ = test::random_port();
      a.sin_port = htons(port_);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd, 4) == 0) {
        fd_ = fd;
      } else {
        ::close(fd);
      }
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~RawServer() {
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const noexcept { return port_; }
  std::string request() {
    std::lock_guard lock(mutex_);
    return request_;
  }

 private:
  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 10000) == 1;
  }
  void serve() {
    if (!readable(fd_)) return;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n") == std::string::npos && readable(c)) {
      const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      request_ = got;
    }
    std::string key;
    const std::size_t at = got.find("Sec-WebSocket-Key: ");
    if (at != std::string::npos) key = got.substr(at + 19, 24);
    const std::string out = answer_(key);
    if (!out.empty()) {
      ::send(c, out.data(), out.size(), MSG_NOSIGNAL);
      ::shutdown(c, SHUT_WR);
    }
    while (readable(c) && ::recv(c, buf, sizeof(buf), 0) > 0) {
    }
    ::close(c);
  }

  std::function<std::string(const std::string&)> answer_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::string request_;
};

std::string switching(const std::string& key, std::string_view extra = {}) {
  return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
         ws::accept_key(key) + "\r\n" + std::string(extra) + "\r\n";
}

class WebSocketClientHandshakeTest : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 4));
    client_.emplace(*group_);
  }
  void TearDown() override {
    client_->close().wait();
    client_.reset();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }
  // The HandshakeError of opening a WebSocket to a server that answers `answer(key)`.
  std::optional<ws::HandshakeError> refusal(std::function<std::string(const std::string&)> answer,
                                            client::WebSocketOptions options = {}) {
    RawServer server(std::move(answer));
    return open_error<ws::HandshakeError>(client_->websocket(
        "ws://127.0.0.1:" + std::to_string(server.port()) + "/x",
        [](Connection<ws::Message>&) -> Task<> {
          ADD_FAILURE() << "no WebSocket was opened";
          co_return;
        },
        std::move(options)));
  }

  std::optional<EventLoopGroup> group_;
  std::optional<client::HttpClient> client_;
};

TEST_P(WebSocketClientHandshakeTest, EachFlawOfTheAnswerIsATypedError) {
  auto e = refusal([](const std::string&) {
    return std::string("HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n");
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 426);
  e = refusal([](const std::string&) {
    return std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n") +
           "Sec-WebSocket-Accept: " + ws::accept_key("dGhlIHNhbXBsZSBub25jZQ==") + "\r\n\r\n";
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 101);
  EXPECT_NE(e->reason().find("Accept"), std::string::npos) << e->reason();
  e = refusal([](const std::string& key) { return switching(key, "Sec-WebSocket-Protocol: other\r\n"); },
              {.subprotocols = {"chat"}});
  ASSERT_TRUE(e);
  EXPECT_NE(e->reason().find("subprotocol"), std::string::npos) << e->reason();
  e = refusal(
      [](const std::string& key) { return switching(key, "Sec-WebSocket-Extensions: permessage-deflate\r\n"); });
  ASSERT_TRUE(e);
  EXPECT_NE(e->reason().find("extension not offered"), std::string::npos) << e->reason();
  ws::DeflateOptions deflate;
  deflate.enabled = true;
  e = refusal(
      [](const std::string& key) { return switching(key, "Sec-WebSocket-Extensions: permessage-deflate; x=1\r\n"); },
      {.deflate = deflate});
  ASSERT_TRUE(e);
  EXPECT_NE(e->reason().find("permessage-deflate"), std::string::npos) << e->reason();
  e = refusal([](const std::string& key) {
    std::string s = switching(key);
    s.replace(s.find("Upgrade: websocket"), 18, "Upgrade: h2c");
    return s;
  });
  ASSERT_TRUE(e);
  EXPECT_NE(e->reason().find("Upgrade"), std::string::npos) << e->reason();
  e = refusal([](const std::string&) { return std::string("SSH-2.0-OpenSSH\r\n\r\n"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 0);
  e = refusal([](const std::string&) { return std::string(); }, {.handshake_timeout = 100ms});  // no answer
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 0);
  EXPECT_NE(e->reason().find("timeout"), std::string::npos) << e->reason();
}

TEST_P(WebSocketClientHandshakeTest, TheRequestCarriesWhatWasAsked) {
  RawServer server(
      [](const std::string&) { return std::string("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"); });
  ws::DeflateOptions deflate;
  deflate.enabled = true;
  auto e = open_error<ws::HandshakeError>(client_->websocket(
      "ws://127.0.0.1:" + std::to_string(server.port()) + "/chat?room=7",
      [](Connection<ws::Message>&) -> Task<> { co_return; },
      {.subprotocols = {"a", "b"}, .headers = {{"Origin", "http://example.com"}}, .deflate = deflate}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 404);
  const std::string r = server.request();
  EXPECT_EQ(r.rfind("GET /chat?room=7 HTTP/1.1\r\n", 0), 0u) << r;
  for (const std::string& line :
       {"Host: 127.0.0.1:" + std::to_string(server.port()), std::string("Upgrade: websocket"),
        std::string("Connection: Upgrade"), std::string("Sec-WebSocket-Version: 13"),
        std::string("Sec-WebSocket-Protocol: a, b"), std::string("Origin: http://example.com"),
        std::string("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits")}) {
    EXPECT_NE(r.find(line + "\r\n"), std::string::npos) << line << " in " << r;
  }
}

TEST_P(WebSocketClientHandshakeTest, BytesBehindThe101AreKeptAndAMaskedFrameFailsWith1002) {
  // Right behind the 101: a text message in three fragments, then a masked frame.
  RawServer server([](const std::string& key) {
    return switching(key) + server_frame(0x01, "frag") + server_frame(0x00, "men") + server_frame(0x80, "ted") +
           server_frame(0x81, "bad", true);
  });
  const Outcome o = run_script(*client_, "ws://127.0.0.1:" + std::to_string(server.port()) + "/", {{}, 1, 0, {}});
  ASSERT_EQ(o.got.size(), 1u);
  EXPECT_EQ(o.got[0], "t:fragmented");
  EXPECT_EQ(o.close_code, ws::close_code::protocol_error);
}

WEFT_ON_EVERY_TRANSPORT(WebSocketClientHandshakeTest);

// ---- interop: python3-websockets' and node's ws servers

// A peer server process, started on a free port below the ephemeral range; killed at the end.
class Peer {
 public:
  // `command` takes the port as its last argument and prints "ready" once it listens.
  explicit Peer(const std::string& command) {
    for (int attempt = 0; attempt < 10 && !ready_; ++attempt) {
      port_ = test::random_port();
      out_ = test::write_temp_file("", ".log");
      int status = 0;
      const std::string pid =
          test::run_shell(command + " " + std::to_string(port_) + " >" + out_ + " 2>&1 & echo $!", status);
      pid_ = std::stoi(pid);
      test::eventually([&] { return contents().find("ready") != std::string::npos || ::kill(pid_, 0) != 0; }, 20000ms);
      ready_ = contents().find("ready") != std::string::npos;
      if (!ready_) stop();
    }
  }
  ~Peer() { stop(); }
  bool ready() const noexcept { return ready_; }
  std::uint16_t port() const noexcept { return port_; }
  std::string contents() const {
    std::ifstream in(out_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void stop() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
    pid_ = -1;
  }
  std::uint16_t port_ = 0;
  int pid_ = -1;
  bool ready_ = false;
  std::string out_;
};

bool has_python_websockets() {
  int status = 0;
  test::run_shell("/usr/bin/python3 -c 'import websockets' 2>/dev/null", status);
  return status == 0;
}

constexpr const char* kPythonEcho = R"PY(
import asyncio, ssl, sys
import websockets
mode, port = sys.argv[1], int(sys.argv[-1])
async def echo(ws, path=None):
    async for m in ws:
        await ws.send(m)
async def main():
    ctx = None
    if mode == "tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    comp = "deflate" if mode == "deflate" else None
    async with websockets.serve(echo, "127.0.0.1", port, ssl=ctx, compression=comp):
        print("ready", flush=True)
        await asyncio.Future()
asyncio.run(main())
)PY";

class WebSocketClientInteropTest : public WebSocketClientHandshakeTest {
 protected:
  // Echoes text and binary (compressible, so deflate has work) through `url`; the handshake in *h.
  void check_echo(const std::string& url, client::WebSocketOptions options, ws::Handshake* h) {
    const std::string text = "t:" + compressible(10000);
    const std::string bin = "b:" + compressible(70000);
    const Outcome o = run_script(*client_, url, {{"t:hi", text, bin}, 3, 1000, {}}, std::move(options), h);
    ASSERT_EQ(o.got.size(), 3u);
    EXPECT_EQ(o.got[0], "t:hi");
    EXPECT_EQ(o.got[1], text);
    EXPECT_EQ(o.got[2], bin);
    EXPECT_EQ(o.close_code, 1000);
  }
};

TEST_P(WebSocketClientInteropTest, PythonWebsocketsServer) {
  if (!has_python_websockets()) GTEST_SKIP() << "/usr/bin/python3 with python3-websockets is not installed";
  const std::string script = test::write_temp_file(kPythonEcho, ".py");
  ws::DeflateOptions deflate;
  deflate.enabled = true;
  deflate.min_message_size = 1;
  {
    Peer peer("/usr/bin/python3 " + script + " plain");
    ASSERT_TRUE(peer.ready()) << peer.contents();
    ws::Handshake h;
    check_echo("ws://127.0.0.1:" + std::to_string(peer.port()) + "/", {.deflate = deflate}, &h);
    EXPECT_FALSE(h.deflate) << "the server has compression off";
  }
  {
    Peer peer("/usr/bin/python3 " + script + " deflate");
    ASSERT_TRUE(peer.ready()) << peer.contents();
    ws::Handshake h;
    check_echo("ws://127.0.0.1:" + std::to_string(peer.port()) + "/", {.deflate = deflate}, &h);
    EXPECT_TRUE(h.deflate);
    ws::DeflateOptions small = deflate;
    small.server_max_window_bits = 10;
    small.client_max_window_bits = 9;
    small.server_no_context_takeover = true;
    check_echo("ws://127.0.0.1:" + std::to_string(peer.port()) + "/", {.deflate = small}, &h);
    ASSERT_TRUE(h.deflate);
    EXPECT_EQ(*h.deflate, (ws::DeflateParameters{true, false, 10, 9}));
  }
  {
    const test::TestPki& pki = test::test_pki();
    const std::string cert = test::write_temp_file(pki.localhost.cert_pem, ".pem");
    const std::string key = test::write_temp_file(pki.localhost.key_pem, ".pem");
    Peer peer("/usr/bin/python3 " + script + " tls " + cert + " " + key);
    ASSERT_TRUE(peer.ready()) << peer.contents();
    const std::string url = "wss://127.0.0.1:" + std::to_string(peer.port()) + "/";
    ws::Handshake h;
    check_echo(url, {.tls = test::test_client_context({"http/1.1"})}, &h);
    // Verified by default: the test CA is not in the system's trust store.
    auto e =
        open_error<TlsHandshakeError>(client_->websocket(url, [](Connection<ws::Message>&) -> Task<> { co_return; }));
    EXPECT_TRUE(e);
  }
}

TEST_P(WebSocketClientInteropTest, NodeWsServer) {
  int status = 0;
  test::run_shell(
      "test -x /work/shared/peers/serve-peer.sh && command -v node >/dev/null && test -d /usr/share/nodejs/ws", status);
  if (status != 0) GTEST_SKIP() << "node with node-ws is not installed (scripts/install-deps.sh)";
  const std::string script = test::write_temp_file(R"JS(
const { WebSocketServer } = require('/usr/share/nodejs/ws');
const deflate = process.argv[2] === 'deflate';
const port = Number(process.argv[process.argv.length - 1]);
const wss = new WebSocketServer({ host: '127.0.0.1', port, perMessageDeflate: deflate ? { threshold: 0 } : false });
wss.on('listening', () => console.log('ready'));
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
)JS",
                                                   ".js");
  ws::DeflateOptions deflate;
  deflate.enabled = true;
  deflate.min_message_size = 1;
  for (const std::string mode : {"plain", "deflate"}) {
    Peer peer("node " + script + " " + mode);
    ASSERT_TRUE(peer.ready()) << peer.contents();
    ws::Handshake h;
    check_echo("ws://127.0.0.1:" + std::to_string(peer.port()) + "/", {.deflate = deflate}, &h);
    EXPECT_EQ(h.deflate.has_value(), mode == "deflate");
  }
}

WEFT_ON_EVERY_TRANSPORT(WebSocketClientInteropTest);

}  // namespace
}  // namespace weft::ws_client_test
