// weft-echo-client: drives an echo server with plain blocking POSIX sockets, one thread per
// connection (the "hadoop client" of the netty echo test in HADOOP-17749).
//
//   weft-echo-client --port 9400 [--ports 4] [--host 127.0.0.1] --threads 16 --rounds 1024 --size 256
//
// Thread i connects to port P + (i % N) with TCP_NODELAY, then K times writes S bytes (a pattern
// that depends on the thread and the round), reads exactly S bytes back and checks every byte.
// (Writing and reading overlap, so an S larger than the socket buffers cannot deadlock against a
// server that stops reading while its echo cannot leave.)
// It prints a summary, p50/p99 round-trip latency, and on its last line `total_ms=<n>`: the
// wall time from the first connect to the last verified byte. Exits 1 with a one-line reason if a
// connection fails or a byte differs.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "flags.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = -1;
  int ports = 1;
  int threads = -1;
  int rounds = -1;
  int size = -1;
  int timeout_ms = 10'000;
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: weft-echo-client --port P [--ports N] [--host H] --threads T --rounds K --size S\n"
               "                        [--timeout-ms MS]\n"
               "\n"
               "T blocking threads; thread i connects to port P + (i %% N), then K times writes S bytes,\n"
               "reads them back and verifies every byte. The last line printed is total_ms=<n>.\n"
               "\n"
               "  --port P          first server port (required)\n"
               "  --ports N         number of consecutive server ports (default 1)\n"
               "  --host H          numeric server address (default 127.0.0.1)\n"
               "  --threads T       connections, one thread each (required)\n"
               "  --rounds K        round trips per connection (required)\n"
               "  --size S          bytes per round trip (required)\n"
               "  --timeout-ms MS   give up when a round trip makes no progress this long (default 10000)\n"
               "  --help            show this text\n");
}

