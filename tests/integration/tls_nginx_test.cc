// weft's TLS client against a server weft did not write: nginx (Debian nginx-light) serving HTTPS
// with the test PKI's certificate, on every transport. HTTP/1.1 requests pipelined over TLS with
// every answer checked, ALPN chosen by nginx, the session resumed on the next connection, and
// nginx's close_notify after a "Connection: close" answer.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/listens.h"
#include "support/tls_certs.h"
#include "support/transports.h"
#include "weft/client/http2_connection.h"
#include "weft/codec/http1/client_codec.h"
#include "weft/codec/tls/tls_events.h"
#include "weft/codec/tls/tls_handler.h"
#include "weft/weft.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

using test::listens_on;
using test::test_client_context;
using test::test_pki;
using test::write_temp_file;

// nginx in the foreground (no daemon, no worker processes) with HTTPS on a port below the
// ephemeral range; stopped by the destructor.
class NginxTls {
 public:
  NginxTls() {
    const std::string cert = write_temp_file(test_pki().localhost.cert_pem, ".pem");
    const std::string key = write_temp_file(test_pki().localhost.key_pem, ".pem");
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> ports(20000, 32000);
    for (int attempt = 0; attempt < 10 && pid_ < 0; ++attempt) start(static_cast<std::uint16_t>(ports(random)), cert, key);
  }
  ~NginxTls() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0; }
  std::uint16_t port() const { return port_; }
  const std::string& error() const { return error_; }

 private:
  void start(std::uint16_t port, const std::string& cert, const std::string& key) {
    const std::string dir = write_temp_file("", ".d");
    ::unlink(dir.c_str());
    ::mkdir(dir.c_str(), 0700);
    const std::string conf =
        "daemon off; master_process off; worker_processes 1; pid " + dir + "/nginx.pid;\n"
        "error_log " + dir + "/error.log warn;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        "  access_log off;\n"
        "  client_body_temp_path " + dir + "; proxy_temp_path " + dir + "; fastcgi_temp_path " + dir + ";\n"
        "  uwsgi_temp_path " + dir + "; scgi_temp_path " + dir + ";\n"
        "  ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:weft_test:1m; ssl_session_tickets on;\n"
        "  server {\n"
        "    listen 127.0.0.1:" + std::to_string(port) + " ssl http2;\n"
        "    ssl_certificate " + cert + "; ssl_certificate_key " + key + ";\n"
        "    location /plaintext { default_type text/plain; return 200 \"Hello, World!\"; }\n"
        "    location /json { default_type application/json; return 200 '{\"message\":\"Hello, World!\"}'; }\n"
        "  }\n"
        "}\n";
    const std::string conf_path = dir + "/nginx.conf";
    std::ofstream(conf_path) << conf;
    const std::string error_log = dir + "/error.log";  // before fork(): the child may not allocate
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execlp("nginx", "nginx", "-e", error_log.c_str(), "-p", dir.c_str(), "-c", conf_path.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid < 0) {
      error_ = "fork failed";
      return;
    }
    // It listens once it has read its configuration, or exits (port taken, nginx missing).
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        std::ifstream log(dir + "/error.log");
        error_ = "nginx exited (status " + std::to_string(status) + "): " +
                 std::string(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
        return;
      }
      if (listens_on(pid, port)) {  // nginx itself (a connect could reach another test's server)
        pid_ = pid;
        port_ = port;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    error_ = "nginx did not listen within a minute";
  }
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string error_;
};

// Keeps each answer's status and body; `done` completes at the expected count.
class Answers final : public InboundHandler<http::HttpClientResponse, http::HttpClientResponse> {
 public:
  explicit Answers(std::size_t expected) : expected_(expected) {}
  void channel_read(Context&, http::HttpClientResponse&& r) override {
    std::lock_guard lock(mutex);
    got.push_back(std::to_string(r.status()) + " " + std::string(r.body_view()));
    if (got.size() == expected_) done.set_value();
  }
  void user_event(Context& ctx, const std::any& event) override {
    if (std::any_cast<TlsCloseNotifyReceived>(&event) != nullptr) close_notify.set_value();
    ctx.fire_user_event(event);
  }
  std::mutex mutex;
  std::vector<std::string> got;
  Promise<void> done;
  Promise<void> close_notify;

 private:
  std::size_t expected_;
};

