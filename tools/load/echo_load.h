#pragma once
// weft-load echo: T blocking client threads (plain sockets, by definition of the scenario); thread i
// connects to PORT + (i mod N), then all start together and each does K round trips of S bytes
// (write S, read S back, check them). Reports the wall time of the rounds and per-round-trip latency.

#include <cstdint>
#include <string>

#include "histogram.h"
#include "report.h"
#include "run.h"

namespace weft::load {

struct EchoOptions {
  std::string target;  // "HOST:PORT[+N]"
  int threads = 1;
  int rounds = 1;
  int size = 1;
  double max_seconds = 120;  // guard: threads give up at this deadline
};

struct EchoResult {
  std::uint64_t round_trips = 0;
  double total_ms = 0;  // from the common start to the last thread's end
  Histogram latency;    // nanoseconds
  Errors errors;
  bool complete = true;  // false when the --max-seconds guard stopped the run
};

struct EchoTarget {
  std::string host;
  int port = 0;
  int ports = 1;
};

// Parses "HOST:PORT[+N]". Throws LoadError.
EchoTarget parse_echo_target(const std::string& target);

// Thread-safe. Throws LoadError for bad options or when no thread could connect.
EchoResult run_echo(const EchoOptions& options, const ProgressFn& progress = {});

}  // namespace weft::load
