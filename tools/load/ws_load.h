#pragma once
// weft-load ws: WebSocket echo load. Each connection does its own RFC 6455 handshake (GET with
// Upgrade: websocket, the 101's Sec-WebSocket-Accept checked; permessage-deflate offered with
// --deflate), then keeps `in_flight` messages of `size` bytes outstanding (closed loop), or sends
// on a schedule (--rate: open loop, latency from the intended send times, as http mode). Frames are
// masked, as a client's must be; every echo is checked byte-exact (a differing one is a parse
// error). Runs on weft channels, one event loop per thread; wss:// through weft's TlsHandler.

#include <cstdint>
#include <string>

#include "histogram.h"
#include "report.h"
#include "run.h"
#include "weft/channel/socket_address.h"

namespace weft::load {

struct WsTarget {
  SocketAddress address;
  std::string host_header;  // "host:port" as written in the URL
  std::string path;         // "/ws?x=1"
  bool tls = false;         // wss://
  std::string host;         // the host alone: SNI and the certificate's name
};

// Parses "ws[s]://HOST[:PORT][/PATH]" (numeric host or localhost; port 80 or 443 by default).
// Throws LoadError. Thread-safe (pure).
WsTarget parse_ws_url(const std::string& url);

struct WsOptions {
  std::string url;
  int connections = 10;
  int threads = 1;
  double duration_s = 10;
  double warmup_s = 0;         // seconds of load before the counted duration_s (--warmup)
  int in_flight = 1;           // -m: messages outstanding per connection, written as one batch
  int size = 64;               // payload bytes per message
  bool text = false;           // text frames (else binary)
  bool deflate = false;        // offer permessage-deflate (and compress when it is agreed)
  double rate = 0;             // messages per second over all connections; 0: closed loop
  std::uint64_t messages = 0;  // -n: messages in all, the run ends when each has been echoed or failed
  double timeout_s = 2;        // connect and handshake, and no echo for this long while messages are out
  bool insecure = false;       // wss: accept any certificate
  std::string ca_file;         // wss: trust these CA certificates (PEM) instead of the system's
};

struct WsResult {
  std::uint64_t sent = 0;        // messages sent
  std::uint64_t echoed = 0;      // echoes received whole and byte-exact
  std::uint64_t compressed = 0;  // echoes that came compressed (RSV1)
  std::uint64_t bytes_read = 0;  // on the wire, frame headers included (after the handshake)
  int deflate_connections = 0;   // connections whose handshake agreed permessage-deflate
  double duration_s = 0;
  Histogram latency;    // nanoseconds
  Histogram handshake;  // nanoseconds from connect() to the 101, per initial connection
  Errors errors;        // status: handshakes refused; parse: echoes that differ, bad frames or 101s
};

// Thread-safe (each call runs its own event loops). Throws LoadError for bad options or when no
// connection's handshake succeeded.
WsResult run_ws(const WsOptions& options, const ProgressFn& progress = {});

}  // namespace weft::load
