// weft-load: a load generator built on weft. Modes: http (wrk's closed loop, or a constant rate
// without coordinated omission), h2 (HTTP/2, h2load's model), echo (blocking client threads),
// stream (length-prefixed messages), ws (WebSocket echo: msg/s, latency), grpc (bench.proto's BenchmarkService: stream,
// unary, pingpong; or any method of a .proto: method). See docs/weft-load.md.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "echo_load.h"
#include "grpc_load.h"
#include "h2_load.h"
#include "http_load.h"
#include "report.h"
#include "stream_load.h"
#include "weft/version.h"
#include "ws_load.h"

namespace {

using namespace weft::load;

// "  3.0s      120345 req/s  0 errors" once a second on a terminal (http and h2); none otherwise.
ProgressFn request_progress(bool tty) {
  if (!tty) return {};
  return [last = std::uint64_t{0}](double t, std::uint64_t responses, std::uint64_t errors) mutable {
    print_progress(fmt::format("  {:5.1f}s  {:>10} req/s  {} errors", t, responses - last, errors));
    last = responses;
  };
}

std::string json_number(double v) { return fmt::format("{:.3f}", v); }

// An open-loop run's shortfall: what it sent per second, and the requests its schedule made due
// (rate x duration, at most -n's count when one was given) that never left.
struct OpenLoopShortfall {
  double sent_rate = 0;
  std::uint64_t unsent = 0;
};
OpenLoopShortfall open_loop_shortfall(double rate, double duration_s, std::uint64_t sent, std::uint64_t count) {
  if (rate <= 0 || duration_s <= 0) return {};
  auto due = static_cast<std::uint64_t>(rate * duration_s);
  if (count > 0) due = std::min(due, count);
  return {static_cast<double>(sent) / duration_s, due > sent ? due - sent : 0};
}

// An open loop's line on what it sent against its target, and the warning when it fell short.
void print_shortfall(double rate, const OpenLoopShortfall& shortfall) {
  if (rate <= 0) return;
  std::printf("  constant rate: target %.0f req/s, sent %.0f req/s (%.1f%%); %llu requests due but never sent\n", rate,
              shortfall.sent_rate, shortfall.sent_rate / rate * 100.0,
              static_cast<unsigned long long>(shortfall.unsent));
  if (shortfall.sent_rate < 0.95 * rate) {
    std::printf(
        "WARNING: the target rate was not reached (the server or this client could not keep up): "
        "latencies count from the intended send times, the unsent requests are not in them\n");
  }
}

// The JSON keys of an open loop: "rate", "sent_rate", "unsent" (null in a closed loop).
std::string shortfall_json(double rate, const OpenLoopShortfall& shortfall) {
  return fmt::format(R"("rate":{},"sent_rate":{},"unsent":{})", rate > 0 ? json_number(rate) : "null",
                     rate > 0 ? json_number(shortfall.sent_rate) : "null",
                     rate > 0 ? std::to_string(shortfall.unsent) : "null");
}

// " (constant rate R req/s, latency from intended send times)" for an open loop's heading.
std::string rate_heading(double rate) {
  return rate > 0 ? fmt::format(", constant rate {:.0f} req/s (latency from intended send times)", rate) : "";
}

void http_report(const HttpOptions& o, const HttpResult& r, const std::string& json_path, bool distribution) {
  const double rps = r.duration_s > 0 ? static_cast<double>(r.responses) / r.duration_s : 0;
  std::printf("Running %.1fs test @ %s\n  %d threads and %d connections, pipeline %d%s%s\n", r.duration_s,
              o.url.c_str(), o.threads, o.connections, o.pipeline,
              o.requests > 0 ? fmt::format(", {} requests", o.requests).c_str() : "", rate_heading(o.rate).c_str());
  std::fputs(latency_text(r.latency).c_str(), stdout);
  if (distribution) std::fputs(latency_distribution_text(r.latency).c_str(), stdout);
  std::fputs(connect_text(r.connect).c_str(), stdout);
  std::printf("  %llu requests sent, %llu responses in %.2fs, %.2fMB read\n",
              static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.responses), r.duration_s,
              static_cast<double>(r.bytes_read) / 1e6);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::printf("Requests/sec: %10.2f\nTransfer/sec: %9.2fMB\n", rps,
              r.duration_s > 0 ? static_cast<double>(r.bytes_read) / 1e6 / r.duration_s : 0);
  const OpenLoopShortfall shortfall = open_loop_shortfall(o.rate, r.duration_s, r.requests, o.requests);
  print_shortfall(o.rate, shortfall);
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(
      json_path,
      fmt::format(R"({{"tool":"weft-load","version":{},"mode":"http","target":{},"connections":{},"threads":{},)"
                  R"("pipeline":{},{},"warmup_s":{},"duration_s":{},"requests":{},"responses":{},)"
                  R"("rps":{},"bytes_read":{},"latency_us":{},"connect_us":{},"errors":{}}})",
                  json_string(weft::version()), json_string(o.url), o.connections, o.threads, o.pipeline,
                  shortfall_json(o.rate, shortfall), json_number(o.warmup_s), json_number(r.duration_s), r.requests,
                  r.responses, json_number(rps), r.bytes_read, latency_json(r.latency),
                  r.connect.count() > 0 ? latency_json(r.connect) : std::string("null"), errors_json(r.errors)));
}

