// A real Prometheus (Debian's 2.42) scraping weft-hello's admin listener, as operators run it: the
// target is up, and a query of the request counter equals the requests sent. Prometheus asks for
// OpenMetrics first, so this reads weft's OpenMetrics text through Prometheus's own parser.
//
// Release builds only: it is about the two processes together; the exposition itself is tested
// byte for byte by tests/metrics and under the sanitizers by hello_metrics_test.cc.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "support/admin_scrape.h"
#include "support/blocking_client.h"
#include "support/hello_process.h"
#include "support/random_port.h"
#include "support/sanitizers.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif

namespace weft::test {
namespace {

using namespace std::chrono_literals;

// Prometheus in the foreground on 127.0.0.1:`port`, scraping `target` every second, its storage in
// a directory of its own; SIGTERM stops it.
class Prometheus {
 public:
  Prometheus(std::uint16_t port, std::uint16_t target) : port_(port) {
    char dir[] = "/tmp/weft-prometheus-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    const std::string config = dir_ + "/prometheus.yml";
    std::ofstream(config) << "global:\n"
                             "  scrape_interval: 1s\n"
                             "scrape_configs:\n"
                             "  - job_name: weft\n"
                             "    static_configs:\n"
                             "      - targets: ['127.0.0.1:"
                          << target << "']\n";
    const std::string log = dir_ + "/log";
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
    const std::string storage = "--storage.tsdb.path=" + dir_ + "/data";
    const std::string config_flag = "--config.file=" + config;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
      ::execlp("prometheus", "prometheus", config_flag.c_str(), storage.c_str(), listen.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  // Its log so far.
  std::string log() const {
    std::ifstream in(dir_ + "/log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // True once it exited (it could not listen, or failed).
  bool exited() {
    if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
    return pid_ <= 0;
  }
  // The value of an instant query's first sample ("" while there is none, or no answer).
  std::string query(const std::string& expression) const {
    std::string encoded;  // the expression percent-encoded, as a query string wants it
    for (const unsigned char ch : expression) {
      if (std::isalnum(ch) || ch == '_') {
        encoded += static_cast<char>(ch);
      } else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", ch);
        encoded += hex;
      }
    }
    const AdminReply reply = admin_get(port_, "/api/v1/query?query=" + encoded);
    std::smatch m;
    if (reply.status != 200 || !std::regex_search(reply.body, m, std::regex(R"re("value":\[[0-9.]+,"([^"]*)"\])re"))) {
      return "";
    }
    return m[1];
  }

 private:
  std::uint16_t port_;
  std::string dir_;
  pid_t pid_ = -1;
};

TEST(PrometheusScrapeTest, TheTargetIsUpAndTheRequestCounterEqualsTheRequestsSent) {
#if defined(WEFT_TEST_SANITIZED)
  GTEST_SKIP() << "release builds only (the processes together; the exposition is tested under sanitizers elsewhere)";
#endif
  if (std::string(WEFT_HELLO_BIN).empty()) GTEST_SKIP() << "weft-hello is not built (WEFT_BUILD_EXAMPLES=OFF)";
  if (std::system("command -v prometheus >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "prometheus is not installed (Debian: prometheus; scripts/install-deps.sh installs it)";
  }
  HelloProcess server(WEFT_HELLO_BIN, "epoll", "loop", {"--admin-port", "0"});
  ASSERT_TRUE(server.is_running()) << server.error();
  const std::uint16_t admin = admin_port(server);
  ASSERT_NE(admin, 0) << server.output();

  // HEAD requests: the scrapes (GETs) are counted too, in series of their own.
  constexpr int kRequests = 23;
  {
    BlockingClient c(server.port());
    std::string burst;
    for (int i = 0; i < kRequests; ++i) burst += "HEAD /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_TRUE(c.send_all(burst));
    ASSERT_TRUE(c.recv_until_count("HTTP/1.1 200", kRequests)) << "the answers stopped";
  }

  // Prometheus on a port of its own (another one if that one was taken).
  std::unique_ptr<Prometheus> prometheus;
  for (int attempt = 0; attempt < 5 && !prometheus; ++attempt) {
    const std::uint16_t port = random_port();
    prometheus = std::make_unique<Prometheus>(port, admin);
    bool listening = false;
    for (int i = 0; i < 3000 && !listening && !prometheus->exited(); ++i) {  // a bound, not a pace
      listening = admin_get(port, "/-/ready").status == 200;
      if (!listening) std::this_thread::sleep_for(10ms);
    }
    if (!listening) {
      const std::string log = prometheus->log();
      prometheus.reset();
      ASSERT_NE(log.find("address already in use"), std::string::npos) << "prometheus did not start:\n" << log;
    }
  }
  ASSERT_TRUE(prometheus) << "no free port for prometheus";

  // Polled until the first scrape is in (a bound, not a pace: the interval is one second).
  const std::string counter = R"(weft_http_server_requests_total{method="HEAD",status="2xx"})";
  std::string up, requests;
  for (int i = 0; i < 600 && (up != "1" || requests.empty()); ++i) {
    up = prometheus->query(R"(up{job="weft"})");
    requests = prometheus->query(counter);
    if (up != "1" || requests.empty()) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(up, "1") << prometheus->log();
  EXPECT_EQ(requests, std::to_string(kRequests)) << prometheus->log();
  EXPECT_EQ(server.stop(), 0) << server.output();
}

}  // namespace
}  // namespace weft::test
