// TLS over real sockets on every transport: a weft TLS client against a weft TLS server (echo of
// many KiB both ways, every byte checked), HTTP/1.1 over TLS (weft's client, curl, Python's ssl,
// openssl s_client), a TLS client that never reads: the server's channel turns unwritable and
// its queue stays bounded, as without TLS; and kTLS asked for on both sides (the fallback here).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/shell.h"
#include "support/blocking_client.h"
#include "support/channel_probe.h"
#include "support/stderr_capture.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/core/log.h"
#include "weft/weft.h"

using namespace std::chrono_literals;
using ::testing::HasSubstr;

namespace weft {
namespace {

using test::test_client_context;
using test::test_pki;
using test::test_server_context;

class TlsIntegrationTest : public test::TransportTest {};

std::string pattern(std::size_t n, std::size_t seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 17 + (i >> 10)) & 0xff);
  return s;
}

// Keeps every byte it receives; `done` completes once `expected` bytes have arrived.
class Collector final : public InboundHandler<ByteBuf> {
 public:
  explicit Collector(std::size_t expected) : expected_(expected) {}
  void channel_read(Context&, ByteBuf&& buf) override {
    std::lock_guard lock(mutex_);
    received_ += buf.view();
    if (received_.size() >= expected_) done.set_value();
  }
  std::string received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  Promise<void> done;

 private:
  mutable std::mutex mutex_;
  std::string received_;
  std::size_t expected_;
};

ChannelPtr connect_tls(EventLoopGroup& group, const SocketAddress& server, std::shared_ptr<TlsHandler> tls,
                       std::shared_ptr<Handler> app, bool auto_read = true) {
  return Bootstrap()
      .group(group)
      .option(option::auto_read, auto_read)
      .option(option::receive_buffer_size, auto_read ? 0 : 32 * 1024)
      .handler([tls, app](Channel& ch) {
        ch.pipeline().add_last("tls", tls);
        if (app) ch.pipeline().add_last("app", app);
      })
      .connect(server)
      .get();
}

TEST_P(TlsIntegrationTest, EchoOfManyKibibytesBothWays) {
  constexpr int kClients = 3;
  // Blocking transport: the client's thread sends all before it reads any echo, so what is in flight
  // must fit the kernel's buffers (a blocking send would wait for the server, blocked on its own).
  const std::size_t kBytes = is_blocking() ? 48 * 1024 : 300 * 1024;
  EventLoopGroup group(transport(), loops(2, 2 * kClients + 3));
  auto server_context = test_server_context(test_pki().localhost);
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([server_context](Channel& ch) {
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(server_context));
                            ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  auto client_context = test_client_context();
  std::vector<ChannelPtr> clients;
  std::vector<std::shared_ptr<Collector>> collectors;
  std::vector<std::shared_ptr<TlsHandler>> handlers;
  for (int i = 0; i < kClients; ++i) {
    handlers.push_back(std::make_shared<TlsHandler>(client_context, "localhost"));
    collectors.push_back(std::make_shared<Collector>(kBytes));
    clients.push_back(connect_tls(group, server->local_address(), handlers.back(), collectors.back()));
  }
  for (int i = 0; i < kClients; ++i) {
    const std::string data = pattern(kBytes, static_cast<std::size_t>(i));
    for (std::size_t at = 0; at < kBytes; at += 7000) {  // written before the handshake is done, too
      clients[static_cast<std::size_t>(i)]->write(ByteBuf::copy_of(std::string_view(data).substr(at, 7000)));
    }
    clients[static_cast<std::size_t>(i)]->flush();
  }
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(handlers[static_cast<std::size_t>(i)]->handshake_future().wait_for(10s));
    EXPECT_TRUE(handlers[static_cast<std::size_t>(i)]->handshake_future().is_success());
    ASSERT_TRUE(collectors[static_cast<std::size_t>(i)]->done.future().wait_for(20s))
        << "client " << i << " got " << collectors[static_cast<std::size_t>(i)]->received().size() << " bytes";
    EXPECT_TRUE(collectors[static_cast<std::size_t>(i)]->received() == pattern(kBytes, static_cast<std::size_t>(i)))
        << "client " << i << ": the echo differs";
  }
  // A second connection of the same client context resumes the session.
  auto again = std::make_shared<TlsHandler>(client_context, "localhost");
  auto collector = std::make_shared<Collector>(5);
  ChannelPtr resumed = connect_tls(group, server->local_address(), again, collector);
  resumed->write_and_flush(ByteBuf::copy_of("again"));
  ASSERT_TRUE(collector->done.future().wait_for(10s));
  EXPECT_TRUE(again->session_resumed());
  for (auto& c : clients) c->close().wait_for(5s);
  resumed->close().wait_for(5s);
  server->close().wait_for(5s);
}

