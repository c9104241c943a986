#include "echo_load.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/channel/socket_address.h"
#include "weft/core/clock.h"

namespace weft::load {

namespace {

constexpr std::size_t kLocalSamples = 256;  // per-thread samples kept before adding them under the lock

// What the client threads count: one Tally for them all (a histogram per thread would cost about
// 280 KiB each, and a run has thousands of threads), filled in batches under a mutex; the last
// thread to end finishes it.
class Shared {
 public:
  Shared(Tally& tally, std::size_t threads) : tally_(tally), running_(threads) {}

  // Adds n round trips of a thread, with their latencies.
  void add(const std::uint64_t* latencies, std::size_t n) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < n; ++i) tally_.stats.latency.record(latencies[i]);
    tally_.stats.responses += n;
    tally_.publish();
  }
  // A thread ends, with its errors; the last one to end takes the end time and finishes the tally.
  void end(const Errors& errors) {
    std::lock_guard lock(mutex_);
    tally_.stats.errors.add(errors);
    if (--running_ == 0) {
      end_ = Clock::now();
      tally_.finish();
    }
  }
  // When the last thread ended (once every thread has).
  TimePoint end_time() {
    std::lock_guard lock(mutex_);
    return end_;
  }

  // A thread stopped at the --max-seconds deadline. Thread-safe.
  void hit_guard() noexcept { guard_hit_.store(true, std::memory_order_relaxed); }
  bool guard_hit() const noexcept { return guard_hit_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> guard_hit_{false};
  std::mutex mutex_;
  Tally& tally_;
  std::size_t running_;
  TimePoint end_{};
};

// A blocking socket with a 200 ms receive/send timeout, so that threads can watch the deadline.
class Socket {
 public:
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Returns 0 or the errno of the failure.
  int connect(const SocketAddress& address) {
    fd_ = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return errno;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{0, 200'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return ::connect(fd_, address.raw(), address.length()) == 0 ? 0 : errno;
  }
  // Sends or receives all n bytes; 0, or the errno (ETIMEDOUT when `deadline` passed, ECONNRESET at EOF).
  int send_all(const char* data, std::size_t n, TimePoint deadline) {
    while (n > 0) {
      ssize_t w = ::send(fd_, data, n, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
      }
      data += w;
      n -= static_cast<std::size_t>(w);
    }
    return 0;
  }
  int recv_all(char* data, std::size_t n, TimePoint deadline) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, data, n, 0);
      if (r == 0) return ECONNRESET;
      if (r < 0) {
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
      }
      data += r;
      n -= static_cast<std::size_t>(r);
    }
    return 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace

EchoTarget parse_echo_target(const std::string& text) {
  EchoTarget t;
  std::string_view rest = text;
  if (const std::size_t plus = rest.rfind('+'); plus != std::string_view::npos) {
    std::string_view n = rest.substr(plus + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), t.ports);
    if (ec != std::errc() || end != n.data() + n.size() || t.ports < 1) {
      throw LoadError(fmt::format("bad target '{}': expected HOST:PORT[+N] with N >= 1", text));
    }
    rest = rest.substr(0, plus);
  }
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) throw LoadError(fmt::format("bad target '{}': expected HOST:PORT[+N]", text));
  std::string_view port = rest.substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), t.port);
  if (ec != std::errc() || end != port.data() + port.size() || t.port < 1 || t.port + t.ports - 1 > 65535) {
    throw LoadError(fmt::format("bad target '{}': ports must lie in 1..65535", text));
  }
  t.host = std::string(rest.substr(0, colon));
  if (t.host.size() >= 2 && t.host.front() == '[' && t.host.back() == ']') t.host = t.host.substr(1, t.host.size() - 2);
  try {
    (void)SocketAddress::from(t.host == "localhost" ? "127.0.0.1" : t.host, static_cast<std::uint16_t>(t.port));
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("bad target '{}': {}", text, e.what()));
  }
  return t;
}

EchoResult run_echo(const EchoOptions& options, const ProgressFn& progress) {
  if (options.threads < 1 || options.rounds < 1 || options.size < 1 || options.max_seconds <= 0) {
    throw LoadError("threads, rounds, size and max-seconds must be positive");
  }
  if (options.size > (64 << 20)) throw LoadError("size must be at most 64 MiB");
  const EchoTarget target = parse_echo_target(options.target);
  const std::string host = target.host == "localhost" ? "127.0.0.1" : target.host;

  const auto threads = static_cast<std::size_t>(options.threads);
  Run run;
  run.add_tallies(1);
  Shared shared(run.tally(0), threads);
  std::latch ready(static_cast<std::ptrdiff_t>(threads) + 1);
  std::latch go(1);
  const TimePoint guard = deadline_after(Clock::now(), options.max_seconds);

  auto body = [&](std::size_t index) {
    const auto port = static_cast<std::uint16_t>(target.port + static_cast<int>(index % static_cast<std::size_t>(target.ports)));
    Socket socket;
    if (int err = socket.connect(SocketAddress::from(host, port)); err != 0) {
      run.connect_failures().add(fmt::format("cannot connect to {}:{}: {}", target.host, port, std::strerror(err)));
      shared.end({});
      ready.count_down();
      return;
    }
    ready.count_down();
    go.wait();
    std::vector<char> out(static_cast<std::size_t>(options.size));
    std::vector<char> in(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>('a' + (i + index) % 26);
    std::uint64_t local[kLocalSamples];
    std::size_t local_count = 0;
    Errors errors;
    for (int round = 0; round < options.rounds; ++round) {
      const TimePoint t = Clock::now();
      if (t >= guard) {
        shared.hit_guard();
        break;
      }
      int err = socket.send_all(out.data(), out.size(), guard);
      if (err != 0) {
        ++(err == ETIMEDOUT ? errors.timeout : errors.write);
        if (err == ETIMEDOUT) shared.hit_guard();
        break;
      }
      err = socket.recv_all(in.data(), in.size(), guard);
      if (err != 0) {
        ++(err == ETIMEDOUT ? errors.timeout : errors.read);
        if (err == ETIMEDOUT) shared.hit_guard();
        break;
      }
      const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
      if (std::memcmp(in.data(), out.data(), in.size()) != 0) {
        ++errors.parse;
        break;
      }
      local[local_count++] = static_cast<std::uint64_t>(elapsed);
      if (local_count == kLocalSamples) {
        shared.add(local, local_count);
        local_count = 0;
      }
    }
    shared.add(local, local_count);
    shared.end(errors);
  };

  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) pool.emplace_back(body, i);
  ready.arrive_and_wait();
  const TimePoint start = Clock::now();
  go.count_down();
  run.wait(start, TimePoint::max(), progress);
  for (auto& t : pool) t.join();

  if (run.connect_failures().count() == threads) throw LoadError(run.connect_failures().first_reason());
  Stats all = run.merge();
  const auto total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(shared.end_time() - start).count();
  EchoResult result{.round_trips = all.responses,
                    .total_ms = static_cast<double>(total_ns) / 1e6,
                    .latency = std::move(all.latency),  // moved, not built empty and assigned: 280 KiB less to clear
                    .errors = all.errors,
                    .complete = !shared.guard_hit()};
  result.errors.connect += run.connect_failures().count();
  return result;
}

}  // namespace weft::load
