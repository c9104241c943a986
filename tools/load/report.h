#pragma once
// What every mode reports: errors by kind, latency percentiles, the JSON pieces, and the errors a
// run ends with. Not thread-safe (each thread keeps its own Errors and merges at the end).

#include <cstdint>
#include <stdexcept>
#include <string>

#include "histogram.h"

namespace weft::load {

// A run could not start or could not finish (e.g. the target is unreachable); what() is the
// one-line reason printed after "weft-load: ".
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Errors {
  std::uint64_t connect = 0;
  std::uint64_t read = 0;
  std::uint64_t write = 0;
  std::uint64_t timeout = 0;
  std::uint64_t status = 0;  // responses outside 2xx
  std::uint64_t parse = 0;   // malformed responses, or echoed bytes that differ

  void add(const Errors& o) noexcept {
    connect += o.connect;
    read += o.read;
    write += o.write;
    timeout += o.timeout;
    status += o.status;
    parse += o.parse;
  }
  std::uint64_t total() const noexcept { return connect + read + write + timeout + status + parse; }
};

// {"connect":0,"read":0,...}
std::string errors_json(const Errors& errors);
// {"p50":..,"p75":..,"p90":..,"p99":..,"p999":..,"p9999":..,"max":..,"mean":..} in microseconds, from a
// histogram of ns.
std::string latency_json(const Histogram& latency_ns);
// A JSON string literal (quotes and escapes).
std::string json_string(const std::string& text);
// wrk-style lines: "Latency  p50 ... p99.9 ... max ... mean ...", and the errors when there are any.
std::string latency_text(const Histogram& latency_ns);
std::string errors_text(const Errors& errors);
// wrk --latency's table, deeper: the value at 50, 75, 90, 99, 99.9, 99.99 and 99.999% and at 100% (the
// maximum), one line each, with the samples at or below it.
std::string latency_distribution_text(const Histogram& latency_ns);
// "  Connect   min ... mean ... max ..." for the connect times of a run's connections (ns); "" when none.
std::string connect_text(const Histogram& connect_ns);
// Writes `json` plus a newline to `path`; throws LoadError naming the path on failure.
void write_json_file(const std::string& path, const std::string& json);
// "850.00us", "1.23ms", "2.00s" for a duration in nanoseconds.
std::string format_duration_ns(double ns);

// Prints one progress line per call on stderr when stderr is a terminal.
bool progress_enabled();
void print_progress(const std::string& line);

}  // namespace weft::load
