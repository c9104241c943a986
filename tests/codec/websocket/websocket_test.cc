// The WebSocket server (codec/websocket) over real sockets, on every transport: a raw client writes
// exact frames -- whole, and one byte at a time -- and checks the exact frames and close codes that
// come back. The cases are named after Autobahn|Testsuite's groups (1 framing, 2 ping/pong, 3 reserved
// bits, 4 opcodes, 5 fragmentation, 6 UTF-8, 7 close, 9 limits, 10 auto-fragmentation). Then the handshake's refusals,
// backpressure, and interop with python3-websockets as the client.

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "autobahn_cases.h"
#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/shell.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/websocket/codec.h"
#include "weft/codec/websocket/frame.h"
#include "weft/codec/websocket/upgrade.h"
#include "weft/codec/websocket/utf8.h"

using namespace std::chrono_literals;

// A namespace of its own: the unity build puts this file beside others with a Frame, a Case...
namespace weft::websocket_test {
namespace {

using test::BlockingClient;
using namespace websocket_cases;

// ---- the server: an echo with callbacks (/echo), one with a coroutine (/co), and small limits (/small)

ws::UpgradeOptions small_limits() {
  ws::UpgradeOptions options;
  options.connection = websocket_cases::small_limits();
  return options;
}

// Counts, on the connection's side of every handler, the read batches that arrive and the flushes
// that leave. Shared by the server's connections; the test that reads it opens one.
class FlushCounter final : public Handler {
 public:
  void channel_read_complete(Context& ctx) override {
    batches.fetch_add(1);
    ctx.fire_read_complete();
  }
  void flush(Context& ctx) override {
    flushes.fetch_add(1);
    ctx.flush();
  }
  bool is_sharable() const noexcept override { return true; }
  std::atomic<int> batches{0};
  std::atomic<int> flushes{0};
};

class WebSocketTest : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 8));
    // The backpressure test's server has the probe and the meter from its first connection on.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    start(name.find("NeverReads") != std::string::npos);
  }
  // The server; with `small_buffers`, 64 KiB socket buffers and write queue mark, and a probe and a
  // write-queue meter before the codec (the backpressure test).
  void start(bool small_buffers) {
    auto router = std::make_shared<http::Router>();
    const ws::Callbacks echo{.on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); },
                             .on_close =
                                 [this](Context&, const ws::Message& m) {
                                   last_close_code_.store(m.close_code());
                                   closes_.fetch_add(1);
                                 }};
    ws::UpgradeOptions chat;
    chat.subprotocols = {"superchat", "chat"};
    ws::websocket(*router, "/echo", echo, chat);
    ws::websocket(*router, "/small", echo, small_limits());
    // A close_timeout far longer than the test's waits: each end of a connection is the handshake's.
    ws::UpgradeOptions patient;
    patient.connection.close_timeout = 60s;
    ws::websocket(*router, "/co", echo_coroutine, patient);
    // Both forms answer first with what the handshake settled, then echo.
    auto settled = [](const ws::Handshake& h) {
      return ws::Message::text(h.target + "|" + h.subprotocol + "|" + std::string(h.header("x-user").value_or("-")) +
                               "|" + std::to_string(h.headers.size()));
    };
    ws::websocket(
        *router, "/hello",
        ws::Callbacks{.on_open = [settled](Context& ctx, const ws::Handshake& h) { ctx.write_and_flush(settled(h)); },
                      .on_message = echo.on_message},
        chat);
    ws::websocket(
        *router, "/co-hello",
        [settled](Connection<ws::Message>& c, const ws::Handshake& h) -> Task<> {
          co_await c.write(settled(h));
          c.flush();
          for (;;) {
            ws::Message m = co_await c.read();
            if (m.is_close()) co_return;
            co_await c.write(ws::Message::text(std::string(h.target) + ":" + std::string(m.view())));
            c.flush();
          }
        },
        chat);
    // permessage-deflate: an echo that first says what was agreed; one with every option set.
    auto deflate_echo = ws::Callbacks{.on_open =
                                          [](Context& ctx, const ws::Handshake& h) {
                                            std::string agreed = "deflate:";
                                            if (!h.deflate) {
                                              agreed += "none";
                                            } else {
                                              agreed += std::to_string(h.deflate->server_max_window_bits) + "/" +
                                                        std::to_string(h.deflate->client_max_window_bits) +
                                                        (h.deflate->server_no_context_takeover ? " snct" : "") +
                                                        (h.deflate->client_no_context_takeover ? " cnct" : "");
                                            }
                                            ctx.write_and_flush(ws::Message::text(agreed));
                                          },
                                      .on_message = echo.on_message};
    ws::UpgradeOptions deflate;
    deflate.deflate.enabled = true;
    ws::websocket(*router, "/deflate", deflate_echo, deflate);
    ws::UpgradeOptions deflate_strict = deflate;
    deflate_strict.deflate.server_no_context_takeover = true;
    deflate_strict.deflate.client_no_context_takeover = true;
    deflate_strict.deflate.server_max_window_bits = 10;
    deflate_strict.deflate.client_max_window_bits = 9;
    deflate_strict.deflate.min_message_size = 1;
    ws::websocket(*router, "/deflate-strict", deflate_echo, deflate_strict);
    // Streamed fragments: each frame echoed as it arrives, with callbacks and with a coroutine.
    ws::UpgradeOptions streamed;
    streamed.connection.stream_fragments = true;
    ws::websocket(*router, "/stream", echo, streamed);
    ws::websocket(*router, "/co-stream", echo_coroutine, streamed);
    // A broadcast to a peer that does not read: 1,000 messages of 64 KiB written at once, past a
    // queue bound of 256 KiB.
    ws::UpgradeOptions bounded;
    bounded.connection.max_queued_bytes = 256 * 1024;
    ws::websocket(*router, "/flood",
                  ws::Callbacks{.on_open =
                                    [](Context& ctx, const ws::Handshake&) {
                                      for (int i = 0; i < 1000; ++i)
                                        ctx.write_and_flush(ws::Message::binary(std::string(64 * 1024, 'f')));
                                    },
                                .on_close = echo.on_close},
                  bounded);
    router->get("/plain", [](http::Request&) { return http::HttpResponse(200).body_view("plain"); });
    ServerBootstrap bootstrap;
    bootstrap.group(*group_).child_handler([this, router, small_buffers](Channel& ch) {
      ch.pipeline().add_last("flush-counter", flush_counter_);
      if (small_buffers) {
        ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes_.add()));
        ch.pipeline().add_last("meter", meter_);
      }
      ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
      ch.pipeline().add_last("router", router);
    });
    if (small_buffers) {
      bootstrap.child_option(option::receive_buffer_size, 64 * 1024)
          .child_option(option::send_buffer_size, 64 * 1024)
          .child_option(option::write_buffer_high_water_mark, kHighWaterMark)
          .child_option(option::write_buffer_low_water_mark, kHighWaterMark / 2);
    }
    server_ = bootstrap.bind(SocketAddress::loopback(0)).get();
    port_ = server_->local_address().port();
  }
  void TearDown() override {
    server_->close().wait();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }

  std::string request(std::string_view path, std::string_view extra = {}) const {
    return std::string("GET ") + std::string(path) + " HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n" +
           "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + std::string(kKey) +
           "\r\n" + std::string(extra) + "\r\n";
  }
  // Connects and upgrades; the 101's head in *head.
  BlockingClient open(std::string_view path, std::string* head = nullptr, std::string_view extra = {}) {
    BlockingClient c(port_);
    EXPECT_TRUE(c.send_all(request(path, extra)));
    std::string got;
    while (got.find("\r\n\r\n") == std::string::npos) {
      auto byte = c.recv_exact(1, 10000ms);
      if (!byte) break;
      got += *byte;
    }
    EXPECT_EQ(got.rfind("HTTP/1.1 101 ", 0), 0u) << got;
    EXPECT_NE(got.find("Sec-WebSocket-Accept: " + std::string(kAccept) + "\r\n"), std::string::npos) << got;
    if (head != nullptr) *head = got;
    return c;
  }
  static bool send(BlockingClient& c, const std::string& data, bool bytewise) {
    if (!bytewise) return c.send_all(data);
    for (char ch : data) {
      if (!c.send_all(std::string_view(&ch, 1))) return false;
    }
    return true;
  }

  static constexpr std::size_t kHighWaterMark = 64 * 1024;
  test::ProbeRegistry probes_;  // declared before the group: the server's channels refer to it
  std::shared_ptr<test::PendingMeter> meter_ = std::make_shared<test::PendingMeter>();
  std::shared_ptr<FlushCounter> flush_counter_ = std::make_shared<FlushCounter>();
  std::optional<EventLoopGroup> group_;
  ChannelPtr server_;
  std::uint16_t port_ = 0;
  std::atomic<int> closes_{0};
  std::atomic<int> last_close_code_{0};
};

