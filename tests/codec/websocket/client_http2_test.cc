// The WebSocket client over HTTP/2 (RFC 8441's client side: client::WebSocketOptions::http2), on
// every transport, against weft's server: echoes over h2c and over h2 by ALPN, many WebSockets and
// requests on one pooled connection, a server that did not enable extended CONNECT (the fallback
// to HTTP/1.1, or the typed error), refusals with a status, a stream reset in the middle of a
// message; and HttpClient::close() ending open WebSockets with 1001, over HTTP/1.1 and HTTP/2.

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_script.h"
#include "support/blocking_client.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/channel/bootstrap.h"
#include "weft/client/http_client.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http2/cleartext_detector.h"
#include "weft/codec/http2/client_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/http2/stream_channel.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/codec/websocket/upgrade.h"

using namespace std::chrono_literals;

// Options leave their rarely used fields to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// A namespace of its own: the unity build puts this file beside the other WebSocket tests.
namespace weft::ws_client_http2_test {
namespace {

using test::open_error;
using test::Outcome;
using test::run_script;
using test::Script;

// A stream served as a channel that answers 200, then, at the client's first bytes, sends the
// first bytes of a frame and resets the stream (RST_STREAM(CANCEL): its channel closes before the
// response ended).
class ResetMidMessage final : public InboundHandler<http2::StreamMessage> {
 public:
  void channel_active(Context& ctx) override {
    ctx.write(http2::ResponseHeaders{http::HttpResponse(200), false});
    ctx.flush();
    ctx.fire_channel_active();
  }
  void channel_read(Context& ctx, http2::StreamMessage&& message) override {
    if (!std::holds_alternative<http2::StreamData>(message) || answered_) return;
    answered_ = true;
    ctx.write(http2::StreamData{ByteBuf::copy_of(std::string("\x82\x7e\x01\x00partial", 11)), false});
    ctx.flush();
    ctx.channel().close();
  }

 private:
  bool answered_ = false;
};

// http2::ServerCodec of a connection's pipeline.
http2::ServerCodec* h2_codec(Pipeline& pipeline) {
  for (const std::string& name : pipeline.names()) {
    if (auto* codec = pipeline.get_as<http2::ServerCodec>(name)) return codec;
  }
  return nullptr;
}

class WebSocketHttp2ClientTest : public test::TransportTest {
 protected:
  void SetUp() override {
    servers_.emplace(transport(), loops(1, 24));
    clients_.emplace(transport(), loops(1, 24));
    router_ = std::make_shared<http::Router>();
    ws::UpgradeOptions chat;
    chat.subprotocols = {"chat"};
    ws::websocket(*router_, "/echo",
                  ws::Callbacks{.on_open =
                                    [this](Context&, const ws::Handshake& h) {
                                      std::lock_guard lock(mutex_);
                                      server_versions_.push_back(h.version == http::Version::http2 ? "h2" : "h1");
                                    },
                                .on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); },
                                .on_close =
                                    [this](Context&, const ws::Message& m) {
                                      std::lock_guard lock(mutex_);
                                      server_closes_.push_back(m.close_code());
                                    }},
                  chat);
    ws::UpgradeOptions deflate;
    deflate.deflate.enabled = true;
    deflate.deflate.min_message_size = 1;
    ws::websocket(*router_, "/deflate",
                  ws::Callbacks{.on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }},
                  deflate);
    router_->route("CONNECT", "/forbidden",
                   [](Context& ctx, http::HttpRequest&) { ctx.write_and_flush(http::HttpResponse(403)); });
    router_->route("CONNECT", "/reset", [](Context& ctx, http::HttpRequest& request) {
      http2::ServerCodec* codec = h2_codec(ctx.channel().pipeline());
      if (codec == nullptr || !codec->serve_as_channel(request, [](http2::StreamChannel& stream) {
            stream.pipeline().add_last("reset", std::make_shared<ResetMidMessage>());
          })) {
        ctx.write_and_flush(http::HttpResponse(500));
      }
    });
    router_->get("/hello",
                 [](Context& ctx, http::HttpRequest&) { ctx.write_and_flush(http::HttpResponse(200).body("hello")); });
  }
  void TearDown() override {
    for (ChannelPtr& s : servers_list_) s->close().wait();
    servers_->shutdown_gracefully(0ms, 5s).wait();
    clients_->shutdown_gracefully(0ms, 5s).wait();
  }

  // HTTP/1.1 and h2c on one port (CleartextDetector); `connect_protocol`: extended CONNECT enabled.
  // Or h2 over TLS (ALPN "h2" only). Returns the port.
  std::uint16_t serve(bool tls, bool connect_protocol, std::uint32_t max_streams = 100) {
    http2::Settings settings;
    settings.enable_connect_protocol = connect_protocol;
    settings.max_concurrent_streams = max_streams;
    TlsContextPtr context = tls ? test::test_server_context(test::test_pki().localhost, {"h2"}) : TlsContextPtr();
    auto router = router_;
    auto accepted = accepted_;
    ChannelPtr server =
        ServerBootstrap()
            .group(*servers_)
            .child_handler([router, settings, context, accepted](Channel& ch) {
              accepted->fetch_add(1);
              if (context) {
                ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
                ch.pipeline().add_last("http2", std::make_shared<http2::ServerCodec>(settings));
              } else {
                ch.pipeline().add_last("detect", std::make_shared<http2::CleartextDetector>(http::Limits{}, settings));
              }
              ch.pipeline().add_last("router", router);
            })
            .bind(SocketAddress::loopback(0))
            .get();
    servers_list_.push_back(server);
    return server->local_address().port();
  }
  // A client that speaks h2c by prior knowledge (ws:// over HTTP/2), and accepts the test's certificate.
  client::ClientOptions h2_options() const {
    client::ClientOptions options;
    options.http2_prior_knowledge = true;
    options.insecure = true;
    return options;
  }
  // Runs `f` on the client group's first loop and returns what it returns: the client's calls made
  // there share that loop's pools (one per loop and origin), whatever the transport.
  template <class F>
  auto on_client_loop(F&& f) {
    return test::call_on(&clients_->at(0), std::forward<F>(f));
  }
  EventLoop* loop0() { return &clients_->at(0); }
  http::HttpClientResponse get(client::HttpClient& client, const std::string& target) {
    Future<http::HttpClientResponse> answer = on_client_loop([&] { return client.get(target); });
    answer.wait();
    return answer.take();
  }
  static std::string url(const char* scheme, std::uint16_t port, std::string_view path) {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port) + std::string(path);
  }
  std::vector<std::uint16_t> server_closes() {
    std::lock_guard lock(mutex_);
    return server_closes_;
  }
  std::vector<std::string> server_versions() {
    std::lock_guard lock(mutex_);
    return server_versions_;
  }

  std::optional<EventLoopGroup> servers_;
  std::optional<EventLoopGroup> clients_;
  std::shared_ptr<http::Router> router_;
  std::vector<ChannelPtr> servers_list_;
  std::shared_ptr<std::atomic<int>> accepted_ = std::make_shared<std::atomic<int>>(0);
  std::mutex mutex_;
  std::vector<std::uint16_t> server_closes_;
  std::vector<std::string> server_versions_;
};

