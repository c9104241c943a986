#pragma once
// listens_on(pid, port): whether process `pid` itself holds a TCP socket listening on `port` (IPv4, any
// local address). A test that starts a server on a random port waits for this, not for a connect to
// the port to succeed: another process (a parallel test's server) may hold that port, and the
// connect would reach it. Reads /proc/net/tcp and /proc/PID/fd. Thread-safe.

#include <sys/types.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace weft::test {

inline bool listens_on(pid_t pid, std::uint16_t port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, ":%04X", port);
  std::set<std::string> inodes;  // of the sockets listening on the port
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, port_hex) == 0) {
      inodes.insert("socket:[" + inode + "]");
    }
  }
  if (inodes.empty()) return false;
  std::error_code error;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(fd.path().c_str(), target, sizeof target - 1);
    if (n > 0 && inodes.count(std::string(target, static_cast<std::size_t>(n))) > 0) return true;
  }
  return false;
}

}  // namespace weft::test