TEST_P(WebSocketTest, AutobahnGroupsFrameByFrame) {
  for (const Case& c : cases()) {
    for (const bool bytewise : {false, true}) {
      if (bytewise && !c.bytewise) continue;
      SCOPED_TRACE(std::string(c.name) + (bytewise ? " (one byte at a time)" : " (whole)"));
      BlockingClient client = open(c.path);
      std::string out;
      for (const Frame& f : c.send) out += bytes(f);
      // A frame sent truncated (its declared length longer) stays unfinished: the server must act
      // on what it has.
      ASSERT_TRUE(send(client, out, bytewise));
      for (const Reply& want : c.expect) {
        auto got = read_reply(client);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, want);
      }
      const bool peer_closed = !c.expect.empty() && c.expect.back().opcode == 8;
      if (c.close != 0) {
        auto got = read_reply(client);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, close_reply(c.close));
      } else if (!peer_closed) {
        // Still open: a normal close, echoed.
        ASSERT_TRUE(client.send_all(bytes(close_frame(1000))));
        auto got = read_reply(client);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, close_reply(1000));
      }
      std::string rest;
      EXPECT_EQ(client.recv_until_end(&rest, 10000ms), test::StreamEnd::eof);
      EXPECT_EQ(rest, "") << "nothing after the close";
    }
  }
}