TEST_P(WebSocketHttp2ClientTest, EchoesOverH2cAndOverH2ByAlpn) {
  const std::uint16_t h2c = serve(false, true);
  const std::uint16_t h2 = serve(true, true);
  client::HttpClient client(*clients_, h2_options());
  const std::string large = "b:" + std::string(200 * 1024, 'q');  // past the stream's first window
  for (const std::string& target : {url("ws", h2c, "/echo?room=7"), url("wss", h2, "/echo?room=7")}) {
    SCOPED_TRACE(target);
    ws::Handshake h;
    client::WebSocketOptions options;
    options.http2 = client::WebSocketHttp2::require;
    options.subprotocols = {"nope", "chat"};
    const Outcome o =
        run_script(client, target, {{"t:héllo", "b:\x01\x02", large}, 3, 4001, "bye"}, options, &h, loop0());
    ASSERT_EQ(o.got.size(), 3u);
    EXPECT_EQ(o.got[0], "t:héllo");
    EXPECT_EQ(o.got[1], "b:\x01\x02");
    EXPECT_EQ(o.got[2], large);
    EXPECT_EQ(o.close_code, 4001) << "the server echoes the client's close";
    EXPECT_EQ(h.version, http::Version::http2);
    EXPECT_EQ(h.subprotocol, "chat");
    EXPECT_EQ(h.target, "/echo?room=7");
  }
  EXPECT_TRUE(test::eventually([&] { return server_closes() == std::vector<std::uint16_t>{4001, 4001}; }));
  EXPECT_EQ(server_versions(), (std::vector<std::string>{"h2", "h2"}));
  // permessage-deflate, offered and agreed as headers of the CONNECT and its 200.
  ws::Handshake h;
  client::WebSocketOptions options;
  options.http2 = client::WebSocketHttp2::require;
  options.deflate.enabled = true;
  options.deflate.min_message_size = 1;
  const std::string text = "t:" + std::string(5000, 'z');
  const Outcome o = run_script(client, url("ws", h2c, "/deflate"), {{text, text}, 2}, options, &h, loop0());
  ASSERT_EQ(o.got.size(), 2u);
  EXPECT_EQ(o.got[1], text);
  EXPECT_TRUE(h.deflate);
  EXPECT_EQ(client.stats().connections_opened, 2u) << "one connection per origin, reused";
}

