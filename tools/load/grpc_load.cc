#include "grpc_load.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto_request.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/socket_address.h"
#include "weft/core/awaitables.h"
#include "weft/core/spawn.h"
#include "weft/grpc/channel.h"
#include "weft/grpc/client.h"

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

// One event loop's share of the run: the core's Worker (calls are its requests, messages its
// responses) without sessions: the calls run as coroutines on weft's gRPC client until stopping().
class GrpcWorker final : public Worker {
 public:
  // budget: -n's messages still to send, shared by every loop (null: a timed run).
  GrpcWorker(Run& run, EventLoop& loop, std::atomic<std::uint64_t>* budget) : Worker(run, loop, 0), budget_(budget) {}

  // This loop's share of --rate (0: the closed loop). Before its calls start.
  void set_rate(double rate) noexcept { schedule_.set_rate(rate); }

  bool open_loop() const noexcept { return schedule_.active(); }

  // Takes one message to send: false once -n's count is spent or the run stops.
  bool take() noexcept {
    if (stopping()) return false;
    if (budget_ == nullptr) return true;
    std::uint64_t left = budget_->load(std::memory_order_relaxed);
    while (left > 0) {
      if (budget_->compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  // Open loop: the intended send time of this loop's next message (the schedule starts with the
  // first one asked for). Streams that are free claim them in turn.
  Nanos next_intended(Nanos now) noexcept {
    if (schedule_.next_index() == 0) schedule_.start(now);
    const Nanos intended = schedule_.next_time();
    schedule_.advance();
    return intended;
  }
  void count_sent() noexcept { ++sent; }

  // A stream's coroutine begins and ends: in a counted run, the loop is done when its last one
  // has (the count spent, or its calls failed).
  void enter() noexcept { ++active_; }
  void leave() {
    if (--active_ == 0 && budget_ != nullptr) finish();
  }

  void restart_counting() override {
    Worker::restart_counting();
    sent = 0;
  }

  std::uint64_t sent = 0;  // messages sent in the counted part of the run

  void count_message() {
    ++stats.responses;
    if ((stats.responses & 1023) == 0) publish();
  }
  // A call that ended during the run.
  void count_end(const grpc::Status& status) {
    if (stopping()) return;
    if (status.code == grpc::StatusCode::unavailable) {
      ++stats.errors.read;
    } else {
      ++stats.errors.status;
    }
  }

 private:
  std::atomic<std::uint64_t>* budget_;
  OpenLoopSchedule schedule_;
  std::size_t active_ = 0;
};

// Open loop: waits for the next message's intended send time and returns it (latency counts from
// it); closed loop: now. The caller has taken the message.
Task<Nanos> send_time(GrpcWorker& w) {
  const Nanos now = now_ns();
  if (!w.open_loop()) co_return now;
  const Nanos intended = w.next_intended(now);
  if (intended > now) co_await sleep(std::chrono::nanoseconds(intended - now));
  co_return intended;
}

// The calls run over a grpc::Client (one connection) or a grpc::ClientChannel (balanced): `Caller`.
template <class Caller>
Task<> server_stream(Caller& client, GrpcWorker& w, ByteBuf request) {
  w.enter();
  grpc::ClientCall call = client.call(kStreamingFromServer);
  co_await call.write(std::move(request));
  co_await call.writes_done();
  ++w.stats.requests;
  w.count_sent();
  bool ended = false;  // by the server or the connection, not by this run
  while (w.take()) {
    if (!co_await call.read()) {
      ended = true;
      break;
    }
    w.count_message();
  }
  if (!ended) call.cancel();  // the run stopped, or -n's count is read
  const grpc::Status status = co_await call.finish();
  if (ended) w.count_end(status);
  w.leave();
}

template <class Caller>
Task<> unary_calls(Caller& client, GrpcWorker& w, std::string path, ByteBuf request) {
  w.enter();
  while (w.take()) {
    const Nanos start = co_await send_time(w);
    if (w.stopping()) break;
    w.count_sent();
    grpc::UnaryResult r = co_await client.unary(path, request.slice());
    if (w.stopping()) break;
    if (!r.status.ok()) {
      w.count_end(r.status);
      break;
    }
    w.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ns() - start)));
    ++w.stats.requests;
    w.count_message();
  }
  w.leave();
}

template <class Caller>
Task<> ping_pong(Caller& client, GrpcWorker& w, std::string path, ByteBuf request) {
  w.enter();
  grpc::ClientCall call = client.call(path);
  ++w.stats.requests;
  bool ended = false;  // by the server or the connection, not by this run
  while (w.take()) {
    const Nanos start = co_await send_time(w);
    if (w.stopping()) break;
    w.count_sent();
    if (!co_await call.write(request.slice()) || !co_await call.read()) {
      ended = true;
      break;
    }
    w.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ns() - start)));
    w.count_message();
  }
  co_await call.writes_done();
  if (w.stopping()) call.cancel();
  const grpc::Status status = co_await call.finish();
  if (ended || !status.ok()) w.count_end(status);  // -n's end closes the call with OK
  w.leave();
}