void h2_report(const H2Options& o, const HttpResult& r, const std::string& json_path, bool distribution) {
  const double rps = r.duration_s > 0 ? static_cast<double>(r.responses) / r.duration_s : 0;
  std::printf("Running %.2fs test @ %s (HTTP/2)\n  %d threads and %d connections, %d streams each%s%s\n", r.duration_s,
              o.url.c_str(), o.threads, o.connections, o.streams,
              o.requests > 0 ? fmt::format(", {} requests", o.requests).c_str() : "", rate_heading(o.rate).c_str());
  std::fputs(latency_text(r.latency).c_str(), stdout);
  if (distribution) std::fputs(latency_distribution_text(r.latency).c_str(), stdout);
  std::fputs(connect_text(r.connect).c_str(), stdout);
  std::printf("  %llu requests sent, %llu responses in %.2fs, %.2fMB read\n",
              static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.responses), r.duration_s,
              static_cast<double>(r.bytes_read) / 1e6);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::printf("Requests/sec: %10.2f\nTransfer/sec: %9.2fMB\n", rps,
              r.duration_s > 0 ? static_cast<double>(r.bytes_read) / 1e6 / r.duration_s : 0);
  const OpenLoopShortfall shortfall = open_loop_shortfall(o.rate, r.duration_s, r.requests, o.requests);
  print_shortfall(o.rate, shortfall);
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(
      json_path,
      fmt::format(
          R"({{"tool":"weft-load","version":{},"mode":"h2","target":{},"connections":{},"threads":{},"streams":{},{},)"
          R"("warmup_s":{},"duration_s":{},"requests":{},"responses":{},"rps":{},"bytes_read":{},)"
          R"("latency_us":{},"errors":{}}})",
          json_string(weft::version()), json_string(o.url), o.connections, o.threads, o.streams,
          shortfall_json(o.rate, shortfall), json_number(o.warmup_s), json_number(r.duration_s), r.requests,
          r.responses, json_number(rps), r.bytes_read, latency_json(r.latency), errors_json(r.errors)));
}

void echo_report(const EchoOptions& o, const EchoResult& r, const std::string& json_path) {
  std::printf("Echo @ %s: %d threads x %d rounds of %d bytes\n", o.target.c_str(), o.threads, o.rounds, o.size);
  std::fputs(latency_text(r.latency).c_str(), stdout);
  std::printf("  %llu round trips in %.1f ms (%.0f round trips/s)\n", static_cast<unsigned long long>(r.round_trips),
              r.total_ms, r.total_ms > 0 ? static_cast<double>(r.round_trips) / (r.total_ms / 1e3) : 0);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::printf("total_ms: %.1f\n", r.total_ms);
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(json_path,
                  fmt::format(R"({{"tool":"weft-load","mode":"echo","target":{},"threads":{},"rounds":{},"size":{},)"
                              R"("total_ms":{},"round_trips":{},"complete":{},"latency_us":{},"errors":{}}})",
                              json_string(o.target), o.threads, o.rounds, o.size, json_number(r.total_ms),
                              r.round_trips, r.complete ? "true" : "false", latency_json(r.latency),
                              errors_json(r.errors)));
}

