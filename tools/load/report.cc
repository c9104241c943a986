#include "report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace weft::load {

std::string errors_json(const Errors& e) {
  return fmt::format(R"({{"connect":{},"read":{},"write":{},"timeout":{},"status":{},"parse":{}}})", e.connect, e.read,
                     e.write, e.timeout, e.status, e.parse);
}

std::string latency_json(const Histogram& h) {
  auto us = [](double ns) { return ns / 1000.0; };
  return fmt::format(R"({{"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"p999":{:.3f},"max":{:.3f},"mean":{:.3f}}})",
                     us(static_cast<double>(h.value_at_percentile(50))), us(static_cast<double>(h.value_at_percentile(90))),
                     us(static_cast<double>(h.value_at_percentile(99))),
                     us(static_cast<double>(h.value_at_percentile(99.9))), us(static_cast<double>(h.max())),
                     us(h.mean()));
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_duration_ns(double ns) {
  if (ns < 1e6) return fmt::format("{:.2f}us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

std::string latency_text(const Histogram& h) {
  auto at = [&](double p) { return format_duration_ns(static_cast<double>(h.value_at_percentile(p))); };
  return fmt::format("  Latency   p50 {:>9}  p90 {:>9}  p99 {:>9}  p99.9 {:>9}  max {:>9}  mean {:>9}\n", at(50),
                     at(90), at(99), at(99.9), format_duration_ns(static_cast<double>(h.max())),
                     format_duration_ns(h.mean()));
}

std::string errors_text(const Errors& e) {
  if (e.total() == 0) return {};
  return fmt::format("  Errors: connect {}, read {}, write {}, timeout {}, status {}, parse {}\n", e.connect, e.read,
                     e.write, e.timeout, e.status, e.parse);
}

void write_json_file(const std::string& path, const std::string& json) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw LoadError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size() && std::fputc('\n', f) != EOF;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) throw LoadError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
}

bool progress_enabled() { return ::isatty(STDERR_FILENO) == 1; }

void print_progress(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace weft::load
