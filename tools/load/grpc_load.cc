#include "grpc_load.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/grpc/client.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/spawn.h"
#include "weft/transport/epoll.h"

namespace weft::load {

namespace {

constexpr std::string_view kUnaryCall = "/grpc.testing.BenchmarkService/UnaryCall";
constexpr std::string_view kStreamingCall = "/grpc.testing.BenchmarkService/StreamingCall";
constexpr std::string_view kStreamingFromServer = "/grpc.testing.BenchmarkService/StreamingFromServer";

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>(value | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

// Per event loop; loop thread only except the progress atomic.
struct Tally {
  std::uint64_t messages = 0;
  std::uint64_t calls = 0;
  Histogram latency;
  Errors errors;
  bool stopping = false;
  std::atomic<std::uint64_t> progress{0};

  void count_message() {
    ++messages;
    if ((messages & 1023) == 0) progress.store(messages, std::memory_order_relaxed);
  }
  // A call that ended during the run.
  void count_end(const grpc::Status& status) {
    if (stopping) return;
    if (status.code == grpc::StatusCode::unavailable) {
      ++errors.read;
    } else {
      ++errors.status;
    }
  }
};

std::uint64_t ns_since(Clock::time_point start) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

Task<> server_stream(grpc::Client& client, Tally& t, ByteBuf request) {
  grpc::ClientCall call = client.call(kStreamingFromServer);
  co_await call.write(std::move(request));
  co_await call.writes_done();
  ++t.calls;
  while (!t.stopping) {
    if (!co_await call.read()) break;
    t.count_message();
  }
  if (t.stopping) call.cancel();
  t.count_end(co_await call.finish());
}

Task<> unary_calls(grpc::Client& client, Tally& t, ByteBuf request) {
  while (!t.stopping) {
    const auto start = Clock::now();
    grpc::UnaryResult r = co_await client.unary(std::string(kUnaryCall), request.slice());
    if (t.stopping) break;
    if (!r.status.ok()) {
      t.count_end(r.status);
      break;
    }
    t.latency.record(ns_since(start));
    ++t.calls;
    t.count_message();
  }
}

Task<> ping_pong(grpc::Client& client, Tally& t, ByteBuf request) {
  grpc::ClientCall call = client.call(kStreamingCall);
  ++t.calls;
  while (!t.stopping) {
    const auto start = Clock::now();
    if (!co_await call.write(request.slice())) break;
    if (!co_await call.read()) break;
    t.latency.record(ns_since(start));
    t.count_message();
  }
  co_await call.writes_done();
  if (t.stopping) call.cancel();
  t.count_end(co_await call.finish());
}

}  // namespace

std::string encode_simple_request(int response_size, int payload) {
  std::string out;
  if (response_size > 0) {
    out += '\x10';  // field 2, varint
    put_varint(out, static_cast<std::uint64_t>(response_size));
  }
  if (payload > 0) {
    std::string body;
    body += '\x12';  // Payload.body: field 2, bytes
    put_varint(body, static_cast<std::uint64_t>(payload));
    body.append(static_cast<std::size_t>(payload), '\0');
    out += '\x1a';  // SimpleRequest.payload: field 3, message
    put_varint(out, body.size());
    out += body;
  }
  return out;
}

GrpcResult run_grpc(const GrpcOptions& options, const ProgressFn& progress) {
  if (options.call != "stream" && options.call != "unary" && options.call != "pingpong") {
    throw LoadError("the call must be stream, unary or pingpong");
  }
  if (options.connections < 1 || options.threads < 1 || options.streams < 1 || options.size < 0 ||
      options.duration_s <= 0) {
    throw LoadError("connections, streams, threads and duration must be positive");
  }
  if (options.size > (4 << 20) - 16) throw LoadError("size must be below 4 MiB (the default message bound)");
  SocketAddress address;
  try {
    address = SocketAddress::parse(options.target);
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("bad target '{}': {}", options.target, e.what()));
  }
  const std::string request =
      encode_simple_request(options.size, options.call == "stream" ? 0 : options.size);

  EventLoopGroup loops(epoll(), static_cast<std::size_t>(options.threads), "weft-load");
  std::vector<std::unique_ptr<Tally>> tallies;
  for (std::size_t i = 0; i < loops.size(); ++i) tallies.push_back(std::make_unique<Tally>());
  auto tally_of = [&](EventLoop& loop) -> Tally& {
    for (std::size_t i = 0; i < loops.size(); ++i) {
      if (&loops.at(i) == &loop) return *tallies[i];
    }
    return *tallies.front();
  };

  const auto t0 = Clock::now();
  std::vector<std::shared_ptr<grpc::Client>> clients;
  std::uint64_t failures = 0;
  std::string first_failure;
  {
    std::vector<Future<std::shared_ptr<grpc::Client>>> connects;
    for (int i = 0; i < options.connections; ++i) connects.push_back(grpc::Client::connect(loops, address));
    for (auto& f : connects) {
      f.wait();
      if (auto error = f.error()) {
        ++failures;
        if (first_failure.empty()) {
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            first_failure = e.what();
          }
        }
      } else {
        clients.push_back(f.get());
      }
    }
  }
  if (clients.empty()) {
    loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();
    throw LoadError(fmt::format("cannot connect to {}: {}", address.to_string(), first_failure));
  }

  std::vector<Future<void>> running;
  for (auto& client : clients) {
    Tally& t = tally_of(client->loop());
    for (int s = 0; s < options.streams; ++s) {
      ByteBuf bytes = ByteBuf::copy_of(request);
      if (options.call == "stream") {
        running.push_back(spawn(client->loop(), server_stream(*client, t, std::move(bytes))));
      } else if (options.call == "unary") {
        running.push_back(spawn(client->loop(), unary_calls(*client, t, std::move(bytes))));
      } else {
        running.push_back(spawn(client->loop(), ping_pong(*client, t, std::move(bytes))));
      }
    }
  }

  const auto end = t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(options.duration_s * 1e9));
  for (auto tick = t0 + std::chrono::seconds(1); Clock::now() < end; tick += std::chrono::seconds(1)) {
    std::this_thread::sleep_until(std::min(tick, end));
    if (progress && Clock::now() < end) {
      std::uint64_t messages = 0;
      for (auto& t : tallies) messages += t->progress.load(std::memory_order_relaxed);
      progress(std::chrono::duration<double>(Clock::now() - t0).count(), messages, 0);
    }
  }
  // Stop counting on every loop at once, then let the calls end (cancelled); a call that does not
  // end within seconds (a server that stopped answering) ends with its connection.
  {
    std::latch stopped(static_cast<std::ptrdiff_t>(loops.size()));
    for (std::size_t i = 0; i < loops.size(); ++i) {
      loops.at(i).execute([&, i] {
        tallies[i]->stopping = true;
        stopped.count_down();
      });
    }
    stopped.wait();
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& f : running) {
    if (!f.wait_for(std::chrono::seconds(5))) break;
  }
  for (auto& client : clients) client->close().wait_for(std::chrono::seconds(2));
  for (auto& f : running) f.wait_for(std::chrono::seconds(2));
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait();

  GrpcResult result;
  result.duration_s = elapsed;
  for (auto& t : tallies) {
    result.messages += t->messages;
    result.calls += t->calls;
    result.latency.merge(t->latency);
    result.errors.add(t->errors);
  }
  result.errors.connect += failures;
  return result;
}

}  // namespace weft::load
