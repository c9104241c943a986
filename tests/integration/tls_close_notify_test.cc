// A client's close_notify ends its input as a FIN does, on every transport: an HTTPS server still
// sends every answer it owes (HTTP/1.1 pipelined, an HTTP/2 stream in flight), then its own
// close_notify, then FIN. The client is OpenSSL on a blocking socket: it sends close_notify with
// SSL_shutdown and keeps reading (TLS half-closure), which weft's own TlsHandler never does.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <any>
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "support/h2_client.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/http1/server_codec.h"
#include "weft/codec/http2/server_codec.h"
#include "weft/codec/tls/application_protocol_negotiation_handler.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

// What the server side of a test shares with the test thread (any thread).
struct CloseNotifyServerState {
  Promise<void> close_notify_seen;  // the server's TlsHandler read the client's close_notify
  Promise<void> slow_arrived;       // the request for /slow reached the router
  std::mutex mutex;
  ChannelPtr slow_channel;
  std::uint64_t slow_sequence = 0;

  // Answers /slow now (from the test thread).
  void answer_slow() {
    std::lock_guard lock(mutex);
    slow_channel->write_and_flush(http::HttpResponse(200).body_view("slow answer").for_request(slow_sequence));
  }
};

// Between the TlsHandler and the codecs: tells the test when the close_notify was read.
class CloseNotifyWatch final : public InboundHandler<ByteBuf> {
 public:
  explicit CloseNotifyWatch(std::shared_ptr<CloseNotifyServerState> state) : state_(std::move(state)) {}
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.fire_read(std::move(buf)); }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<TlsCloseNotifyReceived>(&event) != nullptr) state_->close_notify_seen.set_value();
    ctx.fire_user_event(event);
  }

 private:
  std::shared_ptr<CloseNotifyServerState> state_;
};

// HTTPS on h2 and http/1.1 (ALPN): /plaintext answers at once, /slow when the test says.
ChannelPtr start_close_notify_server(EventLoopGroup& group, const std::shared_ptr<CloseNotifyServerState>& state) {
  auto router = std::make_shared<http::Router>();
  router->get("/plaintext", [](Context& ctx, http::HttpRequest&) {
    ctx.write(http::HttpResponse(200).content_type("text/plain").body_view("Hello, World!"));
  });
  router->get("/slow", [state](Context& ctx, http::HttpRequest& req) {
    {
      std::lock_guard lock(state->mutex);
      state->slow_channel = ctx.channel().shared_from_this();
      state->slow_sequence = req.sequence();
    }
    state->slow_arrived.set_value();
  });
  auto context = test::test_server_context(test::test_pki().localhost, {"h2", "http/1.1"});
  return ServerBootstrap()
      .group(group)
      .child_handler([router, context, state](Channel& ch) {
        ch.pipeline().add_last("tls", std::make_shared<TlsHandler>(context));
        ch.pipeline().add_last("watch", std::make_shared<CloseNotifyWatch>(state));
        ch.pipeline().add_last("alpn", std::make_shared<ApplicationProtocolNegotiationHandler>(
                                            "http/1.1", [](Context& ctx, std::string_view protocol) {
                                              if (protocol == "h2") {
                                                ctx.pipeline().add_after(ctx.name(), "http2",
                                                                         std::make_shared<http2::ServerCodec>());
                                              } else {
                                                ctx.pipeline().add_after(ctx.name(), "http",
                                                                         std::make_shared<http::ServerCodec>());
                                              }
                                            }));
        ch.pipeline().add_last("router", router);
      })
      .bind(SocketAddress::loopback(0))
      .get();
}

// A TLS client on a blocking socket (every call bounded by a 10 s socket timeout).
class HalfClosingTlsClient {
 public:
  enum class End { close_notify, eof_without_close_notify, error };