class Collect final : public InboundHandler<http::HttpClientResponse, http::HttpClientResponse> {
 public:
  explicit Collect(int expected) : expected_(expected) {}
  void channel_read(Context&, http::HttpClientResponse&& r) override {
    std::lock_guard lock(mutex);
    bodies.emplace_back(r.body_view());
    if (static_cast<int>(bodies.size()) == expected_) done.set_value();
  }
  std::mutex mutex;
  std::vector<std::string> bodies;
  Promise<void> done;

 private:
  int expected_;
};

class HttpsServer {
 public:
  explicit HttpsServer(Transport& transport, std::size_t loops)
      : group_(transport, loops) {
    auto router = std::make_shared<http::Router>();
    router->get("/plaintext", [](Context& ctx, http::HttpRequest&) {
      ctx.write(http::HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
    });
    router->post("/echo", [](Context& ctx, http::HttpRequest& req) {
      ctx.write(http::HttpResponse(200).body(ByteBuf::copy_of(req.body_view())));
    });
    auto context = test_server_context(test_pki().localhost, {"http/1.1"});
    server_ = ServerBootstrap()
                  .group(group_)
                  .child_handler([router, context](Channel& ch) {
                    ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                    ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                    ch.pipeline().add_last("router", router);
                  })
                  .bind(SocketAddress::loopback(0))
                  .get();
  }
  ~HttpsServer() { server_->close().wait_for(5s); }
  EventLoopGroup& group() { return group_; }
  SocketAddress address() const { return server_->local_address(); }
  std::uint16_t port() const { return server_->local_address().port(); }

 private:
  EventLoopGroup group_;
  ChannelPtr server_;
};

TEST_P(TlsIntegrationTest, HttpOverTlsWithWeftsClient) {
  HttpsServer server(transport(), loops(1, 6));
  constexpr int kRequests = 32;
  auto collect = std::make_shared<Collect>(kRequests);
  auto tls = std::make_shared<TlsHandler>(test_client_context({"http/1.1"}), "localhost");
  ChannelPtr client = Bootstrap()
                          .group(server.group())
                          .handler([collect, tls](Channel& ch) {
                            ch.pipeline().add_last("tls", tls);
                            ch.pipeline().add_last("http", std::make_shared<http::ClientCodec>());
                            ch.pipeline().add_last("collect", collect);
                          })
                          .connect(server.address())
                          .get();
  for (int i = 0; i < kRequests; ++i) {
    client->write(http::HttpClientRequest("POST", "/echo").header("Host", "localhost").body(
        ByteBuf::copy_of(pattern(1000 + static_cast<std::size_t>(i) * 500, static_cast<std::size_t>(i)))));
  }
  client->flush();
  ASSERT_TRUE(collect->done.future().wait_for(20s));
  EXPECT_EQ(tls->application_protocol(), "http/1.1");
  {
    std::lock_guard lock(collect->mutex);
    for (int i = 0; i < kRequests; ++i) {
      EXPECT_TRUE(collect->bodies[static_cast<std::size_t>(i)] ==
                  pattern(1000 + static_cast<std::size_t>(i) * 500, static_cast<std::size_t>(i)))
          << "answer " << i;
    }
  }
  client->close().wait_for(5s);
}

std::string run(const std::string& command, int& status) { return test::run_shell(command, status); }

TEST_P(TlsIntegrationTest, HttpOverTlsWithCurlPythonAndOpensslClients) {
  HttpsServer server(transport(), loops(1, 6));
  const std::string ca = test::write_temp_file(test_pki().ca.cert_pem, ".pem");
  const std::string port = std::to_string(server.port());
  int status = -1;
  std::string out = run("curl -s -i --max-time 10 --cacert " + ca + " --resolve localhost:" + port +
                            ":127.0.0.1 https://localhost:" + port + "/plaintext 2>&1",
                        status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(out, HasSubstr("\r\n\r\nHello, World!"));

  const std::string script =
      "import http.client, ssl\n"
      "ctx = ssl.create_default_context(cafile='" + ca + "')\n"
      "c = http.client.HTTPSConnection('localhost', " + port + ", context=ctx, timeout=10)\n"
      "out = []\n"
      "for i in range(3):\n"
      "    c.request('GET', '/plaintext'); out.append(c.getresponse().read().decode())\n"
      "c.request('POST', '/echo', body=b'x' * 200000); out.append(str(len(c.getresponse().read())))\n"
      "print('|'.join(out), c.sock.version())\n";
  const std::string script_file = test::write_temp_file(script, ".py");
  out = run("python3 " + script_file + " 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "Hello, World!|Hello, World!|Hello, World!|200000 TLSv1.3\n");

  out = run("printf 'GET /plaintext HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | "
            "timeout 10 openssl s_client -quiet -connect 127.0.0.1:" + port + " -servername localhost -CAfile " + ca +
                " -verify_return_error -verify_hostname localhost -alpn http/1.1 2>/dev/null",
            status);
  EXPECT_THAT(out, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(out, HasSubstr("Hello, World!"));
}

// The server's end of a connection is close_notify, then FIN -- whether the server ends it after a
// "Connection: close" answer (a graceful close) or after the client's FIN -- so the client can tell
// a whole answer from a cut one (Python's ssl with suppress_ragged_eofs=False raises SSLEOFError on
// a FIN without close_notify).
TEST_P(TlsIntegrationTest, TheServerEndsEveryConnectionWithCloseNotify) {
  HttpsServer server(transport(), loops(1, 6));
  const std::string ca = test::write_temp_file(test_pki().ca.cert_pem, ".pem");
  const std::string script =
      "import socket, ssl\n"
      "ctx = ssl.create_default_context(cafile='" + ca + "')\n"
      "def ask(keep_alive):\n"
      "    raw = socket.create_connection(('127.0.0.1', " + std::to_string(server.port()) + "), timeout=10)\n"
      "    s = ctx.wrap_socket(raw, server_hostname='localhost', suppress_ragged_eofs=False)\n"
      "    s.sendall(b'GET /plaintext HTTP/1.1\\r\\nHost: localhost\\r\\n' +\n"
      "              (b'\\r\\n' if keep_alive else b'Connection: close\\r\\n\\r\\n'))\n"
      "    if keep_alive:\n"
      "        socket.socket.shutdown(s, socket.SHUT_WR)  # a bare FIN, under the TLS layer\n"
      "    data = b''\n"
      "    try:\n"
      "        while True:\n"
      "            chunk = s.recv(4096)\n"
      "            if not chunk:\n"
      "                break\n"
      "            data += chunk\n"
      "        end = 'close_notify'\n"
      "    except ssl.SSLEOFError:\n"
      "        end = 'no close_notify'\n"
      "    return ('200' if data.startswith(b'HTTP/1.1 200') else repr(data[:40])) + ' ' + end\n"
      "print(ask(False) + ' | ' + ask(True))\n";
  const std::string script_file = test::write_temp_file(script, ".py");
  int status = -1;
  const std::string out = run("python3 " + script_file + " 2>&1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "200 close_notify | 200 close_notify\n");
}

// After the handshake, writes 64 KiB chunks while the channel is writable, resuming when it turns
// writable again.
class TlsFlooder final : public InboundHandler<ByteBuf> {
 public:
  static constexpr std::size_t kChunk = 64 * 1024;
  void channel_read(Context&, ByteBuf&&) override {}
  void user_event(Context& ctx, const std::any& event) override {
    const auto* handshake = std::any_cast<TlsHandshakeCompleted>(&event);
    if (handshake != nullptr && handshake->success()) pump(ctx);
    ctx.fire_user_event(event);
  }
  void writability_changed(Context& ctx) override {
    if (ctx.channel().is_writable()) {
      pump(ctx);
    } else {
      unwritable_pending.store(ctx.channel().pending_write_bytes());
      unwritable.set_value();
    }
    ctx.fire_writability_changed();
  }
  void pump(Context& ctx) {
    Channel& ch = ctx.channel();
    while (ch.is_writable() && ch.is_open() && sent.load() < kTotal) {
      ByteBuf chunk = ctx.allocator().buffer(kChunk);
      chunk.write_zero(kChunk);
      sent.fetch_add(kChunk);
      ctx.write_and_flush(std::move(chunk));
      max_pending.store(std::max(max_pending.load(), ch.pending_write_bytes()));
    }
  }
  static constexpr std::size_t kTotal = 64u << 20;
  Promise<void> unwritable;
  std::atomic<std::size_t> sent{0};
  std::atomic<std::size_t> max_pending{0};
  std::atomic<std::size_t> unwritable_pending{0};
};

TEST_P(TlsIntegrationTest, AClientThatNeverReadsMakesTheServerUnwritableAndItsQueueStaysBounded) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark "
                    "(BlockingTransportTest.APeerThatNeverReadsBlocksTheWriterWithABoundedQueue)";
  }
  EventLoopGroup group(transport(), loops(1, 3));
  auto flooder = std::make_shared<TlsFlooder>();
  auto context = test_server_context(test_pki().localhost);
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_option(option::send_buffer_size, 64 * 1024)
                          .child_handler([flooder, context](Channel& ch) {
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                            ch.pipeline().add_last("flood", flooder);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  // The client reads only while its handshake needs it (auto-read off), then never again.
  auto tls = std::make_shared<TlsHandler>(test_client_context(), "localhost");
  ChannelPtr client = connect_tls(group, server->local_address(), tls, nullptr, false);
  ASSERT_TRUE(tls->handshake_future().wait_for(10s));
  ASSERT_TRUE(flooder->unwritable.future().wait_for(20s)) << "never unwritable; sent " << flooder->sent.load();
  constexpr std::size_t kHigh = ChannelConfig{}.write_buffer_high_water_mark;
  constexpr std::size_t kChunkOnTheWire = TlsFlooder::kChunk + 1024;  // with the records' overhead
  EXPECT_GT(flooder->unwritable_pending.load(), kHigh);
  EXPECT_LE(flooder->unwritable_pending.load(), kHigh + kChunkOnTheWire);
  // Nothing more is sent while the client does not read: wait until the count stops moving.
  std::size_t sent_when_stuck = flooder->sent.load();
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(100ms);
    if (flooder->sent.load() == sent_when_stuck) break;
    sent_when_stuck = flooder->sent.load();
  }
  EXPECT_LT(flooder->sent.load(), TlsFlooder::kTotal);
  EXPECT_LE(flooder->max_pending.load(), kHigh + kChunkOnTheWire);
  EXPECT_LT(flooder->max_pending.load(), 16u << 20);
  client->close().wait_for(5s);
  server->close().wait_for(5s);
}

// The same client against the HTTP server: it pipelines requests for large answers and never reads
// them. The server's channel turns unwritable, the HTTP codec stops reading, and the queue stays
// bounded (as without TLS: see docs/http1.md).
TEST_P(TlsIntegrationTest, AnHttpPipelinerThatNeverReadsStopsTheServersReading) {
  if (is_blocking()) {
    GTEST_SKIP() << "a blocking send holds the writer instead of queueing past the mark";
  }
  test::ProbeRegistry probes;  // outlives the group: the child initializer refers to it
  EventLoopGroup group(transport(), loops(1, 3));
  static const std::string kBig(256 * 1024, 'b');
  auto router = std::make_shared<http::Router>();
  auto answered = std::make_shared<std::atomic<int>>(0);  // the router may outlive this test's frame
  router->get("/big", [answered](Context& ctx, http::HttpRequest&) {
    answered->fetch_add(1);
    ctx.write(http::HttpResponse(200).body_view(kBig));
  });
  auto context = test_server_context(test_pki().localhost);
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_option(option::send_buffer_size, 64 * 1024)
                          .child_handler([&probes, router, context](Channel& ch) {
                            ch.pipeline().add_last("probe", std::make_shared<test::ChannelProbe>(probes.add()));
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                            ch.pipeline().add_last("http", std::make_shared<http::ServerCodec>());
                            ch.pipeline().add_last("router", router);
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  auto tls = std::make_shared<TlsHandler>(test_client_context(), "localhost");
  ChannelPtr client = connect_tls(group, server->local_address(), tls, nullptr, false);
  ASSERT_TRUE(tls->handshake_future().wait_for(10s));
  constexpr int kRequests = 400;  // 100 MiB of answers if nothing stopped the server
  std::string requests;
  for (int i = 0; i < kRequests; ++i) requests += "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n";
  client->write_and_flush(ByteBuf::copy_of(requests));

  auto probe = probes.wait(0);
  ASSERT_NE(probe, nullptr);
  ASSERT_TRUE(test::eventually([&] { return probe->index_of("unwritable") >= 0; }, 20s)) << "never unwritable";
  ChannelPtr channel = probe->channel();
  ASSERT_NE(channel, nullptr);
  // Read on the channel's loop: its reading is suspended and its queue bounded.
  auto look = [&] {
    Promise<std::pair<std::uint32_t, std::size_t>> seen;
    channel->loop().execute([&] {
      seen.set_value(std::pair<std::uint32_t, std::size_t>(channel->read_suspensions(), channel->pending_write_bytes()));
    });
    return seen.future().get();
  };
  ASSERT_TRUE(test::eventually([&] { return look().first > 0; }, 20s)) << "the server kept reading";
  const auto [suspensions, pending] = look();
  EXPECT_GT(suspensions, 0u);
  EXPECT_LT(pending, 16u << 20);
  EXPECT_LT(answered->load(), kRequests);
  client->close().wait_for(5s);
  server->close().wait_for(5s);
}

// A coroutine connection (serve) on a client channel behind a TlsHandler: what it writes before
// the handshake is done is sent after it, and it reads the server's echo like plain bytes.
Task<> talk(Connection<ByteBuf>& c, Promise<std::string> got) {
  co_await c.write(ByteBuf::copy_of("spoken over TLS"));
  c.flush();
  std::string received;
  while (received.size() < 15) {
    ByteBuf chunk = co_await c.read();
    received += chunk.view();
  }
  got.set_value(received);
  c.close();
}

TEST_P(TlsIntegrationTest, ACoroutineClientTalksOverTls) {
  EventLoopGroup group(transport(), loops(1, 3));
  auto server_context = test_server_context(test_pki().localhost);
  ChannelPtr server = ServerBootstrap()
                          .group(group)
                          .child_handler([server_context](Channel& ch) {
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(server_context));
                            ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
                          })
                          .bind(SocketAddress::loopback(0))
                          .get();
  auto client_context = test_client_context();
  Promise<std::string> got;
  ChannelPtr client = Bootstrap()
                          .group(group)
                          .handler([client_context, got](Channel& ch) {
                            ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(client_context, "localhost"));
                            serve<ByteBuf>(ch, [got](Connection<ByteBuf>& c) { return talk(c, got); });
                          })
                          .connect(server->local_address())
                          .get();
  ASSERT_TRUE(got.future().wait_for(10s));
  EXPECT_EQ(got.future().get(), "spoken over TLS");
  client->close_future().wait_for(5s);
  server->close().wait_for(5s);
}

// kTLS asked for on both sides (TlsContextBuilder::kernel_tls). This machine's kernel does not offer
// the tls ULP: the records are made in user space, and the process says so once. On a kernel that
// offers it the kernel makes them, the echo must be whole all the same, and the process says that
// once instead. One line per process: the count runs across the transports' runs.
int g_kernel_tls_lines = 0;

class LogLevelScope {
 public:
  explicit LogLevelScope(LogLevel level) : saved_(log_level()) { set_log_level(level); }
  ~LogLevelScope() { set_log_level(saved_); }
  LogLevelScope(const LogLevelScope&) = delete;
  LogLevelScope& operator=(const LogLevelScope&) = delete;

 private:
  LogLevel saved_;
};

TEST_P(TlsIntegrationTest, KernelTlsAskedForCarriesTheDataAndIsReportedOnce) {
  constexpr std::size_t kBytes = 48 * 1024;  // the blocking transport's client sends it all before reading
  std::string log;
  {
    LogLevelScope info(LogLevel::info);
    test::StderrCapture capture;
    EventLoopGroup group(transport(), loops(2, 3));
    auto server_context = TlsContext::server()
                              .certificate_chain_pem(test_pki().localhost.cert_pem)
                              .private_key_pem(test_pki().localhost.key_pem)
                              .kernel_tls(true)
                              .build();
    ChannelPtr server = ServerBootstrap()
                            .group(group)
                            .child_handler([server_context](Channel& ch) {
                              ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(server_context));
                              ch.pipeline().add_last("echo", std::make_shared<test::BackpressureEcho>());
                            })
                            .bind(SocketAddress::loopback(0))
                            .get();
    auto client_context = TlsContext::client().trust_pem(test_pki().ca.cert_pem).kernel_tls(true).build();
    auto tls = std::make_shared<TlsHandler>(client_context, "localhost");
    auto collector = std::make_shared<Collector>(kBytes);
    ChannelPtr client = connect_tls(group, server->local_address(), tls, collector);
    const std::string data = pattern(kBytes, 9);
    EXPECT_TRUE(tls->handshake_future().wait_for(10s));
    for (std::size_t at = 0; at < kBytes; at += 5000) {
      client->write(ByteBuf::copy_of(std::string_view(data).substr(at, 5000)));
    }
    client->flush();
    EXPECT_TRUE(collector->done.future().wait_for(20s)) << collector->received().size() << " bytes came back";
    EXPECT_TRUE(collector->received() == data) << "the echo differs";
    client->close().wait_for(5s);
    server->close().wait_for(5s);
    log = capture.stop();
  }
  g_kernel_tls_lines += test::count_occurrences(log, "TLS: kernel TLS was asked for, but this kernel does not offer") +
                        test::count_occurrences(log, "TLS: kernel TLS on (TX)");
  EXPECT_EQ(g_kernel_tls_lines, 1) << "kernel TLS lines in this process so far; this run's log:\n" << log;
}

WEFT_ON_EVERY_TRANSPORT(TlsIntegrationTest);

}  // namespace
}  // namespace weft