// method, server streaming: calls back to back on one stream slot, each the request, the
// half-close, then every response until the server ends the call. -n and --rate count calls; a
// call's latency runs from its (intended) start to its end.
template <class Caller>
Task<> server_stream_calls(Caller& client, GrpcWorker& w, std::string path, ByteBuf request) {
  w.enter();
  while (w.take()) {
    const Nanos start = co_await send_time(w);
    if (w.stopping()) break;
    w.count_sent();
    grpc::ClientCall call = client.call(path);
    if (co_await call.write(request.slice())) co_await call.writes_done();
    while (!w.stopping()) {
      std::optional<ByteBuf> response = co_await call.read();
      if (!response) break;
      w.count_message();
    }
    if (w.stopping()) {
      call.cancel();
      const grpc::Status cancelled = co_await call.finish();
      static_cast<void>(cancelled);
      break;
    }
    const grpc::Status status = co_await call.finish();
    if (!status.ok()) {
      w.count_end(status);
      break;
    }
    w.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ns() - start)));
    ++w.stats.requests;
  }
  w.leave();
}

// method, client streaming: calls back to back on one stream slot, each `count` copies of the
// request, the half-close, then the one response. messages = calls; latency per call.
template <class Caller>
Task<> client_stream_calls(Caller& client, GrpcWorker& w, std::string path, ByteBuf request, int count) {
  w.enter();
  while (w.take()) {
    const Nanos start = co_await send_time(w);
    if (w.stopping()) break;
    w.count_sent();
    grpc::ClientCall call = client.call(path);
    bool open = true;
    for (int i = 0; i < count && open; ++i) open = co_await call.write(request.slice());
    if (open) co_await call.writes_done();
    std::optional<ByteBuf> response = co_await call.read();
    if (w.stopping()) {
      call.cancel();
      const grpc::Status cancelled = co_await call.finish();
      static_cast<void>(cancelled);
      break;
    }
    const grpc::Status status = co_await call.finish();
    if (!status.ok() || !response) {
      w.count_end(status.ok() ? grpc::Status(grpc::StatusCode::internal, "no response") : status);
      break;
    }
    w.stats.latency.record(static_cast<std::uint64_t>(std::max<Nanos>(0, now_ns() - start)));
    ++w.stats.requests;
    w.count_message();
  }
  w.leave();
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
  if (options.call != "stream" && options.call != "unary" && options.call != "pingpong" && options.call != "method") {
    throw LoadError("the call must be stream, unary, pingpong or method");
  }
  if (options.connections < 1 || options.threads < 1 || options.streams < 1 || options.size < 0 ||
      options.duration_s < 0 || options.rate < 0 || (options.duration_s == 0 && options.messages == 0)) {
    throw LoadError("connections, streams and threads must be positive, and a duration or a message count given");
  }
  if (options.rate > 0 && options.call == "stream") {
    throw LoadError("--rate paces unary and pingpong calls; a stream's server sends at its own pace");
  }
  if (options.size > (4 << 20) - 16) throw LoadError("size must be below 4 MiB (the default message bound)");
  if (!options.balance.empty() && options.balance != "pick_first" && options.balance != "round_robin") {
    throw LoadError("the balance must be pick_first or round_robin");
  }
  if (options.stream_messages < 1) throw LoadError("--stream-messages must be positive");
  // The call each stream slot runs: the bench's, or the .proto method's by its shape (loaded and its
  // request serialized once, before any connection).
  enum class Shape { server_stream, unary, ping_pong, server_stream_calls, client_stream_calls };
  Shape shape = Shape::server_stream;
  std::string path(kStreamingFromServer);
  std::string request;
  GrpcResult result;
  if (options.call == "method") {
    ProtoMethod method = load_proto_method(options.proto_file, options.import_dirs, options.method, options.data);
    path = method.path;
    request = std::move(method.request);
    result.path = method.path;
    result.kind = method.kind();
    result.request_bytes = request.size();
    if (method.client_streaming && method.server_streaming) {
      shape = Shape::ping_pong;
    } else if (method.client_streaming) {
      shape = Shape::client_stream_calls;
    } else if (method.server_streaming) {
      shape = Shape::server_stream_calls;
    } else {
      shape = Shape::unary;
    }
  } else {
    request = encode_simple_request(options.size, options.call == "stream" ? 0 : options.size);
    if (options.call == "unary") {
      shape = Shape::unary;
      path = kUnaryCall;
    } else if (options.call == "pingpong") {
      shape = Shape::ping_pong;
      path = kStreamingCall;
    }
  }

  LoopRun run(options.threads);
  std::atomic<std::uint64_t> budget{options.messages};
  run.add_workers([&](EventLoop& loop) {
    return std::make_unique<GrpcWorker>(run, loop, options.messages > 0 ? &budget : nullptr);
  });
  // --rate is shared by the loops as the connections are, set before any call starts.
  auto share_rate = [&](const std::vector<EventLoop*>& loops_of_connections) {
    if (options.rate <= 0) return;
    for (EventLoop* loop : loops_of_connections) {
      GrpcWorker& w = run.worker_of<GrpcWorker>(*loop);
      std::size_t mine = 0;
      for (EventLoop* other : loops_of_connections) mine += other == loop ? 1 : 0;
      w.set_rate(options.rate * static_cast<double>(mine) / static_cast<double>(loops_of_connections.size()));
    }
  };

  auto t0 = Clock::now();
  std::vector<Future<void>> running;
  // Starts the calls of one connection (or channel) on its loop.
  auto start_calls = [&](auto& caller) {
    GrpcWorker& w = run.worker_of<GrpcWorker>(caller.loop());
    for (int s = 0; s < options.streams; ++s) {
      ByteBuf bytes = ByteBuf::copy_of(request);
      switch (shape) {
        case Shape::server_stream:
          running.push_back(spawn(caller.loop(), server_stream(caller, w, std::move(bytes))));
          break;
        case Shape::unary:
          running.push_back(spawn(caller.loop(), unary_calls(caller, w, path, std::move(bytes))));
          break;
        case Shape::ping_pong:
          running.push_back(spawn(caller.loop(), ping_pong(caller, w, path, std::move(bytes))));
          break;
        case Shape::server_stream_calls:
          running.push_back(spawn(caller.loop(), server_stream_calls(caller, w, path, std::move(bytes))));
          break;
        case Shape::client_stream_calls:
          running.push_back(
              spawn(caller.loop(), client_stream_calls(caller, w, path, std::move(bytes), options.stream_messages)));
          break;
      }
    }
  };
  std::vector<std::shared_ptr<grpc::ClientChannel>> channels;
  if (!options.balance.empty()) {
    grpc::ChannelOptions channel_options;
    channel_options.load_balancing =
        options.balance == "round_robin" ? grpc::LoadBalancing::round_robin : grpc::LoadBalancing::pick_first;
    try {
      for (int i = 0; i < options.connections; ++i) {
        channels.push_back(grpc::ClientChannel::create(run.loops().next(), options.target, channel_options));
      }
    } catch (const std::exception& e) {
      run.shutdown();
      throw LoadError(fmt::format("cannot make a channel to '{}': {}", options.target, e.what()));
    }
    for (auto& channel : channels) {
      if (!channel->ready().wait_for(std::chrono::seconds(10))) {
        for (auto& c : channels) c->close().wait_for(std::chrono::seconds(2));
        run.shutdown();
        throw LoadError(fmt::format("no connection to {} became ready", options.target));
      }
    }
    std::vector<EventLoop*> loops_of_connections;
    for (auto& channel : channels) loops_of_connections.push_back(&channel->loop());
    share_rate(loops_of_connections);
    for (auto& channel : channels) start_calls(*channel);
  }
  SocketAddress address;
  if (channels.empty()) {
    try {
      address = SocketAddress::parse(options.target);
    } catch (const std::exception& e) {
      run.shutdown();
      throw LoadError(fmt::format("bad target '{}': {}", options.target, e.what()));
    }
  }
  std::vector<std::shared_ptr<grpc::Client>> clients;
  if (channels.empty()) {
    std::vector<Future<std::shared_ptr<grpc::Client>>> connects;
    for (int i = 0; i < options.connections; ++i) connects.push_back(grpc::Client::connect(run.loops(), address));
    clients = await_connects(connects, run.connect_failures(), [](const std::exception_ptr& error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    });
  }
  if (clients.empty() && channels.empty()) {
    run.shutdown();
    throw LoadError(
        fmt::format("cannot connect to {}: {}", address.to_string(), run.connect_failures().first_reason()));
  }

  if (channels.empty()) {
    std::vector<EventLoop*> loops_of_connections;
    for (auto& client : clients) loops_of_connections.push_back(&client->loop());
    share_rate(loops_of_connections);
  }
  for (auto& client : clients) start_calls(*client);

  t0 = run.warm_up(t0, options.warmup_s);
  run.wait(t0, deadline_after(t0, options.duration_s), progress);
  // Stop counting on every loop at once, then let the calls end (cancelled); a call that does not
  // end within seconds (a server that stopped answering) ends with its connection.
  run.stop();
  const double elapsed = seconds_since(t0);
  for (auto& f : running) {
    if (!f.wait_for(std::chrono::seconds(5))) break;
  }
  for (auto& client : clients) client->close().wait_for(std::chrono::seconds(2));
  for (auto& channel : channels) channel->close().wait_for(std::chrono::seconds(2));
  for (auto& f : running) f.wait_for(std::chrono::seconds(2));
  run.shutdown();

  Stats all = run.merge();
  for (std::size_t i = 0; i < run.size(); ++i) result.sent += run.worker<GrpcWorker>(i).sent;
  result.duration_s = elapsed;
  result.messages = all.responses;
  result.calls = all.requests;
  result.latency = std::move(all.latency);
  result.errors = all.errors;
  result.errors.connect += run.connect_failures().count();
  return result;
}

}  // namespace weft::load
