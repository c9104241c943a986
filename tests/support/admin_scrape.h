#pragma once
// Reading an example server's admin listener (--admin-port) the way an operator's tools do: its port
// from the server's output, a GET on a connection of its own, a sample of the /metrics text.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>

#include "support/blocking_client.h"
#include "support/hello_process.h"

namespace weft::test {

// The admin port `server` printed ("... admin on 127.0.0.1:PORT"); 0 when it printed none.
inline std::uint16_t admin_port(const HelloProcess& server) {
  std::smatch m;
  const std::string out = server.output();
  if (!std::regex_search(out, m, std::regex("admin on [0-9.]+:([0-9]+)"))) return 0;
  return static_cast<std::uint16_t>(std::stoi(m[1]));
}

struct AdminReply {
  int status = 0;  // 0: no answer
  std::string head;
  std::string body;
};

// One GET on a connection of its own (Connection: close), read to the end.
inline AdminReply admin_get(std::uint16_t port, const std::string& path, const std::string& accept = "") {
  BlockingClient c(port);
  AdminReply r;
  if (!c.is_open()) return r;
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n";
  if (!accept.empty()) request += "Accept: " + accept + "\r\n";
  if (!c.send_all(request + "\r\n")) return r;
  std::string all;
  if (c.recv_until_end(&all, std::chrono::milliseconds(20000)) != StreamEnd::eof) return r;
  const auto end = all.find("\r\n\r\n");
  if (all.size() < 12 || end == std::string::npos) return r;
  r.status = std::stoi(all.substr(9, 3));
  r.head = all.substr(0, end);
  r.body = all.substr(end + 4);
  return r;
}

// The value of the sample `series` (name and labels, exactly as exposed) in a scrape; -1 when absent.
inline double metric_sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

}  // namespace weft::test
