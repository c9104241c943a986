// A rolling restart behind HAProxy (Debian's haproxy 2.6), as operators run one: two weft-hello
// instances on loopback behind one HAProxy frontend, weft-load sending through HAProxy the whole
// time, and each instance in turn sent SIGTERM -- it drains (weft::drain_server: the listener closes,
// HAProxy's keep-alive connections end after their answers) -- and started again on its port. Not
// one request may fail. HAProxy is configured as such a deployment would be: health checks, and a
// request that met a connection the instance had just closed retried (`retry-on`, GET is
// idempotent) or sent to the other instance (`option redispatch`).
//
// Release builds only: it is about the processes together, and the drain itself is tested under the
// sanitizers by drain_test.cc and HelloDrainTest.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "support/blocking_client.h"
#include "support/hello_process.h"
#include "support/random_port.h"
#include "support/sanitizers.h"
#include "support/shell.h"

#ifndef WEFT_HELLO_BIN
#define WEFT_HELLO_BIN ""  // examples not built: the suite is skipped
#endif
#ifndef WEFT_LOAD_BIN
#define WEFT_LOAD_BIN ""  // tools not built: the suite is skipped
#endif

using ::testing::HasSubstr;

namespace weft::test {
namespace {

// HAProxy in the foreground (-db) on `port`, balancing over `a` and `b`; SIGTERM stops it.
class Haproxy {
 public:
  Haproxy(std::uint16_t port, std::uint16_t a, std::uint16_t b) : port_(port) {
    char path[] = "/tmp/weft-haproxy-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return;
    ::close(fd);
    config_ = path;
    stats_ = config_ + ".sock";
    std::ofstream(config_) << "global\n"
                              "  nbthread 1\n"
                              "  stats socket "
                           << stats_
                           << " mode 600 level user\n"
                              "defaults\n"
                              "  mode http\n"
                              "  timeout connect 2s\n"
                              "  timeout client 30s\n"
                              "  timeout server 30s\n"
                              "  option http-keep-alive\n"
                              "  retries 3\n"
                              "  option redispatch 1\n"
                              "  retry-on all-retryable-errors\n"
                              "frontend front\n"
                              "  bind 127.0.0.1:"
                           << port << "\n"
                           << "  default_backend back\n"
                              "backend back\n"
                              "  balance roundrobin\n"
                              "  server a 127.0.0.1:"
                           << a << " check inter 100ms fall 1 rise 1\n"
                           << "  server b 127.0.0.1:" << b << " check inter 100ms fall 1 rise 1\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execlp("haproxy", "haproxy", "-db", "-f", config_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Haproxy() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!config_.empty()) ::unlink(config_.c_str());
    if (!stats_.empty()) ::unlink(stats_.c_str());
  }
  // True once HAProxy itself counts server `name` of the backend UP (its stats socket's `show stat`),
  // within a bound: a restarted instance takes requests again only then.
  bool wait_until_up(const std::string& name) {
    for (int i = 0; i < 3000; ++i) {
      std::istringstream csv(stats());
      std::string line;
      while (std::getline(csv, line)) {
        if (!line.starts_with("back," + name + ",")) continue;
        std::istringstream fields(line);
        std::string field;
        for (int column = 0; column <= 17 && std::getline(fields, field, ','); ++column) {
        }
        if (field == "UP") return true;  // column 17: status
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // True once it accepts connections (a bound on the wait, not a pace); false if it exited.
  bool wait_until_listening() {
    for (int i = 0; i < 2000; ++i) {
      if (BlockingClient(port_).is_open()) return true;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  // `show stat` on the stats socket: CSV, a line per frontend, server and backend ("" on failure).
  std::string stats() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return "";
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", stats_.c_str());
    std::string out;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
        ::send(fd, "show stat\n", 10, MSG_NOSIGNAL) == 10) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
  }

  std::uint16_t port_;
  std::string config_;
  std::string stats_;
  pid_t pid_ = -1;
};

// True once some connection to 127.0.0.1:`port` is established (/proc/net/tcp), within a bound.
bool wait_for_connection_to(std::uint16_t port) {
  char local[16];
  std::snprintf(local, sizeof local, "0100007F:%04X", port);
  for (int i = 0; i < 3000; ++i) {
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the header
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string slot, local_address, remote_address, state;
      fields >> slot >> local_address >> remote_address >> state;
      if (local_address == local && state == "01") return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The number after `"key": ` in weft-load's JSON (flat enough for this).
long json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::atol(json.c_str() + at + key.size() + 3);
}

TEST(RollingRestartTest, BehindHaproxyEveryRequestSucceedsWhileEachInstanceDrainsAndRestarts) {
#if defined(WEFT_TEST_SANITIZED)
  GTEST_SKIP() << "release builds only (see the file's comment)";
#endif
  if (std::string(WEFT_HELLO_BIN).empty() || std::string(WEFT_LOAD_BIN).empty()) {
    GTEST_SKIP() << "weft-hello or weft-load is not built";
  }
  int found = -1;
  run_shell("command -v haproxy >/dev/null 2>&1", found);
  if (found != 0) GTEST_SKIP() << "haproxy is not installed (scripts/install-deps.sh installs it)";

  const std::vector<std::string> args{"--loops", "1", "--drain-timeout", "20"};
  std::unique_ptr<HelloProcess> a = std::make_unique<HelloProcess>(WEFT_HELLO_BIN, args);
  std::unique_ptr<HelloProcess> b = std::make_unique<HelloProcess>(WEFT_HELLO_BIN, args);
  ASSERT_TRUE(a->is_running()) << a->error();
  ASSERT_TRUE(b->is_running()) << b->error();
  const std::uint16_t port_a = a->port();
  const std::uint16_t port_b = b->port();
  std::unique_ptr<Haproxy> haproxy;
  std::uint16_t front = 0;
  for (int attempt = 0; attempt < 10 && haproxy == nullptr; ++attempt) {
    front = random_port();
    haproxy = std::make_unique<Haproxy>(front, port_a, port_b);
    if (!haproxy->wait_until_listening()) haproxy.reset();  // the port was taken: another
  }
  ASSERT_NE(haproxy, nullptr) << "haproxy did not start";

  // The load: a constant rate through HAProxy, longer than the restarts take; its result as JSON.
  char json_path[] = "/tmp/weft-rolling-load-XXXXXX";
  ::close(::mkstemp(json_path));
  std::string load_output;
  int load_status = -1;
  std::atomic<bool> load_done{false};
  std::thread load([&] {
    load_output = run_shell(std::string(WEFT_LOAD_BIN) + " http -c 8 --rate 400 -d 15 --timeout 10 --json " +
                                json_path + " http://127.0.0.1:" + std::to_string(front) + "/plaintext 2>&1",
                            load_status);
    load_done = true;
  });

  // Each instance in turn: SIGTERM (it drains and exits 0), then started again on its port.
  std::string drained;
  for (std::unique_ptr<HelloProcess>* instance : {&a, &b}) {
    const std::uint16_t port = (*instance)->port();
    // HAProxy is sending it requests (the restarted one too: it is up again before the next goes).
    ASSERT_TRUE(wait_for_connection_to(port)) << "HAProxy never connected to port " << port;
    const int status = (*instance)->stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << (*instance)->output();
    drained += (*instance)->output();
    *instance = std::make_unique<HelloProcess>(WEFT_HELLO_BIN, port, args);
    ASSERT_TRUE((*instance)->is_running()) << (*instance)->error();
    // Until HAProxy's health check has seen it, it takes no request: the next may not go before.
    ASSERT_TRUE(haproxy->wait_until_up(instance == &a ? "a" : "b")) << "HAProxy never took it back";
  }
  EXPECT_FALSE(load_done.load()) << "the load ended before the restarts did: they were not tested under load";
  load.join();

  std::ifstream in(json_path);
  std::stringstream json;
  json << in.rdbuf();
  ::unlink(json_path);
  const std::string result = json.str();
  EXPECT_EQ(load_status, 0) << load_output;
  ASSERT_GT(json_number(result, "responses"), 0) << load_output << result;
  for (const char* error : {"connect", "read", "write", "timeout", "status", "parse"}) {
    EXPECT_EQ(json_number(result, error), 0) << error << " errors\n" << load_output << result;
  }
  EXPECT_GE(json_number(result, "responses"), json_number(result, "requests") - 8) << result;
  // Both drained every connection HAProxy had open to them gracefully, none at the deadline.
  std::size_t graceful = 0;
  for (auto at = drained.find(" 0 closed at the 20 s deadline"); at != std::string::npos;
       at = drained.find(" 0 closed at the 20 s deadline", at + 1)) {
    ++graceful;
  }
  EXPECT_EQ(graceful, 2u) << drained;
}

}  // namespace
}  // namespace weft::test
