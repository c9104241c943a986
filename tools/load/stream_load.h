#pragma once
// weft-load stream: C weft connections each send 4-byte big-endian length-prefixed messages of S
// bytes as fast as the connection takes them (writes stop while the channel is not writable), and
// count the messages that come back (an echoing server returns them; a counting one returns none).

#include <cstdint>
#include <string>

#include "report.h"
#include "run.h"

namespace weft::load {

struct StreamOptions {
  std::string target;  // "HOST:PORT"
  int connections = 1;
  int size = 64;  // payload bytes per message
  double duration_s = 10;
  double warmup_s = 0;  // seconds of load before the counted duration_s (--warmup)
  int threads = 1;
};

struct StreamResult {
  std::uint64_t sent_messages = 0;  // handed to the socket's write queue (at most ~64 KiB per connection unsent at the end)
  std::uint64_t received_messages = 0;
  std::uint64_t sent_bytes = 0;  // on the wire: prefix included
  std::uint64_t received_bytes = 0;
  double duration_s = 0;
  Errors errors;
};

// Thread-safe. Throws LoadError for bad options or when no connection could be made.
StreamResult run_stream(const StreamOptions& options, const ProgressFn& progress = {});

}  // namespace weft::load