TEST_P(WebSocketTest, HandshakeAnswersAcceptAndChoosesTheSubprotocol) {
  std::string head;
  BlockingClient c = open("/echo", &head, "Sec-WebSocket-Protocol: chat, superchat\r\n");
  EXPECT_NE(head.find("Sec-WebSocket-Protocol: superchat\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Upgrade: websocket\r\n"), std::string::npos) << head;
  // Frames sent in the same write as the request (before the 101 was read) are not lost.
  BlockingClient eager(port_);
  ASSERT_TRUE(eager.send_all(request("/co") + bytes(text("eager"))));
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos) {
    auto byte = eager.recv_exact(1, 10000ms);
    ASSERT_TRUE(byte.has_value());
    got += *byte;
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 101 ", 0), 0u) << got;
  EXPECT_EQ(got.find("Sec-WebSocket-Protocol"), std::string::npos) << "none offered, none chosen";
  auto reply = read_reply(eager);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, (Reply{1, "eager"}));
}

// The handler hears the target, the chosen subprotocol and the request's headers, before any
// message, in both forms (the coroutine's handshake outlives the first message).
TEST_P(WebSocketTest, TheHandlerHearsWhatTheHandshakeSettled) {
  for (const char* path : {"/hello?room=7", "/co-hello?room=7"}) {
    SCOPED_TRACE(path);
    std::string head;
    BlockingClient c = open(path, &head, "Sec-WebSocket-Protocol: chat, other\r\nX-User: ann\r\n");
    EXPECT_NE(head.find("Sec-WebSocket-Protocol: chat\r\n"), std::string::npos) << head;
    auto opened = read_reply(c);
    ASSERT_TRUE(opened.has_value());
    // Host, Upgrade, Connection, Sec-WebSocket-Version, Sec-WebSocket-Key, the two extra: 7 fields.
    EXPECT_EQ(*opened, (Reply{1, std::string(path) + "|chat|ann|7"}));
    ASSERT_TRUE(c.send_all(bytes(text("hi"))));
    auto echoed = read_reply(c);
    ASSERT_TRUE(echoed.has_value());
    EXPECT_EQ(echoed->payload, std::string(path).starts_with("/co") ? std::string(path) + ":hi" : "hi");
  }
  BlockingClient none = open("/hello");
  auto opened = read_reply(none);
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(*opened, (Reply{1, "/hello||-|5"})) << "no subprotocol offered, none chosen";
}

