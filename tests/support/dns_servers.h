#pragma once
// What the resolver's and the HTTP client's tests run against: a real DNS server (dnsmasq on
// 127.0.0.1 with the test's own records), a server that never answers, one whose answers the test
// scripts (SERVFAIL, malformed); TCP listeners that refuse or drop connections (Happy Eyeballs); and
// helpers to run code on a loop.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/channel/socket_address.h"
#include "weft/core/event_loop.h"
#include "weft/core/future.h"

namespace weft::test {

// Runs `fn` on `loop` and returns what it returns (rethrows what it throws). Not from `loop`.
template <class F>
auto on_loop(EventLoop& loop, F fn) -> decltype(fn()) {
  using R = decltype(fn());
  Promise<R> done;
  loop.execute([&] {
    try {
      if constexpr (std::is_void_v<R>) {
        fn();
        done.set_value();
      } else {
        done.set_value(fn());
      }
    } catch (...) {
      done.set_error(std::current_exception());
    }
  });
  return done.future().get();
}

// A DNS query for `name`, type A, id `id`.
inline std::string dns_query(const std::string& name, std::uint16_t id) {
  std::string q{static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<char>(dot - start));
    q.append(name, start, dot - start);
    start = dot + 1;
  }
  q.append(std::string("\0\0\1\0\1", 5));  // the root label, QTYPE A, QCLASS IN
  return q;
}

// dnsmasq on 127.0.0.1 and a port of its own, answering for the zone weft.test from the records the
// test gives (--host-record=..., --address=/...); every other name of the zone is NXDOMAIN.
class Dnsmasq {
 public:
  // The dnsmasq binary, or empty when it is not installed.
  static std::string binary() {
    for (const char* path : {"/usr/sbin/dnsmasq", "/usr/bin/dnsmasq", "/sbin/dnsmasq"}) {
      if (::access(path, X_OK) == 0) return path;
    }
    return {};
  }

  // Starts it; ADD_FAILURE and returns false when it cannot be started.
  bool start(const std::vector<std::string>& records) {
    std::string exe = binary();
    log_ = "/tmp/weft-dnsmasq-" + std::to_string(::getpid()) + "-" + std::to_string(serial()) + ".log";
    // A port below 32768 (outside Linux's ephemeral range), spread by pid; another process's
    // dnsmasq may hold it: then dnsmasq exits and the next one is tried.
    std::uint16_t base = static_cast<std::uint16_t>(20000 + (::getpid() * 7 + serial() * 131) % 12000);
    for (int attempt = 0; attempt < 50; ++attempt) {
      std::uint16_t port = static_cast<std::uint16_t>(20000 + (base - 20000 + attempt * 97) % 12000);
      std::vector<std::string> args{exe,
                                    "--keep-in-foreground",
                                    "--no-resolv",
                                    "--no-hosts",
                                    "--conf-file=/dev/null",
                                    "--bind-interfaces",
                                    "--listen-address=127.0.0.1",
                                    "--port=" + std::to_string(port),
                                    "--pid-file=",
                                    "--log-facility=" + log_,
                                    "--log-queries",
                                    "--local=/weft.test/"};
      args.insert(args.end(), records.begin(), records.end());
      pid_ = spawn(args);
      if (pid_ <= 0) break;
      if (wait_ready(port)) {
        port_ = port;
        return true;
      }
      stop();
    }
    ADD_FAILURE() << "could not start dnsmasq (log: " << log_ << ")";
    return false;
  }

  // Stops it (the test then shows that an answer came from the cache). Idempotent.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  ~Dnsmasq() {
    stop();
    if (!log_.empty()) std::remove(log_.c_str());
  }

  SocketAddress address() const { return SocketAddress::loopback(port_); }
  // The queries dnsmasq logged for `name` (its log is written as each query arrives).
  int queries_logged(const std::string& name) const {
    std::ifstream in(log_);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      if (line.find("query[") != std::string::npos && line.find(" " + name + " from") != std::string::npos) ++n;
    }
    return n;
  }

 private:
  static int serial() {
    static std::atomic<int> n{0};
    return n++;
  }

  static pid_t spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return pid;
  }

  // Queries until dnsmasq answers (true) or exits, as it does when the port is taken (false).
  bool wait_ready(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    SocketAddress to = SocketAddress::loopback(port);
    std::string query = dns_query("ready.weft.test", 0x5eed);
    bool ready = false;
    // dnsmasq binds within milliseconds; 600 tries of 100 ms is a bound for a very loaded machine.
    for (int i = 0; i < 600 && !ready; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      ::sendto(fd, query.data(), query.size(), 0, to.raw(), to.length());
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) == 1) {
        char answer[512];
        ready = ::recv(fd, answer, sizeof answer, 0) > 0;
      }
    }
    ::close(fd);
    return ready;
  }

  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string log_;
};

