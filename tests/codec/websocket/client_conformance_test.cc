// The conformance cases of autobahn_cases.h, mirrored: a raw server plays them against weft's
// WebSocket client (HttpClient::websocket) on every transport -- its frames unmasked, whole and one
// byte at a time -- and checks the exact frames (masked) and close codes the client sends back. The
// client under test echoes every message: with callbacks ("/echo"), a coroutine ("/co"), or
// callbacks with small limits ("/small"). A case's unmasked client frame becomes a masked server
// frame, which a client must refuse with 1002 just as a server refuses the other.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "autobahn_cases.h"
#include "support/blocking_client.h"
#include "support/transports.h"
#include "weft/client/http_client.h"
#include "weft/codec/websocket/upgrade.h"

using namespace std::chrono_literals;

namespace weft::websocket_client_conformance_test {
namespace {

using namespace websocket_cases;
using test::BlockingClient;

// A listening socket on 127.0.0.1 (a port the kernel picks) that hands over what it accepts.
class RawListener {
 public:
  RawListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "listen: " << errno;
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~RawListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawListener(const RawListener&) = delete;
  RawListener& operator=(const RawListener&) = delete;

  std::uint16_t port() const { return port_; }
  // The next connection, or a closed client after 10 s without one.
  BlockingClient accept() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return {};
    return BlockingClient::adopt(::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC));
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// Reads the client's upgrade request and answers it with a plain 101 (no subprotocol, no
// extension). False if the request did not come, or had no key.
bool answer_upgrade(BlockingClient& c) {
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    auto byte = c.recv_exact(1, 10000ms);
    if (!byte) return false;
    head += *byte;
  }
  constexpr std::string_view kField = "Sec-WebSocket-Key: ";
  const std::size_t at = head.find(kField);
  if (at == std::string::npos) return false;
  const std::size_t end = head.find("\r\n", at);
  const std::string key = head.substr(at + kField.size(), end - at - kField.size());
  return c.send_all(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: " +
      ws::accept_key(key) + "\r\n\r\n");
}

class WebSocketClientConformanceTest : public test::TransportTest {
 protected:
  void SetUp() override {
    group_.emplace(transport(), loops(1, 2));
    client_.emplace(*group_);
  }
  void TearDown() override {
    client_->close().wait();
    client_.reset();
    group_->shutdown_gracefully(0ms, 5s).wait();
  }

  // Opens a WebSocket from the client under test, of the kind `path` names, to `listener`.
  Future<ws::Handshake> open(const RawListener& listener, std::string_view path) {
    client::WebSocketOptions options;
    if (path == "/small") options.connection = small_limits();
    const std::string url = "ws://127.0.0.1:" + std::to_string(listener.port()) + std::string(path);
    if (path == "/co") {
      return client_->websocket(url, ws::CoroutineFn(echo_coroutine), options);
    }
    return client_->websocket(
        url, ws::Callbacks{.on_message = [](Context& ctx, ws::Message& m) { ctx.write_and_flush(std::move(m)); }},
        options);
  }

  std::optional<EventLoopGroup> group_;
  std::optional<client::HttpClient> client_;
};

bool send(BlockingClient& c, const std::string& data, bool bytewise) {
  if (!bytewise) return c.send_all(data);
  for (char ch : data) {
    if (!c.send_all(std::string_view(&ch, 1))) return false;
  }
  return true;
}

TEST_P(WebSocketClientConformanceTest, AutobahnGroupsMirroredFrameByFrame) {
  RawListener listener;
  for (const Case& c : cases()) {
    for (const bool bytewise : {false, true}) {
      if (bytewise && !c.bytewise) continue;
      SCOPED_TRACE(std::string(c.name) + (bytewise ? " (one byte at a time)" : " (whole)"));
      Future<ws::Handshake> opened = open(listener, c.path);
      BlockingClient server = listener.accept();
      ASSERT_TRUE(server.is_open());
      ASSERT_TRUE(answer_upgrade(server));
      ASSERT_NO_THROW(opened.get());
      std::string out;
      for (Frame f : c.send) {
        f.masked = !f.masked;  // a server's frames are unmasked; the case's violation is the other way
        out += bytes(f);
      }
      ASSERT_TRUE(send(server, out, bytewise));
      for (const Reply& want : c.expect) {
        auto got = read_reply(server, true);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, want);
      }
      const bool closing_sent = !c.expect.empty() && c.expect.back().opcode == 8;
      if (c.close != 0) {
        // The client failed the connection with its close: the server answers it.
        auto got = read_reply(server, true);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, close_reply(c.close));
        ASSERT_TRUE(server.send_all(bytes(Frame{8, code_bytes(c.close), true, 0, false})));
      } else if (!closing_sent) {
        // Still open: the server closes (1000), and the client answers in kind.
        ASSERT_TRUE(server.send_all(bytes(Frame{8, code_bytes(1000), true, 0, false})));
        auto got = read_reply(server, true);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, close_reply(1000));
      }
      // The server closes TCP first (RFC 6455 7.1.1); the client follows, with nothing after its close.
      server.shutdown_write();
      std::string rest;
      EXPECT_EQ(server.recv_until_end(&rest, 10000ms), test::StreamEnd::eof);
      EXPECT_EQ(rest, "") << "nothing after the close";
    }
  }
}

WEFT_ON_EVERY_TRANSPORT(WebSocketClientConformanceTest);

}  // namespace
}  // namespace weft::websocket_client_conformance_test
