#include "report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace weft::load {

std::string errors_json(const Errors& e) {
  return fmt::format(R"({{"connect":{},"read":{},"write":{},"timeout":{},"status":{},"parse":{}}})", e.connect, e.read,
                     e.write, e.timeout, e.status, e.parse);
}

std::string latency_json(const Histogram& h) {
  auto at = [&h](double p) { return static_cast<double>(h.value_at_percentile(p)) / 1000.0; };
  return fmt::format(
      R"({{"p50":{:.3f},"p75":{:.3f},"p90":{:.3f},"p99":{:.3f},"p999":{:.3f},"p9999":{:.3f},"max":{:.3f},"mean":{:.3f}}})",
      at(50), at(75), at(90), at(99), at(99.9), at(99.99), static_cast<double>(h.max()) / 1000.0, h.mean() / 1000.0);
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

std::string latency_distribution_text(const Histogram& h) {
  std::string out = "  Latency distribution (percentile, latency, samples at or below)\n";
  for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0}) {
    const std::uint64_t value = p == 100.0 ? h.max() : h.value_at_percentile(p);
    const std::uint64_t rank = Histogram::rank_at(p, h.count());
    out += fmt::format("  {:>9.3f}%  {:>10}  {:>12}\n", p, format_duration_ns(static_cast<double>(value)), rank);
  }
  return out;
}

std::string connect_text(const Histogram& h) {
  if (h.count() == 0) return {};
  return fmt::format("  Connect   min {:>9}  p50 {:>9}  p99 {:>9}  max {:>9}  mean {:>9}  ({} connections)\n",
                     format_duration_ns(static_cast<double>(h.min())),
                     format_duration_ns(static_cast<double>(h.value_at_percentile(50))),
                     format_duration_ns(static_cast<double>(h.value_at_percentile(99))),
                     format_duration_ns(static_cast<double>(h.max())), format_duration_ns(h.mean()), h.count());
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