void stream_report(const StreamOptions& o, const StreamResult& r, const std::string& json_path) {
  const double d = r.duration_s > 0 ? r.duration_s : 1;
  const double sent_mps = static_cast<double>(r.sent_messages) / d;
  const double sent_bps = static_cast<double>(r.sent_bytes) / d;
  const double recv_mps = static_cast<double>(r.received_messages) / d;
  const double recv_bps = static_cast<double>(r.received_bytes) / d;
  std::printf("Stream @ %s: %d connections, %d-byte messages, %.2fs\n", o.target.c_str(), o.connections, o.size,
              r.duration_s);
  std::printf("  sent:     %llu messages, %.0f msg/s, %.2f MB/s\n", static_cast<unsigned long long>(r.sent_messages),
              sent_mps, sent_bps / 1e6);
  std::printf("  received: %llu messages, %.0f msg/s, %.2f MB/s\n",
              static_cast<unsigned long long>(r.received_messages), recv_mps, recv_bps / 1e6);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(
      json_path,
      fmt::format(
          R"({{"tool":"weft-load","mode":"stream","target":{},"connections":{},"size":{},"warmup_s":{},"duration_s":{},)"
          R"("sent_messages":{},"received_messages":{},"messages_per_s":{},"bytes_per_s":{},)"
          R"("received_messages_per_s":{},"received_bytes_per_s":{},"errors":{}}})",
          json_string(o.target), o.connections, o.size, json_number(o.warmup_s), json_number(r.duration_s),
          r.sent_messages, r.received_messages, json_number(sent_mps), json_number(sent_bps), json_number(recv_mps),
          json_number(recv_bps), errors_json(r.errors)));
}

void grpc_report(const GrpcOptions& o, const GrpcResult& r, const std::string& json_path, bool distribution) {
  const double d = r.duration_s > 0 ? r.duration_s : 1;
  const double mps = static_cast<double>(r.messages) / d;
  const double cps = static_cast<double>(r.calls) / d;
  if (o.call == "method") {
    std::printf("gRPC %s (%s) @ %s: %d connections x %d streams, %d threads, %zu-byte request, %.2fs%s%s\n",
                r.path.c_str(), r.kind.c_str(), o.target.c_str(), o.connections, o.streams, o.threads, r.request_bytes,
                r.duration_s, o.messages > 0 ? fmt::format(", {} messages", o.messages).c_str() : "",
                rate_heading(o.rate).c_str());
  } else {
    std::printf("gRPC %s @ %s: %d connections x %d streams, %d threads, %d-byte messages, %.2fs%s%s\n", o.call.c_str(),
                o.target.c_str(), o.connections, o.streams, o.threads, o.size, r.duration_s,
                o.messages > 0 ? fmt::format(", {} messages", o.messages).c_str() : "", rate_heading(o.rate).c_str());
  }
  if (r.latency.count() > 0) std::fputs(latency_text(r.latency).c_str(), stdout);
  if (r.latency.count() > 0 && distribution) std::fputs(latency_distribution_text(r.latency).c_str(), stdout);
  std::printf("  %llu messages, %llu calls in %.2fs\n", static_cast<unsigned long long>(r.messages),
              static_cast<unsigned long long>(r.calls), r.duration_s);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::printf("Messages/sec: %10.2f\nCalls/sec: %13.2f\n", mps, cps);
  const OpenLoopShortfall shortfall = open_loop_shortfall(o.rate, r.duration_s, r.sent, o.messages);
  print_shortfall(o.rate, shortfall);
  // One line in the grpc++ reference client's form (shared/peers/grpc/client.cc), for scripts.
  std::printf("mode=%s threads=%d connections=%d streams=%d size=%d messages=%llu calls=%llu seconds=%.2f rate=%.0f "
              "failures=%llu\n",
              o.call.c_str(), o.threads, o.connections, o.streams, o.size, static_cast<unsigned long long>(r.messages),
              static_cast<unsigned long long>(r.calls), r.duration_s, mps,
              static_cast<unsigned long long>(r.errors.total()));
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(
      json_path,
      fmt::format(
          R"({{"tool":"weft-load","version":{},"mode":"grpc","call":{},"target":{},"connections":{},"streams":{},)"
          R"("threads":{},"size":{},{}{},"warmup_s":{},"duration_s":{},"sent":{},"messages":{},"calls":{},"messages_per_s":{},)"
          R"("calls_per_s":{},"latency_us":{},"errors":{}}})",
          json_string(weft::version()), json_string(o.call), json_string(o.target), o.connections, o.streams, o.threads,
          o.size,
          o.call == "method" ? fmt::format(R"("method":{},"kind":{},)", json_string(r.path), json_string(r.kind))
                             : std::string(),
          shortfall_json(o.rate, shortfall), json_number(o.warmup_s), json_number(r.duration_s), r.sent, r.messages,
          r.calls, json_number(mps), json_number(cps), r.latency.count() > 0 ? latency_json(r.latency) : "null",
          errors_json(r.errors)));
}