class TlsNginxTest : public test::TransportTest {};

TEST_P(TlsNginxTest, WeftsClientTalksHttpsToNginxResumesAndClosesCleanly) {
  NginxTls nginx;
  ASSERT_TRUE(nginx.running()) << nginx.error();
  EventLoopGroup group(transport(), 1);
  auto context = test_client_context({"h2", "http/1.1"});
  const SocketAddress address = SocketAddress::loopback(nginx.port());
  auto connect = [&](std::shared_ptr<TlsHandler> tls, std::shared_ptr<Answers> answers) {
    return Bootstrap()
        .group(group)
        .handler([tls, answers](Channel& ch) {
          ch.pipeline().add_last("tls", tls);
          ch.pipeline().add_last("http", std::make_shared<http::ClientCodec>());
          ch.pipeline().add_last("answers", answers);
        })
        .connect(address)
        .get();
  };

  // ALPN: nginx picks from what the client offers; with h2 offered it speaks h2, so the HTTP/1.1
  // connections below offer http/1.1 alone.
  {
    auto tls = std::make_shared<TlsHandler>(context, "localhost");
    auto answers = std::make_shared<Answers>(0);
    ChannelPtr probe = connect(tls, answers);
    ASSERT_TRUE(tls->handshake_future().wait_for(20s));
    EXPECT_EQ(tls->application_protocol(), "h2");
    probe->close().wait_for(5s);
  }

  auto http1 = test_client_context({"http/1.1"});
  constexpr std::size_t kRequests = 40;
  for (int connection = 0; connection < 2; ++connection) {
    SCOPED_TRACE(connection == 0 ? "first connection" : "second connection (resumed)");
    auto tls = std::make_shared<TlsHandler>(http1, "localhost");
    auto answers = std::make_shared<Answers>(kRequests);
    ChannelPtr client = connect(tls, answers);
    for (std::size_t i = 0; i < kRequests; ++i) {  // pipelined, written before the handshake is done
      http::HttpClientRequest request("GET", i % 2 == 0 ? "/json" : "/plaintext");
      request.header("Host", "localhost");
      if (i + 1 == kRequests) request.header("Connection", "close");
      client->write(std::move(request));
    }
    client->flush();
    ASSERT_TRUE(answers->done.future().wait_for(20s)) << answers->got.size() << " answers";
    EXPECT_EQ(tls->application_protocol(), "http/1.1");
    EXPECT_EQ(tls->session_resumed(), connection == 1);
    {
      std::lock_guard lock(answers->mutex);
      for (std::size_t i = 0; i < kRequests; ++i) {
        EXPECT_EQ(answers->got[i], i % 2 == 0 ? "200 {\"message\":\"Hello, World!\"}" : "200 Hello, World!")
            << "answer " << i;
      }
    }
    // After the "Connection: close" answer nginx ends with close_notify; weft answers it and closes.
    ASSERT_TRUE(answers->close_notify.future().wait_for(20s));
    ASSERT_TRUE(client->close_future().wait_for(20s));
  }
}

// weft's HTTP/2 client over TLS (ALPN h2) against nginx: 50 requests multiplexed on one connection.
TEST_P(TlsNginxTest, WeftsHttp2ClientTalksH2ToNginx) {
  NginxTls nginx;
  ASSERT_TRUE(nginx.running()) << nginx.error();
  EventLoopGroup group(transport(), 1);
  client::Http2Connection::Options options;
  options.tls = test_client_context({"h2"});
  options.server_name = "localhost";
  auto client = client::Http2Connection::connect(group, SocketAddress::loopback(nginx.port()), options).get();
  std::vector<Future<http::HttpClientResponse>> answers;
  for (int i = 0; i < 50; ++i) {
    answers.push_back(client->request(http::HttpClientRequest("GET", i % 2 == 0 ? "/json" : "/plaintext")));
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(answers[static_cast<std::size_t>(i)].wait_for(20s)) << i;
    const http::HttpClientResponse& r = answers[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body_view(), i % 2 == 0 ? "{\"message\":\"Hello, World!\"}" : "Hello, World!") << i;
    EXPECT_EQ(r.header("content-type"), i % 2 == 0 ? "application/json" : "text/plain");
  }
  client->close().wait_for(5s);
}

WEFT_ON_EVERY_TRANSPORT(TlsNginxTest);

}  // namespace
}  // namespace weft