TEST_P(WebSocketTest, HandshakeRefusalsSayWhy) {
  struct Refusal {
    std::string request;
    std::string status_line;
    std::string body_part;
  };
  const std::string base = "GET /echo HTTP/1.1\r\nHost: t\r\n";
  const std::string key = std::string("Sec-WebSocket-Key: ") + std::string(kKey) + "\r\n";
  const std::vector<Refusal> refusals = {
      {base + "\r\n", "HTTP/1.1 426 ", "Upgrade: websocket"},
      {base + "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Version: 13\r\n" + key + "\r\n",
       "HTTP/1.1 400 ", "Connection: upgrade"},
      {base + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\n" + key + "\r\n",
       "HTTP/1.1 426 ", "Version 13"},
      {base + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n", "HTTP/1.1 400 ",
       "Sec-WebSocket-Key"},
      {base +
           "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short\r\n\r\n",
       "HTTP/1.1 400 ", "16 bytes"},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.request);
    BlockingClient c(port_);
    ASSERT_TRUE(c.send_all(r.request + "GET /plain HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    std::string answer;
    EXPECT_EQ(c.recv_until_end(&answer, 10000ms), test::StreamEnd::eof);
    EXPECT_EQ(answer.rfind(r.status_line, 0), 0u) << answer;
    EXPECT_NE(answer.find(r.body_part), std::string::npos) << answer;
    // The connection stays HTTP: the next request is answered.
    EXPECT_NE(answer.find("\r\n\r\nplain"), std::string::npos) << answer;
  }
}

TEST_P(WebSocketTest, ThePeerThatNeverReadsIsNotReadEitherAndGetsEveryPong) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark: the channel never turns "
                    "unwritable (the thread waits in send, and reading stops with it)";
  }
  BlockingClient c(port_, {.receive_buffer = 64 * 1024, .send_buffer = 64 * 1024});
  ASSERT_TRUE(c.send_all(request("/echo")));
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    auto byte = c.recv_exact(1, 10000ms);
    ASSERT_TRUE(byte.has_value()) << head << " errno " << c.error();
    head += *byte;
  }
  auto probe = probes_.wait(0, 20s);
  ASSERT_NE(probe, nullptr);
  // Pings, read by nobody's pongs, until the server's channel turns unwritable; then more, until the
  // server stops taking them (a server that read on would take them all, its queue growing).
  const std::string one = bytes(ping(std::string(125, 'p')));
  std::string batch;
  for (int i = 0; i < 512; ++i) batch += one;
  std::size_t sent = 0;
  constexpr std::size_t kLimit = std::size_t{16} << 20;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (sent < kLimit && std::chrono::steady_clock::now() < give_up && probe->index_of("unwritable") < 0) {
    const std::size_t n = c.send_some(std::string_view(batch).substr(sent % batch.size()));
    sent += n;
    if (n == 0) std::this_thread::sleep_for(1ms);  // full: the server is busy, or has stopped reading
  }
  ASSERT_GE(probe->index_of("unwritable"), 0) << "writability_changed never reported unwritable";
  while (sent < kLimit) {
    const std::size_t n = c.send_some(std::string_view(batch).substr(sent % batch.size()));
    sent += n;
    pollfd p{c.fd(), POLLOUT, 0};
    if (n == 0 && ::poll(&p, 1, 200) == 0) break;  // a stall: the server has stopped reading
  }
  ASSERT_LT(sent, kLimit) << "the server kept reading from a peer that does not read";
  // One read batch may finish the buffer it is in when the mark is crossed: its pongs at most.
  EXPECT_LE(meter_->max_pending.load(), kHighWaterMark + 2 * ChannelConfig{}.read_buffer_max);
  // Every ping is answered: none dropped, although the server could not send them when they came.
  const std::size_t whole = sent / one.size();
  const std::size_t part = sent % one.size();
  for (std::size_t i = 0; i < whole; ++i) {
    auto got = read_reply(c);
    ASSERT_TRUE(got.has_value()) << i << " of " << whole;
    ASSERT_EQ(got->opcode, 10);
  }
  if (part != 0) {
    ASSERT_TRUE(c.send_all(std::string_view(one).substr(part), 10000ms));
    auto got = read_reply(c);
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->opcode, 10);
  }
  ASSERT_TRUE(c.send_all(bytes(close_frame(1000))));
  auto got = read_reply(c);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, close_reply(1000));
}

// An echo that flushes each answer (write_and_flush in on_message) still answers a batch of
// messages with one flush: the codec holds the flushes asked while it decodes until the batch ends.
TEST_P(WebSocketTest, AnswersToOneReadBatchLeaveInOneFlush) {
  BlockingClient c = open("/echo");
  std::string burst;
  constexpr int kMessages = 32;
  for (int i = 0; i < kMessages; ++i) burst += bytes(text("message " + std::to_string(i)));
  ASSERT_TRUE(c.send_all(burst));
  for (int i = 0; i < kMessages; ++i) {
    auto got = read_reply(c);
    ASSERT_TRUE(got.has_value()) << i;
    ASSERT_EQ(*got, (Reply{1, "message " + std::to_string(i)}));
  }
  // Each batch counts before its flush goes: every flush so far (the 101's and the echoes') was
  // one batch's, and a flush per message would pass the batches.
  EXPECT_LE(flush_counter_->flushes.load(), flush_counter_->batches.load());
  EXPECT_GE(flush_counter_->flushes.load(), 2);
}

