#pragma once
// Runs a shell command for the interop tests (curl, openssl, python3, chromium, nghttp...): its
// standard output, and its wait status through `status`.

#include <array>
#include <cstdio>
#include <string>

namespace weft::test {

inline std::string run_shell(const std::string& command, int& status) {
  std::string out;
  status = -1;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  status = ::pclose(pipe);
  return out;
}

}  // namespace weft::test