TEST_P(WebSocketHttp2ClientTest, ManyWebSocketsAndRequestsShareOneConnection) {
  const std::uint16_t port = serve(false, true);
  client::HttpClient client(*clients_, h2_options());
  // The pool's connection first (a request), then the WebSockets on it, all open at once: each
  // echoes one message and stays open until close() ends them all.
  EXPECT_EQ(get(client, url("http", port, "/hello")).status(), 200);
  constexpr int kSockets = 8;
  struct Open {
    std::shared_ptr<Promise<std::string>> echoed = std::make_shared<Promise<std::string>>();
    std::shared_ptr<Promise<std::uint16_t>> closed = std::make_shared<Promise<std::uint16_t>>();
    Future<ws::Handshake> opened;
  };
  std::vector<Open> open(kSockets);
  for (int i = 0; i < kSockets; ++i) {
    open[i].opened = on_client_loop([&] {
      return client.websocket(
          url("ws", port, "/echo"),
          [echoed = open[i].echoed, closed = open[i].closed, i](Connection<ws::Message>& c) -> Task<> {
            try {
              co_await c.write(ws::Message::text("n" + std::to_string(i)));
              c.flush();
              echoed->set_value(std::string((co_await c.read()).view()));
              for (;;) {
                ws::Message m = co_await c.read();
                if (m.is_close()) {
                  closed->set_value(m.close_code());
                  co_return;
                }
              }
            } catch (...) {
              closed->set_error(std::current_exception());
            }
          },
          client::WebSocketOptions{.http2 = client::WebSocketHttp2::require});
    });
  }
  for (Open& o : open) EXPECT_EQ(o.opened.get().version, http::Version::http2);
  for (int i = 0; i < kSockets; ++i) EXPECT_EQ(open[i].echoed->future().get(), "n" + std::to_string(i));
  EXPECT_EQ(get(client, url("http", port, "/hello")).body_view(), "hello");
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(accepted_->load(), 1) << "every WebSocket and request on one connection";
  client.close().get();
  for (Open& o : open) EXPECT_EQ(o.closed->future().get(), ws::close_code::going_away);
  EXPECT_TRUE(test::eventually([&] { return server_closes().size() == kSockets; }));
}

TEST_P(WebSocketHttp2ClientTest, AnOpenWebSocketHoldsItsStreamInThePool) {
  // A server that takes two streams at once: two WebSockets fill its connection, so the pool opens
  // another for a request (which would otherwise wait behind them until its request timeout).
  const std::uint16_t port = serve(false, true, 2);
  client::ClientOptions options = h2_options();
  options.request_timeout = 5s;  // (bounds the failure only)
  client::HttpClient client(*clients_, options);
  std::vector<std::shared_ptr<Promise<std::uint16_t>>> closed;
  for (int i = 0; i < 2; ++i) {
    auto done = std::make_shared<Promise<std::uint16_t>>();
    closed.push_back(done);
    Future<ws::Handshake> opened = on_client_loop([&] {
      return client.websocket(
          url("ws", port, "/echo"),
          ws::Callbacks{.on_close = [done](Context&, const ws::Message& m) { done->set_value(m.close_code()); }},
          client::WebSocketOptions{.http2 = client::WebSocketHttp2::require});
    });
    EXPECT_EQ(opened.get().version, http::Version::http2);
  }
  EXPECT_EQ(get(client, url("http", port, "/hello")).body_view(), "hello");
  EXPECT_EQ(client.stats().connections_opened, 2u);
  EXPECT_EQ(accepted_->load(), 2);
  client.close().get();
  for (auto& c : closed) EXPECT_EQ(c->future().get(), ws::close_code::going_away);
}