// An idle WebSocket keeps no receive buffer: the one its upgrade request came in, empty once the
// head is decoded, is let go by the HTTP codec and by the WebSocket codec (it was kept for the
// life of the connection, a whole receive buffer per idle connection: 4 KiB on io_uring).
TEST(WebSocketIdleTest, AnUpgradedConnectionHoldsNoReceiveBuffer) {
  auto router = std::make_shared<http::Router>();
  ws::websocket(*router, "/idle", ws::Callbacks{});
  auto channel = std::make_shared<EmbeddedChannel>();  // the upgrade keeps it alive
  channel->pipeline().add_last("http", std::make_shared<http::ServerCodec>());
  channel->pipeline().add_last("router", router);
  const ByteBuf request = ByteBuf::copy_of(
      "GET /idle HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
      std::string(websocket_cases::kKey) + "\r\n\r\n");
  channel->write_inbound(request.duplicate());
  channel->run_pending();
  std::string out;
  while (auto b = channel->read_outbound<ByteBuf>()) out += b->to_string();
  ASSERT_EQ(out.rfind("HTTP/1.1 101 ", 0), 0u) << out;
  ASSERT_NE(channel->pipeline().context("websocket"), nullptr);
  EXPECT_EQ(request.ref_count(), 1u) << "a codec still holds the buffer the upgrade request came in";
}

TEST_P(WebSocketTest, TheApplicationSeesHowEachConnectionEnded) {
  {
    BlockingClient c = open("/echo");
    ASSERT_TRUE(c.send_all(bytes(close_frame(4001))));
    ASSERT_TRUE(read_reply(c).has_value());
    EXPECT_EQ(c.recv_until_end(nullptr, 10000ms), test::StreamEnd::eof);
  }
  EXPECT_TRUE(test::eventually([&] { return closes_.load() == 1; }, 10000ms));
  EXPECT_EQ(last_close_code_.load(), 4001);
  {
    BlockingClient c = open("/echo");
    c.close();  // no close frame
  }
  EXPECT_TRUE(test::eventually([&] { return closes_.load() == 2; }, 10000ms));
  EXPECT_EQ(last_close_code_.load(), 1006);
}

// The application hears the code the WebSocket ended with, also when the channel closes at once as
// the codec ends it (an EmbeddedChannel's does, as a socket's does when its input had ended):
// the close reached the application only after the channel's close, which had told it 1006 first.
// Found by tests/fuzz/websocket_server_fuzz.cc.
TEST(WebSocketCloseTest, TheApplicationHearsTheEndingCodeWhenTheChannelClosesAtOnce) {
  struct Ending {
    std::string input;
    std::uint16_t code;
  };
  Frame unmasked = text("hi");
  unmasked.masked = false;
  const std::vector<Ending> endings = {
      {bytes(unmasked), ws::close_code::protocol_error},
      {bytes(text("\xff")), ws::close_code::invalid_payload},
      {bytes(close_frame(4002, "bye")), 4002},
      {bytes(Frame{8, ""}), ws::close_code::no_status},
  };
  for (const Ending& e : endings) {
    SCOPED_TRACE(e.code);
    EmbeddedChannel ch;
    ch.pipeline().add_last("websocket", std::make_shared<ws::Codec>());
    ch.write_inbound(ByteBuf::copy_of(e.input));
    EXPECT_FALSE(ch.is_open());
    std::vector<ws::Message> heard;
    while (auto m = ch.read_inbound<ws::Message>()) heard.push_back(std::move(*m));
    ASSERT_EQ(heard.size(), 1u);
    ASSERT_TRUE(heard[0].is_close());
    EXPECT_EQ(heard[0].close_code(), e.code);
    if (e.code == 4002) {
      EXPECT_EQ(heard[0].reason(), "bye");
    }
  }
}

