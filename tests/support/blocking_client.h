#pragma once
// Test helpers for real sockets: a blocking-style TCP client with timeouts on every call (so a
// broken server fails a test instead of hanging it), and a helper that raises RLIMIT_NOFILE.
//
// Thread-compatible: one BlockingClient per thread at a time.

#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace weft::test {

using namespace std::chrono_literals;
using TestDuration = std::chrono::milliseconds;

// Raises the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit now in force.
rlim_t raise_fd_limit();

// Polls `pred` every millisecond until it holds or `timeout` passes. Returns the last result.
template <class Pred>
bool eventually(Pred&& pred, TestDuration timeout = 5000ms);

// A port on 127.0.0.1 that nothing listens on (bound once, then released).
std::uint16_t unused_loopback_port();

// What a read that waits for the end of the stream saw.
enum class StreamEnd { eof, reset, timeout, error };
const char* to_string(StreamEnd end) noexcept;

class BlockingClient {
 public:
  struct Options {
    int receive_buffer = 0;  // SO_RCVBUF before connect; 0 keeps the default
    int send_buffer = 0;     // SO_SNDBUF before connect; 0 keeps the default
    bool tcp_nodelay = true;
  };

  BlockingClient() noexcept = default;
  // Connects to 127.0.0.1:port. On failure the client is not open and error() holds errno.
  explicit BlockingClient(std::uint16_t port) : BlockingClient(port, Options{}) {}
  BlockingClient(std::uint16_t port, Options options);
  // Takes over a connected socket (one accepted by a test's own raw server); closes it when done.
  static BlockingClient adopt(int fd) noexcept;
  BlockingClient(BlockingClient&& other) noexcept;
  BlockingClient& operator=(BlockingClient&& other) noexcept;
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;
  ~BlockingClient();

  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  // errno of the last failed call (0 if none).
  int error() const noexcept { return error_; }

  // Sends every byte (MSG_NOSIGNAL). False on error or when no progress is possible for `timeout`.
  bool send_all(std::string_view data, TestDuration timeout = 5000ms);
  // Sends what fits without blocking; returns the bytes sent (0 when the socket is full).
  std::size_t send_some(std::string_view data);
  // Exactly n bytes, or nullopt on EOF, error or timeout.
  std::optional<std::string> recv_exact(std::size_t n, TestDuration timeout = 5000ms);
  // Whatever is readable now, waiting up to `timeout` for the first byte (at most `max` bytes).
  // Empty on timeout; sets *end on EOF/reset.
  std::string recv_some(std::size_t max, TestDuration timeout, StreamEnd* end = nullptr);
  // Reads until the peer closes; appends what arrived to *data (when given).
  StreamEnd recv_until_end(std::string* data = nullptr, TestDuration timeout = 5000ms);
  // Sends `message` and checks that exactly it comes back.
  bool round_trip(std::string_view message, TestDuration timeout = 5000ms);
  // Reads until what arrived holds `count` occurrences of `marker` (e.g. "HTTP/1.1 200" for that
  // many answers); appends it to *data. False on EOF, error, or `timeout` without a byte.
  bool recv_until_count(std::string_view marker, std::size_t count, std::string* data = nullptr,
                        TestDuration timeout = 20000ms);

  // shutdown(SHUT_WR): sends FIN, keeps reading.
  void shutdown_write();
  // SO_LINGER {1, 0} then close: the peer gets a RST.
  void reset();
  void close();

 private:
  // Waits for `events` on the socket; false on timeout (error_ = ETIMEDOUT) or poll failure.
  bool wait_for(short events, TestDuration timeout);

  int fd_ = -1;
  int error_ = 0;
};

template <class Pred>
bool eventually(Pred&& pred, TestDuration timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace weft::test