// Returns 0 to go on, 1 on bad flags, -1 after --help.
int parse_flags(int argc, char** argv, Options& o) {
  int rc = echo_flags::for_each_flag(argc, argv, "weft-echo-client", print_usage, [&](std::string_view flag, std::string_view value) {
    using echo_flags::parse_int;
    using echo_flags::valid;
    if (flag == "--port") return valid(parse_int(value, 1, 65535, o.port));
    if (flag == "--ports") return valid(parse_int(value, 1, 65535, o.ports));
    if (flag == "--host") {
      o.host = std::string(value);
      return echo_flags::Verdict::ok;
    }
    if (flag == "--threads") return valid(parse_int(value, 1, 100'000, o.threads));
    if (flag == "--rounds") return valid(parse_int(value, 1, 1'000'000'000, o.rounds));
    if (flag == "--size") return valid(parse_int(value, 1, 64 << 20, o.size));
    if (flag == "--timeout-ms") return valid(parse_int(value, 1, 3'600'000, o.timeout_ms));
    return echo_flags::Verdict::unknown;
  });
  if (rc != 0) return rc;
  const char* missing = o.port < 0 ? "--port" : o.threads < 0 ? "--threads" : o.rounds < 0 ? "--rounds"
                                                                                          : o.size < 0 ? "--size"
                                                                                                       : nullptr;
  if (missing != nullptr) {
    std::fprintf(stderr, "weft-echo-client: %s is required (see --help)\n", missing);
    return 1;
  }
  if (o.port + o.ports - 1 > 65535) {
    std::fprintf(stderr, "weft-echo-client: ports %d..%d go past 65535\n", o.port, o.port + o.ports - 1);
    return 1;
  }
  return 0;
}

// A resolved numeric address (IPv4 or IPv6).
struct Target {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

bool make_target(const std::string& host, int port, Target& t) {
  t = Target{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&t.storage);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    t.length = sizeof(sockaddr_in);
    return true;
  }
  t = Target{};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&t.storage);
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (::inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    t.length = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

// The first failure wins; later ones are dropped. Failing also stops the other threads.
class Failure {
 public:
  void set(std::string reason) {
    std::lock_guard lock(mutex_);
    if (!failed_.load(std::memory_order_relaxed)) reason_ = std::move(reason);
    failed_.store(true, std::memory_order_release);
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::string reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
  }

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::string reason_;
};

std::string errno_text(int err) { return std::system_category().message(err); }

std::uint8_t pattern_byte(int thread, int round, std::size_t j) {
  return static_cast<std::uint8_t>(static_cast<std::size_t>(thread) * 131u + static_cast<std::size_t>(round) * 7u +
                                   j * 13u + (j >> 8));
}

struct ThreadResult {
  std::vector<std::uint32_t> latencies_us;  // one per round trip
  std::uint64_t bytes = 0;
};

void run_connection(int index, const Options& o, const Target& target, Failure& failure, ThreadResult& result) {
  const int port = o.port + (index % o.ports);
  auto fail = [&](const std::string& what) {
    failure.set("thread " + std::to_string(index) + " (port " + std::to_string(port) + "): " + what);
  };

  int fd = ::socket(target.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket: " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&target.storage), target.length) != 0) {
    return fail("connect to " + o.host + ":" + std::to_string(port) + ": " + errno_text(errno));
  }

  const auto size = static_cast<std::size_t>(o.size);
  std::vector<std::uint8_t> out(size);
  std::vector<std::uint8_t> in(size);
  result.latencies_us.reserve(static_cast<std::size_t>(o.rounds));

  for (int round = 0; round < o.rounds; ++round) {
    if (failure.failed()) return;
    for (std::size_t j = 0; j < size; ++j) out[j] = pattern_byte(index, round, j);
    auto start = Clock::now();
    // Send and receive together: with S larger than the socket buffers, writing everything before
    // reading would deadlock against a server that stops reading while its echo cannot leave.
    std::size_t sent = 0, got = 0;
    while (got < size) {
      pollfd pfd{fd, static_cast<short>(POLLIN | (sent < size ? POLLOUT : 0)), 0};
      int ready = ::poll(&pfd, 1, o.timeout_ms);
      if (ready < 0) {
        if (errno == EINTR) continue;
        return fail("poll: " + errno_text(errno));
      }
      if (ready == 0) {
        return fail("timed out in round " + std::to_string(round) + " after sending " + std::to_string(sent) +
                    " and receiving " + std::to_string(got) + " of " + std::to_string(size) + " bytes");
      }
      if (sent < size && (pfd.revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t n = ::send(fd, out.data() + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          sent += static_cast<std::size_t>(n);
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return fail("send in round " + std::to_string(round) + ": " + errno_text(errno));
        }
      }
      if (pfd.revents & (POLLIN | POLLERR | POLLHUP)) {
        ssize_t n = ::recv(fd, in.data() + got, size - got, MSG_DONTWAIT);
        if (n > 0) {
          got += static_cast<std::size_t>(n);
          if (got > sent) return fail("received more bytes than were sent in round " + std::to_string(round));
        } else if (n == 0) {
          return fail("the server closed the connection in round " + std::to_string(round) + " after " +
                      std::to_string(got) + " of " + std::to_string(size) + " bytes");
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return fail("receive in round " + std::to_string(round) + ": " + errno_text(errno));
        }
      }
    }
    auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    result.latencies_us.push_back(static_cast<std::uint32_t>(std::min<long long>(elapsed, UINT32_MAX)));
    if (std::memcmp(in.data(), out.data(), size) != 0) {
      std::size_t j = 0;
      while (in[j] == out[j]) ++j;
      return fail("byte mismatch in round " + std::to_string(round) + " at offset " + std::to_string(j) +
                  ": expected " + std::to_string(out[j]) + ", got " + std::to_string(in[j]));
    }
    result.bytes += size;
  }
}

double percentile(const std::vector<std::uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(rank, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_flags(argc, argv, o); rc != 0) return rc < 0 ? 0 : rc;

  std::vector<Target> targets(static_cast<std::size_t>(o.ports));
  for (int p = 0; p < o.ports; ++p) {
    if (!make_target(o.host, o.port + p, targets[static_cast<std::size_t>(p)])) {
      std::fprintf(stderr, "weft-echo-client: --host '%s' is not a numeric IPv4 or IPv6 address\n", o.host.c_str());
      return 1;
    }
  }

  Failure failure;
  std::vector<ThreadResult> results(static_cast<std::size_t>(o.threads));
  std::vector<std::thread> threads;
  threads.reserve(results.size());

  const auto start = Clock::now();
  for (int i = 0; i < o.threads; ++i) {
    try {
      threads.emplace_back([&, i] {
        run_connection(i, o, targets[static_cast<std::size_t>(i % o.ports)], failure,
                       results[static_cast<std::size_t>(i)]);
      });
    } catch (const std::system_error& e) {
      failure.set("cannot start thread " + std::to_string(i) + ": " + e.what());
      break;
    }
  }
  for (auto& t : threads) t.join();
  const auto total = Clock::now() - start;

  if (failure.failed()) {
    std::fprintf(stderr, "weft-echo-client: FAILED: %s\n", failure.reason().c_str());
    return 1;
  }

  std::vector<std::uint32_t> all;
  std::uint64_t bytes = 0;
  for (auto& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    bytes += r.bytes;
  }
  std::sort(all.begin(), all.end());
  const double seconds = std::chrono::duration<double>(total).count();
  const auto total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(total).count();

  std::printf("weft-echo-client: %d threads over %d port(s) from %s:%d, %d rounds of %d bytes: %zu round trips, "
              "%llu bytes verified\n",
              o.threads, o.ports, o.host.c_str(), o.port, o.rounds, o.size, all.size(),
              static_cast<unsigned long long>(bytes));
  std::printf("throughput: %.0f round trips/s, %.2f MiB/s each way\n", static_cast<double>(all.size()) / seconds,
              static_cast<double>(bytes) / seconds / (1024.0 * 1024.0));
  std::printf("latency_us: p50=%.0f p99=%.0f max=%.0f\n", percentile(all, 50), percentile(all, 99),
              all.empty() ? 0.0 : static_cast<double>(all.back()));
  std::printf("total_ms=%lld\n", static_cast<long long>(total_ms));
  return 0;
}