TEST_P(WebSocketTest, PythonWebsocketsEchoesTextAndBinary) {
  // python3-websockets is a Debian package: the system's python3, which another on PATH may hide.
  std::string python;
  int status = -1;
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    test::run_shell(std::string(candidate) + " -c 'import websockets' 2>/dev/null", status);
    if (status == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "python3-websockets is not installed (scripts/install-deps.sh)";
  const std::string script = R"PY(
import asyncio, sys, websockets
async def main(port):
    for path in ("/echo", "/co"):
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", subprotocols=["chat"], max_size=2**20) as ws:
            await ws.send("h\u00e9llo \u263a")
            assert await ws.recv() == "h\u00e9llo \u263a"
            blob = bytes(range(256)) * 300
            await ws.send(blob)
            assert await ws.recv() == blob
            await ws.send(["frag", "mented"])
            assert await ws.recv() == "fragmented"
            await (await ws.ping(b"x"))
            print(path, ws.subprotocol)
        print(ws.close_code)
asyncio.run(asyncio.wait_for(main(int(sys.argv[1])), 20))
)PY";
  const std::string out = test::run_shell(python + " -c '" + script + "' " + std::to_string(port_) + " 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "/echo chat\n1000\n/co None\n1000\n");
}

// An application that writes to a peer that does not read meets max_queued_bytes: the connection
// fails with 1008 (the application hears it), and the peer, once it reads, finds whole messages,
// fewer than were written, then the close -- never dropped -- and the end.
// On the blocking transport a send blocks until the kernel takes its bytes, so nothing queues: every
// message arrives, and the connection ends with the peer's normal close.
TEST_P(WebSocketTest, WritesPastTheQueueBoundFailTheConnectionWith1008) {
  BlockingClient c = open("/flood");
  if (is_blocking()) {
    for (int i = 0; i < 1000; ++i) {
      auto got = read_reply(c);
      ASSERT_TRUE(got.has_value());
      ASSERT_EQ(*got, (Reply{2, std::string(64 * 1024, 'f')}));
    }
    ASSERT_TRUE(c.send_all(bytes(close_frame(1000))));
    EXPECT_EQ(read_reply(c), close_reply(1000));
    EXPECT_EQ(c.recv_until_end(nullptr, 10000ms), test::StreamEnd::eof);
    EXPECT_TRUE(test::eventually([&] { return closes_.load() == 1; }, 10000ms));
    EXPECT_EQ(last_close_code_.load(), 1000);
    return;
  }
  // Nothing is read until the server has given up: what it queued is bounded, not the 64 MiB written.
  ASSERT_TRUE(test::eventually([&] { return closes_.load() == 1; }, 20000ms));
  EXPECT_EQ(last_close_code_.load(), 1008);
  int messages = 0;
  for (;;) {
    auto got = read_reply(c);
    ASSERT_TRUE(got.has_value());
    if (got->opcode == 8) {
      EXPECT_EQ(*got, close_reply(1008));
      break;
    }
    EXPECT_EQ(*got, (Reply{2, std::string(64 * 1024, 'f')}));
    ++messages;
  }
  EXPECT_GT(messages, 0);
  EXPECT_LT(messages, 1000);
  ASSERT_TRUE(c.send_all(bytes(close_frame(1008))));
  EXPECT_EQ(c.recv_until_end(nullptr, 10000ms), test::StreamEnd::eof);
}

// Streamed fragments through a real peer: python3-websockets sends a message as fragments (a list),
// the server echoes each as it arrives, and the peer reassembles it; 3 MiB in three frames passes a
// server whose bound (max_message_size, 1 MiB) is each frame's.
TEST_P(WebSocketTest, StreamedFragmentsEchoAMessageLargerThanTheBoundFrameByFrame) {
  int status = -1;
  test::run_shell("/usr/bin/python3 -c 'import websockets' 2>/dev/null", status);
  if (status != 0)
    GTEST_SKIP() << "/usr/bin/python3 with python3-websockets is not installed (scripts/install-deps.sh)";
  const std::string script = test::write_temp_file(R"PY(
import asyncio, sys, websockets
async def main(port):
    for path in ("/stream", "/co-stream"):
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=2**23, compression=None) as ws:
            await ws.send(["frag", "men", "ted"])
            assert await ws.recv() == "fragmented"
            parts = [bytes([i]) * (2**20 - 16) for i in range(1, 4)]
            await ws.send(parts)
            got = await ws.recv()
            assert got == b"".join(parts), len(got)
            print(path, len(got))
asyncio.run(asyncio.wait_for(main(int(sys.argv[1])), 30))
)PY",
                                                   ".py");
  const std::string out = test::run_shell("/usr/bin/python3 " + script + " " + std::to_string(port_) + " 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "/stream 3145680\n/co-stream 3145680\n");
}

