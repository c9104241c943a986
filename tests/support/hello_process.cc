#include "hello_process.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace weft::test {

HelloProcess::HelloProcess(const std::string& binary, const std::string& transport, const std::string& mode,
                           std::vector<std::string> extra_args)
    : HelloProcess(binary, [&] {
        std::vector<std::string> args = {"--loops", "1", "--transport", transport, "--mode", mode, "--max-connections",
                                         "16"};
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        return args;
      }()) {}

HelloProcess::HelloProcess(const std::string& binary, PortFirst port_first, std::vector<std::string> args)
    : port_first_(std::move(port_first)) {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> ports(20000, 32000);  // below the ephemeral range
  for (int attempt = 0; attempt < 20 && pid_ < 0; ++attempt) {
    if (start_on(binary, static_cast<std::uint16_t>(ports(random)), args)) return;
  }
}

HelloProcess::HelloProcess(const std::string& binary, std::vector<std::string> args) {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> ports(20000, 32000);  // below the ephemeral range
  for (int attempt = 0; attempt < 20 && pid_ < 0; ++attempt) {
    if (start_on(binary, static_cast<std::uint16_t>(ports(random)), args)) return;
  }
}

HelloProcess::HelloProcess(const std::string& binary, std::uint16_t port, std::vector<std::string> args) {
  start_on(binary, port, args);
}

bool HelloProcess::start_on(const std::string& binary, std::uint16_t port, const std::vector<std::string>& extra_args) {
  // The server's output goes to a file (a pipe nobody reads would block or kill it later).
  char path[] = "/tmp/weft-hello-test-XXXXXX";
  const int log_fd = ::mkstemp(path);
  if (log_fd < 0) {
    error_ = "mkstemp failed";
    return false;
  }
  const std::string port_text = std::to_string(port);
  std::vector<std::string> args = port_first_
                                      ? std::vector<std::string>{binary, port_text}
                                      : std::vector<std::string>{binary, "--host", "127.0.0.1", "--port", port_text};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // Built before fork(): the child of a multi-threaded process may not allocate (another thread may
  // have held the allocator's lock at the fork; the child then waits for it forever).
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::close(log_fd);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (pid < 0) {
    ::unlink(path);
    error_ = "fork failed";
    return false;
  }
  log_path_ = path;
  // It prints one line once it listens, or an error and exits. A minute: generous for a sanitizer
  // build on a loaded machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (output().find(port_first_ ? port_first_->ready : std::string("listening")) != std::string::npos) {
      pid_ = pid;
      port_ = port;
      return true;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  error_ = binary.substr(binary.rfind('/') + 1) + " did not start: " + output();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::unlink(path);
  log_path_.clear();
  return false;
}

std::string HelloProcess::output() const {
  if (log_path_.empty()) return {};
  std::ifstream in(log_path_);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int HelloProcess::stop() {
  int status = 0;
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  return status;
}

void HelloProcess::terminate() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
}

HelloProcess::~HelloProcess() {
  stop();
  if (!log_path_.empty()) ::unlink(log_path_.c_str());
}

std::size_t HelloProcess::rss_kib() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::size_t kib = 0;
      status >> kib;
      return kib;
    }
    std::getline(status, key);
  }
  return 0;
}

}  // namespace weft::test