void ws_report(const WsOptions& o, const WsResult& r, const std::string& json_path, bool distribution) {
  const double mps = r.duration_s > 0 ? static_cast<double>(r.echoed) / r.duration_s : 0;
  std::printf(
      "Running %.2fs test @ %s (WebSocket)\n  %d threads and %d connections, %d messages in flight each, "
      "%d-byte %s messages%s%s%s\n",
      r.duration_s, o.url.c_str(), o.threads, o.connections, o.in_flight, o.size, o.text ? "text" : "binary",
      o.deflate ? fmt::format(", permessage-deflate on {} connections", r.deflate_connections).c_str() : "",
      o.messages > 0 ? fmt::format(", {} messages", o.messages).c_str() : "", rate_heading(o.rate).c_str());
  std::fputs(latency_text(r.latency).c_str(), stdout);
  if (distribution) std::fputs(latency_distribution_text(r.latency).c_str(), stdout);
  if (r.handshake.count() > 0) {
    std::fputs(connect_text(r.handshake).c_str(), stdout);
  }
  std::printf("  %llu messages sent, %llu echoed (%llu compressed) in %.2fs, %.2fMB read\n",
              static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.echoed),
              static_cast<unsigned long long>(r.compressed), r.duration_s, static_cast<double>(r.bytes_read) / 1e6);
  std::fputs(errors_text(r.errors).c_str(), stdout);
  std::printf("Messages/sec: %10.2f\nTransfer/sec: %9.2fMB\n", mps,
              r.duration_s > 0 ? static_cast<double>(r.bytes_read) / 1e6 / r.duration_s : 0);
  const OpenLoopShortfall shortfall = open_loop_shortfall(o.rate, r.duration_s, r.sent, o.messages);
  print_shortfall(o.rate, shortfall);
  std::fflush(stdout);
  if (json_path.empty()) return;
  write_json_file(
      json_path,
      fmt::format(
          R"({{"tool":"weft-load","version":{},"mode":"ws","target":{},"connections":{},"threads":{},"in_flight":{},)"
          R"("size":{},"text":{},"deflate":{},"deflate_connections":{},{},"warmup_s":{},"duration_s":{},)"
          R"("requests":{},"responses":{},"compressed":{},"rps":{},"bytes_read":{},"latency_us":{},"connect_us":{},)"
          R"("errors":{}}})",
          json_string(weft::version()), json_string(o.url), o.connections, o.threads, o.in_flight, o.size,
          o.text ? "true" : "false", o.deflate ? "true" : "false", r.deflate_connections,
          shortfall_json(o.rate, shortfall), json_number(o.warmup_s), json_number(r.duration_s), r.sent, r.echoed,
          r.compressed, json_number(mps), r.bytes_read, latency_json(r.latency),
          r.handshake.count() > 0 ? latency_json(r.handshake) : std::string("null"), errors_json(r.errors)));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weft-load: HTTP/1.1, HTTP/2, WebSocket, echo, stream and gRPC load generator built on weft"};
  app.set_version_flag("--version", std::string("weft-load ") + weft::version());
  app.require_subcommand(1);

  HttpOptions http;
  std::string http_json;
  CLI::App* http_cmd = app.add_subcommand("http", "HTTP/1.1 GET load, wrk's model (closed loop) or a constant rate");
  http_cmd->add_option("url", http.url, "http[s]://HOST[:PORT][/PATH]")->required();
  http_cmd->add_option("-c,--connections", http.connections, "connections (default 10)")->check(CLI::Range(1, 1000000));
  http_cmd->add_option("-t,--threads", http.threads, "threads, one event loop each (default 1)")->check(CLI::Range(1, 1024));
  CLI::Option* http_duration = http_cmd->add_option("-d,--duration", http.duration_s, "seconds to run (default 10)")
                                   ->check(CLI::Range(0.001, 86400.0));
  CLI::Option* http_warmup =
      http_cmd
          ->add_option("--warmup", http.warmup_s,
                       "seconds of load before the counted duration, its counts then dropped (default 0)")
          ->check(CLI::Range(0.0, 86400.0));
  http_cmd
      ->add_option("-n,--requests", http.requests,
                   "requests in all; the run ends when each is answered or failed (with -d: or at that time)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 62));
  http_cmd->add_option("--pipeline", http.pipeline, "requests in flight per connection, written as one batch (default 1)")
      ->check(CLI::Range(1, 1024));
  http_cmd->add_option("--rate", http.rate, "constant total request rate; latency from intended send times")
      ->check(CLI::Range(0.001, 1e9));
  http_cmd->add_option("-H,--header", http.headers, "extra header \"Name: value\" (repeatable)");
  http_cmd->add_option("--timeout", http.timeout_s, "seconds without a response before outstanding requests time out (default 2)")
      ->check(CLI::Range(0.001, 3600.0));
  http_cmd->add_flag("-k,--insecure", http.insecure, "https: accept any server certificate (no verification)");
  http_cmd->add_option("--cacert", http.ca_file, "https: trust the CA certificates in this PEM file (default: the system's)");
  http_cmd->add_flag("--reconnect", http.reconnect,
                     "a new connection for every batch of --pipeline requests (https: a handshake each)");
  http_cmd->add_option("--json", http_json, "write the result as JSON to FILE");
  bool http_distribution = false;
  http_cmd->add_flag("--latency", http_distribution, "print the latency distribution (50% .. 99.999%, max)");

  H2Options h2;
  std::string h2_json;
  CLI::App* h2_cmd = app.add_subcommand(
      "h2", "HTTP/2 GET load, h2load's model: h2c with prior knowledge for http://, h2 by ALPN for https://");
  h2_cmd->add_option("url", h2.url, "http[s]://HOST[:PORT][/PATH]")->required();
  h2_cmd->add_option("-c,--connections", h2.connections, "connections (default 10)")->check(CLI::Range(1, 1000000));
  h2_cmd->add_option("-m,--streams", h2.streams, "concurrent streams per connection (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  h2_cmd->add_option("-t,--threads", h2.threads, "threads, one event loop each (default 1)")->check(CLI::Range(1, 1024));
  CLI::Option* h2_duration = h2_cmd->add_option("-d,--duration", h2.duration_s, "seconds to run (default 10)")
                                 ->check(CLI::Range(0.001, 86400.0));
  CLI::Option* h2_warmup =
      h2_cmd
          ->add_option("--warmup", h2.warmup_s,
                       "seconds of load before the counted duration, its counts then dropped (default 0)")
          ->check(CLI::Range(0.0, 86400.0));
  h2_cmd->add_option("-n,--requests", h2.requests,
                     "requests in all; the run ends when each is answered or failed (with -d: or at that time)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 62));
  h2_cmd->add_option("--rate", h2.rate, "constant total request rate; latency from intended send times")
      ->check(CLI::Range(0.001, 1e9));
  h2_cmd->add_option("-H,--header", h2.headers, "extra header \"Name: value\" (repeatable)");
  h2_cmd->add_option("--timeout", h2.timeout_s,
                     "seconds for connect, handshake and SETTINGS, and without a response while streams are open (default 2)")
      ->check(CLI::Range(0.001, 3600.0));
  h2_cmd->add_flag("-k,--insecure", h2.insecure, "https: accept any server certificate (no verification)");
  h2_cmd->add_option("--cacert", h2.ca_file, "https: trust the CA certificates in this PEM file (default: the system's)");
  h2_cmd->add_option("--json", h2_json, "write the result as JSON to FILE");
  bool h2_distribution = false;
  h2_cmd->add_flag("--latency", h2_distribution, "print the latency distribution (50% .. 99.999%, max)");

  EchoOptions echo;
  std::string echo_json;
  CLI::App* echo_cmd = app.add_subcommand("echo", "blocking client threads doing round trips to echo servers");
  echo_cmd->add_option("target", echo.target, "HOST:PORT[+N]: thread i uses port PORT + (i mod N)")->required();
  echo_cmd->add_option("-t,--threads", echo.threads, "client threads (default 1)")->check(CLI::Range(1, 100000));
  echo_cmd->add_option("--rounds", echo.rounds, "round trips per thread (default 1)")->check(CLI::Range(1, 1000000000));
  echo_cmd->add_option("--size", echo.size, "bytes per round trip (default 1)")->check(CLI::Range(1, 64 << 20));
  echo_cmd->add_option("--max-seconds", echo.max_seconds, "stop at this deadline (default 120)")->check(CLI::Range(0.001, 86400.0));
  echo_cmd->add_option("--json", echo_json, "write the result as JSON to FILE");

  StreamOptions stream;
  std::string stream_json;
  CLI::App* stream_cmd = app.add_subcommand("stream", "4-byte length-prefixed messages, both directions");
  stream_cmd->add_option("target", stream.target, "HOST:PORT")->required();
  stream_cmd->add_option("-c,--connections", stream.connections, "connections (default 1)")->check(CLI::Range(1, 100000));
  stream_cmd->add_option("--size", stream.size, "payload bytes per message (default 64)")->check(CLI::Range(0, 16 << 20));
  stream_cmd->add_option("-d,--duration", stream.duration_s, "seconds to run (default 10)")->check(CLI::Range(0.001, 86400.0));
  stream_cmd
      ->add_option("--warmup", stream.warmup_s,
                   "seconds of load before the counted duration, its counts then dropped (default 0)")
      ->check(CLI::Range(0.0, 86400.0));
  stream_cmd->add_option("-t,--threads", stream.threads, "event loops (default 1)")->check(CLI::Range(1, 1024));
  stream_cmd->add_option("--json", stream_json, "write the result as JSON to FILE");

  GrpcOptions grpc;
  std::string grpc_json;
  CLI::App* grpc_cmd = app.add_subcommand(
      "grpc",
      "gRPC calls of bench.proto's BenchmarkService: stream (StreamingFromServer), unary, pingpong (StreamingCall); "
      "or method: any method of a .proto (--proto, --call, --data)");
  grpc_cmd->footer(
      "method: weft-load grpc method HOST:PORT --proto FILE.proto [-I DIR]... --call pkg.Service/Method\n"
      "          [--data JSON | --data-file FILE] [--stream-messages K] [-c -s -t -d -n --rate --warmup --latency "
      "--json]\n"
      "  unary: calls back to back (messages = calls); server streaming: calls back to back, each read to\n"
      "  its end (-n and --rate count calls; messages = responses); client streaming: K requests, then one\n"
      "  response, per call (messages = calls); bidi streaming: as pingpong (-n, --rate: round trips).");
  grpc_cmd->add_option("call", grpc.call, "stream | unary | pingpong | method")
      ->required()
      ->check(CLI::IsMember({"stream", "unary", "pingpong", "method"}));
  grpc_cmd->add_option("target", grpc.target, "HOST:PORT; with --balance, a gRPC target (ipv4:H:P,H:P, dns:///H:P)")
      ->required();
  grpc_cmd
      ->add_option(
          "--balance", grpc.balance,
          "pick_first | round_robin: each connection is a grpc::ClientChannel balancing over the target's addresses")
      ->check(CLI::IsMember({"pick_first", "round_robin"}));
  grpc_cmd->add_option("-c,--connections", grpc.connections, "connections (default 1)")->check(CLI::Range(1, 100000));
  grpc_cmd->add_option("-s,--streams", grpc.streams, "concurrent calls per connection (default 10)")
      ->check(CLI::Range(1, 100000));
  grpc_cmd->add_option("-t,--threads", grpc.threads, "event loops; connections are spread over them (default 1)")
      ->check(CLI::Range(1, 1024));
  grpc_cmd->add_option("--size", grpc.size, "response_size, and the request payload for unary and pingpong (default 0)")
      ->check(CLI::Range(0, (4 << 20) - 16));
  CLI::Option* grpc_duration = grpc_cmd->add_option("-d,--duration", grpc.duration_s, "seconds to run (default 10)")
                                   ->check(CLI::Range(0.001, 86400.0));
  CLI::Option* grpc_warmup =
      grpc_cmd
          ->add_option("--warmup", grpc.warmup_s,
                       "seconds of load before the counted duration, its counts then dropped (default 0)")
          ->check(CLI::Range(0.0, 86400.0));
  grpc_cmd
      ->add_option("-n,--messages", grpc.messages,
                   "messages in all (unary: calls; pingpong: round trips; stream: responses; method: calls, bidi: "
                   "round trips); the run ends when each has ended (with -d: or at that time)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 62));
  grpc_cmd
      ->add_option("--rate", grpc.rate,
                   "unary, pingpong, method: constant total message rate (method: calls per second, bidi: round "
                   "trips); latency from intended send times")
      ->check(CLI::Range(0.001, 1e9));
  grpc_cmd->add_option("--proto", grpc.proto_file, "method: the .proto that describes the service (read at run time)");
  grpc_cmd->add_option("-I,--import-path", grpc.import_dirs,
                       "method: a directory the .proto's imports are looked up in, as protoc's -I (repeatable; the "
                       ".proto's own directory is one)");
  grpc_cmd->add_option("--call", grpc.method, "method: the method, pkg.Service/Method or pkg.Service.Method");
  std::string grpc_data_file;
  CLI::Option* grpc_data =
      grpc_cmd->add_option("--data", grpc.data, "method: the request message as JSON (protobuf's mapping; default {})");
  grpc_cmd->add_option("--data-file", grpc_data_file, "method: read the request's JSON from FILE")->excludes(grpc_data);
  grpc_cmd
      ->add_option("--stream-messages", grpc.stream_messages,
                   "method, client streaming: the request is written K times per call (default 1)")
      ->check(CLI::Range(1, 1 << 30));
  grpc_cmd->add_option("--json", grpc_json, "write the result as JSON to FILE");
  bool grpc_distribution = false;
  grpc_cmd->add_flag("--latency", grpc_distribution,
                     "print the latency distribution (50% .. 99.999%, max; unary, pingpong, method)");

  WsOptions ws;
  std::string ws_json;
  CLI::App* ws_cmd = app.add_subcommand("ws", "WebSocket echo load: masked messages, each echo checked byte-exact");
  ws_cmd->add_option("url", ws.url, "ws[s]://HOST[:PORT][/PATH]")->required();
  ws_cmd->add_option("-c,--connections", ws.connections, "connections (default 10)")->check(CLI::Range(1, 1000000));
  ws_cmd->add_option("-t,--threads", ws.threads, "threads, one event loop each (default 1)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* ws_duration = ws_cmd->add_option("-d,--duration", ws.duration_s, "seconds to run (default 10)")
                                 ->check(CLI::Range(0.001, 86400.0));
  CLI::Option* ws_warmup =
      ws_cmd
          ->add_option("--warmup", ws.warmup_s,
                       "seconds of load before the counted duration, its counts then dropped (default 0)")
          ->check(CLI::Range(0.0, 86400.0));
  ws_cmd
      ->add_option("-m,--in-flight", ws.in_flight,
                   "messages in flight per connection, written as one batch (default 1)")
      ->check(CLI::Range(1, 1 << 16));
  ws_cmd->add_option("-s,--size", ws.size, "payload bytes per message (default 64)")->check(CLI::Range(0, 64 << 20));
  ws_cmd->add_flag("--text,!--binary", ws.text, "text frames (--text) or binary frames (--binary, the default)");
  ws_cmd->add_flag("--deflate", ws.deflate, "offer permessage-deflate, and compress the messages when it is agreed");
  ws_cmd
      ->add_option("-n,--messages", ws.messages,
                   "messages in all; the run ends when each is echoed or failed (with -d: or at that time)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 62));
  ws_cmd->add_option("--rate", ws.rate, "constant total message rate; latency from intended send times")
      ->check(CLI::Range(0.001, 1e9));
  ws_cmd
      ->add_option("--timeout", ws.timeout_s,
                   "seconds for connect and handshake, and without an echo while messages are out (default 2)")
      ->check(CLI::Range(0.001, 3600.0));
  ws_cmd->add_flag("-k,--insecure", ws.insecure, "wss: accept any server certificate (no verification)");
  ws_cmd->add_option("--cacert", ws.ca_file, "wss: trust the CA certificates in this PEM file (default: the system's)");
  ws_cmd->add_option("--json", ws_json, "write the result as JSON to FILE");
  bool ws_distribution = false;
  ws_cmd->add_flag("--latency", ws_distribution, "print the latency distribution (50% .. 99.999%, max)");

  CLI11_PARSE(app, argc, argv);

  const bool tty = progress_enabled();
  try {
    if (*http_cmd) {
      if (http.requests > 0 && http_duration->count() == 0) http.duration_s = 0;  // no time limit: the count ends it
      if (http.requests > 0 && http_warmup->count() > 0) {
        std::fprintf(stderr, "weft-load: --warmup counts time, -n requests: use one of them\n");
        return 2;
      }
      http_report(http, run_http(http, request_progress(tty)), http_json, http_distribution);
    } else if (*h2_cmd) {
      if (h2.requests > 0 && h2_duration->count() == 0) h2.duration_s = 0;  // no time limit: the count ends it
      if (h2.requests > 0 && h2_warmup->count() > 0) {
        std::fprintf(stderr, "weft-load: --warmup counts time, -n requests: use one of them\n");
        return 2;
      }
      h2_report(h2, run_h2(h2, request_progress(tty)), h2_json, h2_distribution);
    } else if (*ws_cmd) {
      if (ws.messages > 0 && ws_duration->count() == 0) ws.duration_s = 0;  // no time limit: the count ends it
      if (ws.messages > 0 && ws_warmup->count() > 0) {
        std::fprintf(stderr, "weft-load: --warmup counts time, -n messages: use one of them\n");
        return 2;
      }
      WsResult r = run_ws(ws, request_progress(tty));
      ws_report(ws, r, ws_json, ws_distribution);
      if (r.echoed == 0) {
        std::fprintf(stderr, "weft-load: no message was echoed\n");
        return 1;
      }
    } else if (*echo_cmd) {
      ProgressFn progress;
      if (tty) {
        progress = [last = std::uint64_t{0}](double t, std::uint64_t trips, std::uint64_t) mutable {
          print_progress(fmt::format("  {:5.1f}s  {:>10} round trips/s", t, trips - last));
          last = trips;
        };
      }
      EchoResult r = run_echo(echo, progress);
      echo_report(echo, r, echo_json);
      if (!r.complete) {
        std::fprintf(stderr, "weft-load: stopped by --max-seconds %.1f before every round trip was done\n",
                     echo.max_seconds);
        return 1;
      }
    } else if (*stream_cmd) {
      ProgressFn progress;
      if (tty) {
        progress = [ls = std::uint64_t{0}, lr = std::uint64_t{0}](double t, std::uint64_t sent,
                                                                   std::uint64_t received) mutable {
          print_progress(fmt::format("  {:5.1f}s  {:>10} msg/s sent  {:>10} msg/s received", t, sent - ls, received - lr));
          ls = sent;
          lr = received;
        };
      }
      stream_report(stream, run_stream(stream, progress), stream_json);
    } else if (*grpc_cmd) {
      ProgressFn progress;
      if (tty) {
        progress = [last = std::uint64_t{0}](double t, std::uint64_t messages, std::uint64_t) mutable {
          print_progress(fmt::format("  {:5.1f}s  {:>10} msg/s", t, messages - last));
          last = messages;
        };
      }
      if (grpc.messages > 0 && grpc_duration->count() == 0) grpc.duration_s = 0;  // no time limit: the count ends it
      if (grpc.messages > 0 && grpc_warmup->count() > 0) {
        std::fprintf(stderr, "weft-load: --warmup counts time, -n messages: use one of them\n");
        return 2;
      }
      if (grpc.call == "method" && (grpc.proto_file.empty() || grpc.method.empty())) {
        std::fprintf(stderr, "weft-load: grpc method needs --proto FILE.proto and --call pkg.Service/Method\n");
        return 2;
      }
      if (!grpc_data_file.empty()) {
        std::ifstream in(grpc_data_file, std::ios::binary);
        std::ostringstream text;
        if (!in) throw LoadError("cannot read --data-file " + grpc_data_file);
        text << in.rdbuf();
        grpc.data = text.str();
      }
      GrpcResult r = run_grpc(grpc, progress);
      grpc_report(grpc, r, grpc_json, grpc_distribution);
      // A server streaming method may answer a call with no message: there, a call must have ended OK.
      if (r.kind == "server streaming" ? r.calls == 0 : r.messages == 0) {
        std::fprintf(stderr, "weft-load: no gRPC %s was answered\n", r.kind == "server streaming" ? "call" : "message");
        return 1;
      }
    }
  } catch (const LoadError& e) {
    std::fprintf(stderr, "weft-load: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-load: %s\n", e.what());
    return 1;
  }
  return 0;
}