  HalfClosingTlsClient(std::uint16_t port, const std::string& alpn) {
    context_ = test::test_client_context({alpn});
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ssl_ = SSL_new(context_->native_handle());
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~HalfClosingTlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  HalfClosingTlsClient(const HalfClosingTlsClient&) = delete;
  HalfClosingTlsClient& operator=(const HalfClosingTlsClient&) = delete;

  bool connected() const noexcept { return connected_; }
  bool send(std::string_view data) {
    std::size_t written = 0;
    return data.empty() || SSL_write_ex(ssl_, data.data(), data.size(), &written) == 1;
  }
  // close_notify, and nothing else: the socket stays open both ways.
  bool send_close_notify() { return SSL_shutdown(ssl_) >= 0; }
  // Reads until the server's close_notify, appending what arrives to `data`.
  End read_to_close_notify(std::string& data) {
    char buf[16384];
    ERR_clear_error();
    for (;;) {
      std::size_t n = 0;
      if (SSL_read_ex(ssl_, buf, sizeof buf, &n) == 1) {
        data.append(buf, n);
        continue;
      }
      const int error = SSL_get_error(ssl_, 0);
      if (error == SSL_ERROR_ZERO_RETURN) return End::close_notify;
      if (error == SSL_ERROR_SYSCALL && errno == 0) return End::eof_without_close_notify;
      return End::error;
    }
  }
  // After the server's close_notify: whether its FIN comes next (nothing else, no reset).
  bool tcp_ends() {
    char byte;
    return ::recv(fd_, &byte, 1, 0) == 0;
  }

 private:
  TlsContextPtr context_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool connected_ = false;
};

class TlsCloseNotifyTest : public test::TransportTest {};

TEST_P(TlsCloseNotifyTest, Http11AnswersOwedAtTheClientsCloseNotifyStillGoOutThenTheServersCloseNotify) {
  EventLoopGroup group(transport(), loops(1, 3));
  auto state = std::make_shared<CloseNotifyServerState>();
  ChannelPtr server = start_close_notify_server(group, state);
  HalfClosingTlsClient client(server->local_address().port(), "http/1.1");
  ASSERT_TRUE(client.connected());

  ASSERT_TRUE(client.send("GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n"
                          "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n"
                          "GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(client.send_close_notify());
  ASSERT_TRUE(state->slow_arrived.future().wait_for(10s));
  ASSERT_TRUE(state->close_notify_seen.future().wait_for(10s));
  state->answer_slow();  // owed since before the close_notify

  std::string data;
  EXPECT_EQ(client.read_to_close_notify(data), HalfClosingTlsClient::End::close_notify) << data;
  const std::size_t first = data.find("\r\n\r\nHello, World!");
  const std::size_t slow = data.find("\r\n\r\nslow answer");
  const std::size_t third = data.find("\r\n\r\nHello, World!", first + 1);
  EXPECT_NE(first, std::string::npos) << data;
  EXPECT_NE(slow, std::string::npos) << data;
  EXPECT_NE(third, std::string::npos) << data;
  EXPECT_TRUE(first < slow && slow < third) << "answers out of order: " << data;
  EXPECT_TRUE(client.tcp_ends()) << "the server's FIN follows its close_notify";
  server->close().wait_for(5s);
}

TEST_P(TlsCloseNotifyTest, Http2StreamInFlightAtTheClientsCloseNotifyIsStillAnswered) {
  EventLoopGroup group(transport(), loops(1, 3));
  auto state = std::make_shared<CloseNotifyServerState>();
  ChannelPtr server = start_close_notify_server(group, state);
  HalfClosingTlsClient client(server->local_address().port(), "h2");
  ASSERT_TRUE(client.connected());

  test::H2Client h2;
  const std::int32_t id = h2.request("GET", "/slow");
  ASSERT_TRUE(client.send(h2.take_output()));
  ASSERT_TRUE(state->slow_arrived.future().wait_for(10s));
  ASSERT_TRUE(client.send_close_notify());
  ASSERT_TRUE(state->close_notify_seen.future().wait_for(10s));
  state->answer_slow();

  std::string data;
  EXPECT_EQ(client.read_to_close_notify(data), HalfClosingTlsClient::End::close_notify);
  EXPECT_TRUE(h2.receive(data));
  const test::H2Response& response = h2.response(id);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "slow answer");
  EXPECT_TRUE(response.closed);
  EXPECT_EQ(response.close_error, 0u);
  EXPECT_TRUE(client.tcp_ends()) << "the server's FIN follows its close_notify";
  server->close().wait_for(5s);
}

WEFT_ON_EVERY_TRANSPORT(TlsCloseNotifyTest);

}  // namespace
}  // namespace weft
