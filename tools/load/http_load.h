#pragma once
// weft-load http: wrk's closed loop (each connection keeps `pipeline` requests in flight, written
// as one batch; with `reconnect`, each connection sends one batch and is replaced), or, with a rate, an open loop that schedules every request at an intended send time
// and measures its latency from that time (no coordinated omission: a stalled server is charged
// for the requests it delayed). Runs on weft channels, one event loop per thread; https:// through
// weft's TlsHandler (TLS 1.3 preferred, ALPN http/1.1, the server's certificate verified unless insecure).

#include <cstdint>
#include <string>
#include <vector>

#include "histogram.h"
#include "report.h"
#include "run.h"
#include "weft/channel/socket_address.h"

namespace weft::load {

struct HttpTarget {
  SocketAddress address;
  std::string host_header;  // "host:port" as written in the URL
  std::string path;         // "/plaintext?x=1"
  bool tls = false;         // https://
  std::string host;         // the host alone: the name TLS sends (SNI) and checks the certificate for
};

// Parses "http[s]://HOST[:PORT][/PATH]" (numeric host or localhost; port 80 or 443 by default).
// Throws LoadError.
HttpTarget parse_http_url(const std::string& url);

struct HttpOptions {
  std::string url;
  int connections = 10;
  int threads = 1;
  double duration_s = 10;
  double warmup_s = 0;  // seconds of load before the counted duration_s (--warmup)
  int pipeline = 1;
  double rate = 0;  // requests per second over all connections; 0: closed loop
  std::uint64_t requests = 0;        // -n: total requests, the run ends when each has ended; 0: run for duration_s
  std::vector<std::string> headers;  // "Name: value"
  double timeout_s = 2;              // no response for this long while requests are outstanding
  bool insecure = false;             // https: accept any certificate (no verification)
  std::string ca_file;               // https: trust these CA certificates (PEM) instead of the system's
  bool reconnect = false;            // a new connection for every batch (a TLS handshake each, for https)
};

struct HttpResult {
  std::uint64_t requests = 0;   // sent
  std::uint64_t responses = 0;  // complete responses received
  std::uint64_t bytes_read = 0;
  double duration_s = 0;
  Histogram latency;  // nanoseconds
  Histogram connect;  // nanoseconds from connect() to the TCP connection made, per initial connection
  Errors errors;
};

// Thread-safe (each call runs its own event loops). Throws LoadError for bad options or when no
// connection to the target could be made.
HttpResult run_http(const HttpOptions& options, const ProgressFn& progress = {});

// A run's merged stats as an HTTP result (without the errors counted outside the workers).
// Thread-safe (pure).
HttpResult http_result(Stats stats, double duration_s);

// The request bytes sent for `target` with extra header lines (validated; throws LoadError).
std::string encode_request(const HttpTarget& target, const std::vector<std::string>& headers);

}  // namespace weft::load
