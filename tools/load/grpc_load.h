#pragma once
// weft-load grpc: calls of bench.proto's grpc.testing.BenchmarkService (shared/peers/grpc) on weft's
// gRPC client, in the shape of grpc-java's TransportBenchmark: C connections, each carrying S
// concurrent streams (default 10 on one connection).
//   stream:   StreamingFromServer, SimpleRequest{response_size=SIZE}; the server streams responses
//             until the run ends (the call is then cancelled); messages = responses read.
//   unary:    UnaryCall, back to back on each stream slot; SimpleRequest{response_size=SIZE,
//             payload{body=SIZE zero bytes}}; messages = calls = responses.
//   pingpong: StreamingCall, one request then its response, repeated on each stream; messages =
//             round trips, calls = streams.
// With --balance POLICY each of the C "connections" is a grpc::ClientChannel (weft/grpc/channel.h) to a
// gRPC target ("ipv4:127.0.0.1:P1,127.0.0.1:P2", "dns:///host:port") balanced by POLICY
// (pick_first or round_robin): the calls go through the channel's picking.
//   method:   any method of a .proto read at run time (--proto, --call; proto_request.h), its request
//             made once from JSON (--data); driven by the method's shape:
//             unary: as unary; messages = calls.
//             server streaming: each stream slot makes calls back to back (write the request,
//               half-close, read until the server ends the call); -n and --rate count calls;
//               latency per call; messages = responses read.
//             client streaming: each call writes the request stream_messages times, half-closes
//               and reads the one response; messages = calls; latency per call.
//             bidi streaming: as pingpong.
// The bench requests are encoded by hand; only `method` uses libprotobuf (in proto_request.cc).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "histogram.h"
#include "report.h"
#include "run.h"

namespace weft::load {

struct GrpcOptions {
  std::string call = "stream";  // stream | unary | pingpong | method
  std::string target;           // "HOST:PORT"; with balance, a gRPC target
  std::string balance;          // empty: a grpc::Client per connection; pick_first | round_robin: a grpc::ClientChannel
  int connections = 1;
  int streams = 10;  // concurrent calls per connection
  int threads = 1;   // event loops; connections are spread over them
  int size = 0;      // response_size (and the request payload's, for unary and pingpong)
  double duration_s = 10;
  double warmup_s = 0;  // seconds of load before the counted duration_s (--warmup)
  // -n: messages in all (unary: calls; pingpong: round trips; stream: responses read); the run ends
  // when each has ended. 0: run for duration_s.
  std::uint64_t messages = 0;
  // --rate (unary, pingpong): messages per second over all connections, an open loop: each message
  // has an intended send time, leaves on the first free stream at or after it, and its latency counts
  // from that time. 0: each stream sends its next message when the last one is answered.
  double rate = 0;
  // method: the .proto, its import directories (-I), the method ("pkg.Service/Method" or
  // "pkg.Service.Method"), the request as JSON ("" is "{}"), and the messages each client
  // streaming call writes.
  std::string proto_file;
  std::vector<std::string> import_dirs;
  std::string method;
  std::string data;
  int stream_messages = 1;
};

struct GrpcResult {
  std::uint64_t messages = 0;  // responses read
  std::uint64_t calls = 0;     // calls completed (unary, method's unary and streaming calls), or
                               // streams opened (stream, pingpong, method's bidi)
  double duration_s = 0;
  // ns per call (unary; method: unary, server and client streaming) or per round trip (pingpong,
  // method's bidi); empty for stream
  Histogram latency;
  Errors errors;      // status: calls that ended with a status other than OK (or CANCELLED at the end)
  std::uint64_t sent = 0;  // messages sent (unary: calls; pingpong: requests written); stream: calls
  // method: the call path ("/pkg.Service/Method") and the method's shape ("unary", "server
  // streaming", "client streaming", "bidi streaming"); empty for the bench calls.
  std::string path;
  std::string kind;
  std::size_t request_bytes = 0;  // the request message's encoded size
};

// SimpleRequest{response_size=size, payload{body=payload zero bytes}} (field 2, varint; field 3, message
// with field 2, bytes), as protobuf encodes it. Thread-safe (pure).
std::string encode_simple_request(int response_size, int payload);

// Thread-safe. Throws LoadError for bad options or when no connection could be made.
GrpcResult run_grpc(const GrpcOptions& options, const ProgressFn& progress = {});

}  // namespace weft::load