// A UDP socket bound to a port of 127.0.0.1 the kernel chose; its address in `address`.
inline int bound_udp_socket(SocketAddress& address) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  SocketAddress any = SocketAddress::loopback(0);
  ::bind(fd, any.raw(), any.length());
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  address = SocketAddress(reinterpret_cast<sockaddr*>(&bound), len);
  return fd;
}

// A UDP socket on 127.0.0.1 that never reads: a DNS server that does not answer.
class SilentServer {
 public:
  SilentServer() { fd_ = bound_udp_socket(address_); }
  ~SilentServer() { ::close(fd_); }
  SocketAddress address() const { return address_; }

 private:
  int fd_;
  SocketAddress address_;
};

// A DNS server on 127.0.0.1 that answers each query with what `respond` makes of it (an empty
// string: no answer), from a thread of its own.
class ScriptedDnsServer {
 public:
  using Respond = std::function<std::string(std::string query)>;
  explicit ScriptedDnsServer(Respond respond) : respond_(std::move(respond)) {
    fd_ = bound_udp_socket(address_);
    if (::pipe2(stop_, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe2 failed";
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedDnsServer() {
    char c = 0;
    (void)!::write(stop_[1], &c, 1);
    thread_.join();
    ::close(fd_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  SocketAddress address() const { return address_; }
  int queries() const { return queries_.load(); }

  // The query, answered SERVFAIL (QR, RA, rcode 2).
  static std::string servfail(std::string query) {
    if (query.size() < 12) return {};
    query[2] = static_cast<char>(query[2] | 0x80);
    query[3] = static_cast<char>((query[3] & 0xf0) | 0x80 | 0x02);
    return query;
  }
  // A response with the query's id that claims an answer and ends inside it.
  static std::string malformed(std::string query) {
    if (query.size() < 12) return {};
    std::string answer = query.substr(0, 12);
    answer[2] = static_cast<char>(answer[2] | 0x80);
    answer[7] = 3;  // ANCOUNT 3, and then nothing
    answer += std::string("\x03", 1) + "abc";
    return answer;
  }

 private:
  void serve() {
    for (;;) {
      pollfd p[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 || p[1].revents != 0) return;
      char buf[512];
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      ssize_t n = ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      ++queries_;
      std::string answer = respond_(std::string(buf, static_cast<std::size_t>(n)));
      if (!answer.empty()) ::sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }

  Respond respond_;
  int fd_;
  int stop_[2] = {-1, -1};
  SocketAddress address_;
  std::atomic<int> queries_{0};
  std::thread thread_;
};

// A TCP socket bound to `host`:`port` (0: the kernel chooses); listening with `backlog` unless `backlog` is negative
// (bound, not listening: a connect to it is refused).
class TestListener {
 public:
  TestListener(const char* host, int backlog, std::uint16_t port = 0) {
    SocketAddress local = SocketAddress::from(host, port);
    fd_ = ::socket(local.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    ok_ = fd_ >= 0 && ::bind(fd_, local.raw(), local.length()) == 0 && (backlog < 0 || ::listen(fd_, backlog) == 0);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (ok_) ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    address_ = SocketAddress(reinterpret_cast<sockaddr*>(&bound), len);
  }
  ~TestListener() {
    for (int fd : fillers_) ::close(fd);
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }
  std::uint16_t port() const { return address_.port(); }
  SocketAddress address() const { return address_; }

  // Fills the accept queue of a listener made with backlog 0: one connection waits in it unaccepted,
  // and the kernel then drops every new SYN. Returns once the queue is seen full (TCP_INFO of a
  // listening socket: tcpi_unacked is the queue's length).
  bool fill_accept_queue() {
    int fd = ::socket(address_.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    fillers_.push_back(fd);
    if (::connect(fd, address_.raw(), address_.length()) != 0) return false;
    for (;;) {
      tcp_info info{};
      socklen_t len = sizeof info;
      if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
      if (info.tcpi_unacked >= 1) return true;
      std::this_thread::yield();
    }
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  SocketAddress address_;
  std::vector<int> fillers_;
};

}  // namespace weft::test

#define WEFT_REQUIRE_DNSMASQ()                                                                    \
  do {                                                                                            \
    if (::weft::test::Dnsmasq::binary().empty()) {                                                \
      GTEST_SKIP() << "dnsmasq is not installed (Debian: dnsmasq-base; scripts/install-deps.sh)"; \
    }                                                                                             \
  } while (0)
