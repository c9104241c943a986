// grpc::Client: the connection, its calls' HEADERS and deadlines; format_timeout, status_from_http.

#include "weft/grpc/client.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "client_call_state.h"
#include "weft/core/awaitables.h"
#include "weft/core/spawn.h"
#include "weft/grpc/metadata.h"

namespace weft::grpc {

std::string format_timeout(Duration timeout) {
  const std::int64_t ns = std::max<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count(), 0);
  struct Unit {
    char name;
    std::int64_t ns;
  };
  static constexpr std::array<Unit, 6> kUnits = {{{'n', 1},
                                                   {'u', 1'000},
                                                   {'m', 1'000'000},
                                                   {'S', 1'000'000'000},
                                                   {'M', 60'000'000'000},
                                                   {'H', 3'600'000'000'000}}};
  for (const Unit& unit : kUnits) {
    const std::int64_t count = (ns + unit.ns - 1) / unit.ns;  // rounded up: never earlier than asked
    if (count <= 99'999'999) return std::to_string(count) + unit.name;
  }
  return "99999999H";
}

Status status_from_http(int http_status) {
  const std::string message = "HTTP status " + std::to_string(http_status);
  switch (http_status) {
    case 400: return Status(StatusCode::internal, message);
    case 401: return Status(StatusCode::unauthenticated, message);
    case 403: return Status(StatusCode::permission_denied, message);
    case 404: return Status(StatusCode::unimplemented, message);
    case 429:
    case 502:
    case 503:
    case 504: return Status(StatusCode::unavailable, message);
    default: return Status(StatusCode::unknown, message);
  }
}

namespace {

Future<std::shared_ptr<Client>> client_on(Future<std::shared_ptr<client::Http2Connection>> connected,
                                          ClientOptions options) {
  Promise<std::shared_ptr<Client>> ready;
  connected.add_listener(
      [ready, options = std::move(options)](const Future<std::shared_ptr<client::Http2Connection>>& f) mutable {
        if (auto error = f.error()) {
          ready.set_error(error);
          return;
        }
        ready.set_value(std::make_shared<Client>(f.get(), std::move(options)));
      });
  return ready.future();
}

}  // namespace

Future<std::shared_ptr<Client>> Client::connect(EventLoopGroup& group, const SocketAddress& address, Options options) {
  auto connected = client::Http2Connection::connect(group, address, options.http2);
  return client_on(std::move(connected), std::move(options));
}

Future<std::shared_ptr<Client>> Client::connect(EventLoop& loop, const SocketAddress& address, Options options) {
  auto connected = client::Http2Connection::connect(loop, address, options.http2);
  return client_on(std::move(connected), std::move(options));
}

void Client::watch_close(std::weak_ptr<detail::ConnectionCloseWatcher> watcher) {
  if (connection_closed_) {
    loop().execute([watcher = std::move(watcher)] {
      if (auto w = watcher.lock()) w->connection_closed();
    });
    return;
  }
  // Calls end all the time on a long-lived connection: the list is pruned when it doubled.
  if (close_watchers_.size() >= 2 * close_watchers_pruned_at_ + 16) {
    std::erase_if(close_watchers_, [](const auto& w) { return w.expired(); });
    close_watchers_pruned_at_ = close_watchers_.size();
  }
  close_watchers_.push_back(std::move(watcher));
  if (close_watched_) return;
  close_watched_ = true;
  std::weak_ptr<Client> weak = weak_from_this();
  http2_->channel().close_future().add_listener([weak](const Future<void>&) {
    std::shared_ptr<Client> self = weak.lock();
    if (!self) return;
    // On the channel's loop, the calls' loop.
    self->connection_closed_ = true;
    std::vector<std::weak_ptr<detail::ConnectionCloseWatcher>> watchers = std::move(self->close_watchers_);
    self->close_watchers_.clear();
    for (const auto& w : watchers) {
      if (auto watcher = w.lock()) watcher->connection_closed();
    }
  });
}

namespace {

// A call's state with its bounds from `options`, or the client's `defaults`. Throws InvalidMetadata
// for metadata that cannot be sent (before anything is).
std::shared_ptr<ClientCall::State> new_call_state(EventLoop& loop, ByteBufAllocator& allocator,
                                                  const ClientOptions& defaults, const CallOptions& options) {
  for (const auto& [name, value] : options.metadata) (void)encode_metadata_value(name, value);
  const std::size_t max_receive =
      options.max_receive_message_bytes > 0 ? options.max_receive_message_bytes : defaults.max_receive_message_bytes;
  return std::make_shared<ClientCall::State>(loop, allocator, max_receive,
                                             options.compression.value_or(defaults.compression));
}

// Starts `state`'s deadline `timeout` from now.
void start_deadline(const std::shared_ptr<ClientCall::State>& state, Duration timeout) {
  state->deadline_at = Clock::now() + timeout;
  std::weak_ptr<ClientCall::State> weak = state;
  state->deadline = state->loop->schedule(timeout, [weak] {
    if (auto s = weak.lock()) {
      s->deadline.reset();
      s->end_locally(Status(StatusCode::deadline_exceeded, "Deadline Exceeded"));
    }
  });
}

}  // namespace

void Client::open_stream(ClientCall::State& state, std::string_view method, const CallOptions& options,
                         std::optional<Duration> timeout) {
  std::array<http::Header, 8> fixed;
  std::size_t count = 0;
  fixed[count++] = {"content-type", "application/grpc"};
  fixed[count++] = {"te", "trailers"};
  fixed[count++] = {"user-agent", options_.user_agent};
  fixed[count++] = {"grpc-accept-encoding", kAcceptEncoding};
  if (state.compression.algorithm != Compression::identity) {
    fixed[count++] = {"grpc-encoding", compression_name(state.compression.algorithm)};
  }
  if (timeout) {
    scratch_ = format_timeout(*timeout);
    fixed[count++] = {"grpc-timeout", scratch_};
  }
  state.loop_allocator = &http2_->channel().allocator();
  if (options.metadata.empty()) {
    state.stream = http2_->open("POST", method, std::span<const http::Header>(fixed.data(), count));
    return;
  }
  std::vector<std::string> encoded;
  encoded.reserve(options.metadata.size());
  for (const auto& [name, value] : options.metadata) encoded.push_back(encode_metadata_value(name, value));
  std::vector<http::Header> fields(fixed.begin(), fixed.begin() + static_cast<std::ptrdiff_t>(count));
  for (std::size_t i = 0; i < options.metadata.size(); ++i) fields.push_back({options.metadata[i].first, encoded[i]});
  state.stream = http2_->open("POST", method, fields);
}

ClientCall Client::call(std::string_view method, const CallOptions& options) {
  std::shared_ptr<ClientCall::State> state = new_call_state(loop(), http2_->channel().allocator(), options_, options);
  open_stream(*state, method, options, options.timeout);
  if (options.timeout) start_deadline(state, *options.timeout);
  return ClientCall(std::move(state));
}

void Client::open_pending(ClientCall::State& state) {
  if (!state.waiting_for_stream()) return;
  std::unique_ptr<PendingOpen>& pending = state.pending;
  std::optional<Duration> remaining;
  if (state.deadline_at) {
    // The server is told the time left (at least 1 ns: the local deadline ends the call anyway).
    remaining = std::max<Duration>(*state.deadline_at - Clock::now(), Duration(1));
  }
  open_stream(state, pending->method, pending->options, remaining);
  if (state.writes_done && !pending->writer_parked) {  // else the parked write() ends it after its message
    pending->ended = true;
    state.stream.end();
  }
  state.wake_waiters();
}

ClientCall pending_call(EventLoop& loop, const ClientOptions& defaults, std::string_view method, CallOptions options) {
  std::shared_ptr<ClientCall::State> state = new_call_state(loop, default_allocator(), defaults, options);
  const std::optional<Duration> timeout = options.timeout;
  state->pending = std::make_unique<PendingOpen>(loop, std::string(method), std::move(options));
  if (timeout) start_deadline(state, *timeout);
  return ClientCall(std::move(state));
}

ClientCall ended_call(EventLoop& loop, Status status) {
  auto state =
      std::make_shared<ClientCall::State>(loop, default_allocator(), kDefaultMaxMessageBytes, CompressionOptions());
  state->status = std::move(status);
  return ClientCall(std::move(state));
}

Task<UnaryResult> Client::unary(std::string method, ByteBuf request, CallOptions options) {
  ClientCall call = this->call(method, options);
  co_await call.write(std::move(request));
  co_await call.writes_done();
  std::optional<ByteBuf> response = co_await call.read();
  Status status = co_await call.finish();
  if (status.ok() && !response) status = Status(StatusCode::internal, "the server sent no response message");
  ByteBuf message = status.ok() ? std::move(*response) : ByteBuf();
  co_return UnaryResult(std::move(status), std::move(message));
}

void Client::unary(std::string method, ByteBuf request, CallOptions options, UniqueFunction<void(UnaryResult)> done) {
  std::shared_ptr<Client> self = shared_from_this();
  loop().execute([self, method = std::move(method), request = std::move(request), options = std::move(options),
                  done = std::move(done)]() mutable {
    Task<UnaryResult> call = self->unary(std::move(method), std::move(request), std::move(options));
    EventLoop& loop = self->loop();
    spawn_detached(loop, deliver_unary(std::move(self), std::move(call), std::move(done)));
  });
}

Task<> deliver_unary([[maybe_unused]] std::shared_ptr<const void> keep, Task<UnaryResult> call,
                     UniqueFunction<void(UnaryResult)> done) {  // `keep`: held by the frame
  std::optional<UnaryResult> result;
  try {
    result.emplace(co_await call);
  } catch (const InvalidMetadata& e) {
    result.emplace(Status(StatusCode::invalid_argument, e.what()), ByteBuf());
  } catch (const std::exception& e) {
    result.emplace(Status(StatusCode::internal, e.what()), ByteBuf());
  }
  done(std::move(*result));
}

}  // namespace weft::grpc