TEST_P(WebSocketHttp2ClientTest, AServerWithoutExtendedConnectFallsBackOrFails) {
  const std::uint16_t port = serve(false, false);
  client::HttpClient client(*clients_, h2_options());
  ws::Handshake h;
  const Outcome o =
      run_script(client, url("ws", port, "/echo"), {{"t:one"}, 1}, {.http2 = client::WebSocketHttp2::prefer}, &h);
  ASSERT_EQ(o.got.size(), 1u);
  EXPECT_EQ(o.got[0], "t:one");
  EXPECT_EQ(h.version, http::Version::http11) << "prefer: HTTP/1.1 on a connection of its own";
  auto noop = [](Connection<ws::Message>&) -> Task<> { co_return; };
  auto e = open_error<ws::HandshakeError>(
      client.websocket(url("ws", port, "/echo"), noop, {.http2 = client::WebSocketHttp2::require}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 0);
  EXPECT_NE(e->reason().find("extended CONNECT"), std::string::npos) << e->reason();
  // A client that does not speak h2c: require fails at once, prefer is HTTP/1.1.
  client::HttpClient plain(*clients_);
  e = open_error<ws::HandshakeError>(
      plain.websocket(url("ws", port, "/echo"), noop, {.http2 = client::WebSocketHttp2::require}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 0);
}

TEST_P(WebSocketHttp2ClientTest, AnAnswerOtherThan2xxIsAHandshakeErrorWithItsStatus) {
  const std::uint16_t port = serve(false, true);
  client::HttpClient client(*clients_, h2_options());
  auto noop = [](Connection<ws::Message>&) -> Task<> {
    ADD_FAILURE() << "no WebSocket was opened";
    co_return;
  };
  const client::WebSocketOptions options{.http2 = client::WebSocketHttp2::require};
  auto e = open_error<ws::HandshakeError>(
      on_client_loop([&] { return client.websocket(url("ws", port, "/forbidden"), noop, options); }));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 403);
  e = open_error<ws::HandshakeError>(
      on_client_loop([&] { return client.websocket(url("ws", port, "/nowhere"), noop, options); }));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status(), 404);
  EXPECT_EQ(get(client, url("http", port, "/hello")).status(), 200) << "the connection serves on";
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

TEST_P(WebSocketHttp2ClientTest, AStreamResetMidMessageFailsTheWebSocketWithATypedError) {
  const std::uint16_t port = serve(false, true);
  client::HttpClient client(*clients_, h2_options());
  auto result = std::make_shared<Promise<std::uint32_t>>();
  Future<std::uint32_t> reset_code = result->future();
  Future<ws::Handshake> opened = on_client_loop([&] {
    return client.websocket(
        url("ws", port, "/reset"),
        [result](Connection<ws::Message>& c) -> Task<> {
          try {
            co_await c.write(ws::Message::text("go"));
            c.flush();
            ws::Message m = co_await c.read();  // the handler's close first, as over a socket
            if (!m.is_close() || m.close_code() != ws::close_code::abnormal) {
              result->fail(Error("not a close with 1006"));
              co_return;
            }
            co_await c.read();  // then the reset's error, the pipeline's exception event
            result->fail(Error("read() after the close did not throw"));
          } catch (const http2::ClientStreamError& e) {
            result->set_value(e.error_code());
          } catch (...) {
            result->set_error(std::current_exception());
          }
        },
        client::WebSocketOptions{.http2 = client::WebSocketHttp2::require});
  });
  EXPECT_EQ(opened.get().version, http::Version::http2);
  EXPECT_EQ(reset_code.get(), 0x8u) << "RST_STREAM(CANCEL)";
  EXPECT_EQ(get(client, url("http", port, "/hello")).status(), 200) << "the connection serves on";
  EXPECT_EQ(client.stats().connections_opened, 1u);
}

TEST_P(WebSocketHttp2ClientTest, CloseEndsOpenWebSocketsWith1001) {
  const std::uint16_t port = serve(false, true);
  auto client = std::make_unique<client::HttpClient>(*clients_, h2_options());
  std::vector<Future<std::uint16_t>> closes;
  for (client::WebSocketHttp2 mode : {client::WebSocketHttp2::never, client::WebSocketHttp2::require}) {
    auto closed = std::make_shared<Promise<std::uint16_t>>();
    closes.push_back(closed->future());
    client
        ->websocket(
            url("ws", port, "/echo"),
            ws::Callbacks{.on_close = [closed](Context&, const ws::Message& m) { closed->set_value(m.close_code()); }},
            {.http2 = mode})
        .get();
  }
  client->close().get();
  for (auto& f : closes) EXPECT_EQ(f.get(), ws::close_code::going_away) << "the server's echo of the 1001";
  EXPECT_TRUE(test::eventually([&] { return server_closes() == std::vector<std::uint16_t>{1001, 1001}; }));
  EXPECT_EQ(server_versions().size(), 2u);
  auto noop = [](Connection<ws::Message>&) -> Task<> { co_return; };
  EXPECT_TRUE(open_error<client::ClientClosedError>(client->websocket(url("ws", port, "/echo"), noop)));
}

WEFT_ON_EVERY_TRANSPORT(WebSocketHttp2ClientTest);

}  // namespace
}  // namespace weft::ws_client_http2_test