// python3-websockets offers permessage-deflate ("; client_max_window_bits") on every connection and
// compresses every message it sends: text and binary of several sizes, up to the 1 MiB limit, come
// back byte-exact, compressed or not as the server decides, with the default options and with
// every option set (no context takeover both ways, small windows).
TEST_P(WebSocketTest, PythonWebsocketsAgreesOnPermessageDeflateAndEchoesByteExact) {
  int status = -1;
  test::run_shell("/usr/bin/python3 -c 'import websockets' 2>/dev/null", status);
  if (status != 0)
    GTEST_SKIP() << "/usr/bin/python3 with python3-websockets is not installed (scripts/install-deps.sh)";
  // Each message is checked as it comes back; 28 messages a path: 7 sizes, text and binary, two
  // kinds of content (compressible, and noise that does not shrink).
  const std::string script = test::write_temp_file(R"PY(
import asyncio, random, sys, websockets
async def main(port):
    rng = random.Random(7)
    for path in ("/deflate", "/deflate-strict", "/echo"):
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=2**20) as ws:
            header = ws.response_headers.get("Sec-WebSocket-Extensions", "none")
            names = [e.name for e in ws.extensions]
            assert names == ([] if header == "none" else ["permessage-deflate"]), names
            if header == "none":
                print(path, header)
                continue
            agreed = await ws.recv()
            echoed = 0
            for size in (0, 1, 127, 128, 4000, 70000, 2**20):
                words = "".join(rng.choice(["h\u00e9llo ", "w\u00f6rld ", "\u263a ", "deflate "]) for _ in range(size // 6 + 1))
                texts = [words.encode()[:size].decode("utf-8", "ignore"), "".join(chr(rng.randrange(32, 127)) for _ in range(size))]
                blobs = [bytes(range(256)) * (size // 256) + bytes(size % 256), rng.randbytes(size)]
                for message in texts + blobs:
                    await ws.send(message)
                    back = await ws.recv()
                    assert back == message, (path, size, type(message), len(back))
                    echoed += 1
            print(path, header, agreed, "echoed", echoed)
asyncio.run(asyncio.wait_for(main(int(sys.argv[1])), 60))
)PY",
                                                   ".py");
  const std::string out = test::run_shell("/usr/bin/python3 " + script + " " + std::to_string(port_) + " 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out,
            "/deflate permessage-deflate deflate:15/15 echoed 28\n"
            "/deflate-strict permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
            "server_max_window_bits=10; client_max_window_bits=9 deflate:10/9 snct cnct echoed 28\n"
            "/echo none\n");
}

// A raw client agrees on permessage-deflate, sends RFC 7692's compressed "Hello", then half of a
// compressed message, and goes: the connection's zlib state and buffers go with it (the leak check
// at exit, under ASan), and the server goes on serving.
TEST_P(WebSocketTest, AConnectionThatEndsInsideACompressedMessageLeavesNothingBehind) {
  for (int round = 0; round < 2; ++round) {
    std::string head;
    BlockingClient c = open("/deflate", &head, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    EXPECT_NE(head.find("Sec-WebSocket-Extensions: permessage-deflate\r\n"), std::string::npos) << head;
    auto agreed = read_reply(c);
    ASSERT_TRUE(agreed.has_value());
    EXPECT_EQ(*agreed, (Reply{1, "deflate:15/15"}));
    ASSERT_TRUE(c.send_all(bytes({1, "\xf2\x48\xcd\xc9\xc9\x07\x00", true, 4})));
    auto hello = read_reply(c);  // too short to shrink: sent back uncompressed
    ASSERT_TRUE(hello.has_value());
    EXPECT_EQ(*hello, (Reply{1, "Hello"}));
    ASSERT_TRUE(c.send_all(bytes({2, std::string(300, 'x'), true, 0})));  // the server's deflater is made
    auto back = c.recv_exact(2, 10000ms);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(static_cast<std::uint8_t>((*back)[0]), 0xC2) << "compressed: RSV1";
    const std::size_t n = static_cast<std::uint8_t>((*back)[1]);
    ASSERT_LT(n, 126u);
    ASSERT_TRUE(c.recv_exact(n, 10000ms).has_value());
    ASSERT_TRUE(c.send_all(bytes({2, "\xf2\x48\xcd", false, 4})));  // a first fragment, then the end
    c.close();
  }
}

WEFT_ON_EVERY_TRANSPORT(WebSocketTest);

// ---- the parts on their own

TEST(WebSocketHandshake, AcceptKeyOfRfc6455sExample) { EXPECT_EQ(ws::accept_key(kKey), kAccept); }

TEST(WebSocketUtf8, StreamingValidationFailsAtTheFirstBadByte) {
  ws::Utf8Validator v;
  EXPECT_TRUE(v.feed("\xce"));
  EXPECT_FALSE(v.complete());
  EXPECT_TRUE(v.feed("\xba"));
  EXPECT_TRUE(v.complete());
  EXPECT_FALSE(v.feed("\xed\xa0"));  // a surrogate fails at its second byte
  EXPECT_FALSE(v.feed("a"));         // and stays failed
  for (std::string_view bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80", "\xff", "\x80"}) {
    EXPECT_FALSE(ws::is_valid_utf8(bad)) << bad;
  }
  for (std::string_view good : {"", "plain ascii over eight bytes", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xc2\x80"}) {
    EXPECT_TRUE(ws::is_valid_utf8(good)) << good;
  }
}

TEST(WebSocketFrameEncoder, ClientFramesAreMaskedAndRoundTripThroughAClientDecoder) {
  ws::FrameEncoder client(true);
  ByteBuf wire = default_allocator().buffer(512);
  const std::string payload(300, 'q');
  client.encode(wire, ws::Opcode::binary, true, payload);
  ASSERT_GE(wire.readable_bytes(), 8u);
  EXPECT_EQ(wire.get_u8(wire.reader_index() + 1), 0x80 | 126) << "masked, 16-bit length";
  EXPECT_EQ(wire.view().find(payload.substr(0, 8)), std::string_view::npos) << "the payload is masked";
  ws::FrameDecoder server(ws::FrameDecoder::Role::server, 1 << 20);
  ByteBuf out;
  EXPECT_EQ(server.next(wire, out), ws::FrameDecoder::Status::header);
  EXPECT_EQ(server.next(wire, out), ws::FrameDecoder::Status::payload);
  EXPECT_EQ(out.view(), payload);
  ws::FrameDecoder client_side(ws::FrameDecoder::Role::client, 1 << 20);
  ByteBuf masked = default_allocator().buffer(16);
  client.encode(masked, ws::Opcode::text, true, "x");
  EXPECT_EQ(client_side.next(masked, out), ws::FrameDecoder::Status::error);
  EXPECT_EQ(client_side.error_code(), 1002) << "a client refuses masked frames";
}

// apply_mask works 64 bytes at a time (AVX2 where the CPU has it, else SSE2) with an eight-byte and a
// byte-wise tail: every length around those steps, every place in the key's cycle and every
// alignment of the data must come out as the byte-wise XOR RFC 6455 5.3 defines, and masking twice
// must give the data back; on both paths.
TEST(WebSocketFrameMask, EveryLengthOffsetAndAlignmentMatchesTheBytewiseXor) {
  for (auto* apply : {&ws::apply_mask, &ws::detail::apply_mask_sse2}) {
    const std::uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
    std::vector<std::uint8_t> original(300 + 16);
    for (std::size_t i = 0; i < original.size(); ++i) original[i] = static_cast<std::uint8_t>(i * 131 + 7);
    for (std::size_t align = 0; align < 16; ++align) {
      for (std::uint64_t offset = 0; offset < 8; ++offset) {
        for (std::size_t n = 0; n <= 300; ++n) {
          std::vector<std::uint8_t> data = original;
          apply(data.data() + align, n, key, offset);
          for (std::size_t i = 0; i < data.size(); ++i) {
            const bool inside = i >= align && i < align + n;
            const std::uint8_t want = inside ? original[i] ^ key[(offset + i - align) & 3] : original[i];
            ASSERT_EQ(data[i], want) << "byte " << i << ", n " << n << ", offset " << offset << ", align " << align;
          }
          apply(data.data() + align, n, key, offset);
          ASSERT_EQ(data, original) << "n " << n << ", offset " << offset << ", align " << align;
        }
      }
    }
  }
}

// copy_masked (a client's frames: the message copied into the frame as it is masked) gives what a
// copy and apply_mask give, on both paths, for every length and alignment of either side, and
// writes nothing past the n bytes.
TEST(WebSocketFrameMask, ACopyMaskedIsTheCopyWithTheMaskApplied) {
  const std::uint8_t key[4] = {0x91, 0x04, 0xe2, 0x5b};
  std::vector<std::uint8_t> source(300 + 16);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 71 + 3);
  for (auto* copy : {&ws::copy_masked, &ws::detail::copy_masked_sse2}) {
    for (std::size_t from = 0; from < 16; from += 3) {
      for (std::size_t to = 0; to < 16; to += 5) {
        for (std::size_t n = 0; n <= 300; ++n) {
          std::vector<std::uint8_t> out(300 + 32, 0xAA);
          copy(out.data() + to, source.data() + from, n, key);
          for (std::size_t i = 0; i < out.size(); ++i) {
            const bool inside = i >= to && i < to + n;
            const std::uint8_t want = inside ? source[from + i - to] ^ key[(i - to) & 3] : 0xAA;
            ASSERT_EQ(out[i], want) << "byte " << i << ", n " << n << ", from " << from << ", to " << to;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::websocket_test
