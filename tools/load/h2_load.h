#pragma once
// weft-load h2: HTTP/2 GET load, h2load's model. Each connection keeps `streams` requests in flight
// (a new one as each ends); http:// is h2c with prior knowledge, https:// is h2 chosen by ALPN.
// Drives libnghttp2 directly on weft channels, one event loop per thread: the request's header
// fields are encoded once, a request costs nghttp2's stream and no allocation of this tool's, and
// what one read batch makes nghttp2 send leaves in one write. The run lasts `duration_s`, or until
// `requests` have ended (answered or failed). A connection that ends is not replaced (as h2load).
// With `rate`, an open loop as http's: requests leave at their intended times on free streams, and
// latency counts from those times.

#include <cstdint>
#include <string>
#include <vector>

#include "http_load.h"

namespace weft::load {

struct H2Options {
  std::string url;
  int connections = 10;
  int streams = 1;  // concurrent streams per connection
  int threads = 1;
  double duration_s = 10;  // with `requests`: an upper bound on the run
  double warmup_s = 0;     // seconds of load before the counted duration_s (--warmup)
  std::uint64_t requests = 0;  // total requests; 0: run for duration_s
  double rate = 0;  // requests per second over all connections (an open loop); 0: streams refilled as they end
  std::vector<std::string> headers;  // "Name: value"
  double timeout_s = 2;  // connect, TLS handshake, the server's SETTINGS, and no response while streams are open
  bool insecure = false;  // https: accept any certificate (no verification)
  std::string ca_file;    // https: trust these CA certificates (PEM) instead of the system's
};

// Thread-safe (each call runs its own event loops). Throws LoadError for bad options, and when no
// connection could be made or none became HTTP/2 (the reason says which: a server that answers the
// preface as HTTP/1.1, one that chose another protocol by ALPN, a failed handshake). Errors: connect
// (connections that did not become HTTP/2), read (streams reset, or open when their connection
// ended), timeout, status (non-2xx), parse (HTTP/2 protocol errors, counted per open stream).
HttpResult run_h2(const H2Options& options, const ProgressFn& progress = {});

}  // namespace weft::load
