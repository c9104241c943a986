#pragma once
// Runs weft-hello (examples/hello) as a child process on a port below the ephemeral range, for tests
// that drive the real server the way its users do. Stopped (SIGTERM, then waited for) by the
// destructor.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::test {

class HelloProcess {
 public:
  // Starts `binary --transport T --mode M --loops 1 [extra_args...]` and waits until it listens. On
  // failure is_running() is false and error() says why.
  HelloProcess(const std::string& binary, const std::string& transport, const std::string& mode,
               std::vector<std::string> extra_args = {});
  // Starts `binary --host 127.0.0.1 --port P [args...]`: any example server with those two flags that
  // prints "listening" once it listens (weft-grpc-bench-server).
  HelloProcess(const std::string& binary, std::vector<std::string> args);
  // The same on `port` (a restart on the port a previous instance had); no other port is tried.
  HelloProcess(const std::string& binary, std::uint16_t port, std::vector<std::string> args);
  // Starts `binary PORT [args...]`, a program that takes its port first (grpc++'s reference server,
  // tests/integration/grpc_peer), and waits until it prints `ready` (which it must print only once bound).
  struct PortFirst {
    std::string ready;
  };
  HelloProcess(const std::string& binary, PortFirst port_first, std::vector<std::string> args);
  ~HelloProcess();
  HelloProcess(const HelloProcess&) = delete;
  HelloProcess& operator=(const HelloProcess&) = delete;

  bool is_running() const noexcept { return pid_ > 0; }
  const std::string& error() const noexcept { return error_; }
  std::uint16_t port() const noexcept { return port_; }
  // The server's process id (-1 once stopped), for a peer that signals it.
  pid_t pid() const noexcept { return pid_; }
  // The server's resident set size now, in KiB (VmRSS); 0 if unknown.
  std::size_t rss_kib() const;
  // Everything the server printed so far.
  std::string output() const;
  // SIGTERM, then waits; returns the wait status (0 when it was not running).
  int stop();
  // SIGTERM without waiting (the server drains meanwhile); stop() waits for it afterwards.
  void terminate();

 private:
  bool start_on(const std::string& binary, std::uint16_t port, const std::vector<std::string>& args);

  std::optional<PortFirst> port_first_;  // set: `binary PORT args...`, ready at port_first_->ready
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string error_;
  std::string log_path_;
};

}  // namespace weft::test
