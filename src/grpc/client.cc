// grpc::Client: the connection, its calls' HEADERS and deadlines; format_timeout, status_from_http.

#include "weft/grpc/client.h"

#include <array>
#include <chrono>

#include "client_call_state.h"
#include "weft/grpc/metadata.h"
#include "weft/core/awaitables.h"
#include "weft/core/spawn.h"

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

Future<std::shared_ptr<Client>> Client::connect(EventLoopGroup& group, const SocketAddress& address, Options options) {
  Promise<std::shared_ptr<Client>> ready;
  Future<std::shared_ptr<client::Http2Connection>> connected =
      client::Http2Connection::connect(group, address, options.http2);
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

ClientCall Client::call(std::string_view method, const CallOptions& options) {
  EventLoop& call_loop = loop();
  const std::size_t max_receive =
      options.max_receive_message_bytes > 0 ? options.max_receive_message_bytes : options_.max_receive_message_bytes;
  const CompressionOptions compression = options.compression.value_or(options_.compression);
  // The metadata is checked (InvalidMetadata) before the call exists: nothing is sent for a bad one.
  std::vector<std::string> encoded;
  encoded.reserve(options.metadata.size());
  for (const auto& [name, value] : options.metadata) encoded.push_back(encode_metadata_value(name, value));
  auto state = std::make_shared<ClientCall::State>(call_loop, http2_->channel().allocator(), max_receive, compression);

  std::array<http::Header, 8> fixed;
  std::size_t count = 0;
  fixed[count++] = {"content-type", "application/grpc"};
  fixed[count++] = {"te", "trailers"};
  fixed[count++] = {"user-agent", options_.user_agent};
  fixed[count++] = {"grpc-accept-encoding", kAcceptEncoding};
  if (compression.algorithm != Compression::identity) fixed[count++] = {"grpc-encoding", compression_name(compression.algorithm)};
  if (options.timeout) {
    scratch_ = format_timeout(*options.timeout);
    fixed[count++] = {"grpc-timeout", scratch_};
  }
  if (options.metadata.empty()) {
    state->stream = http2_->open("POST", method, std::span<const http::Header>(fixed.data(), count));
  } else {
    std::vector<http::Header> fields(fixed.begin(), fixed.begin() + static_cast<std::ptrdiff_t>(count));
    for (std::size_t i = 0; i < options.metadata.size(); ++i) fields.push_back({options.metadata[i].first, encoded[i]});
    state->stream = http2_->open("POST", method, fields);
  }
  if (options.timeout) {
    std::weak_ptr<ClientCall::State> weak = state;
    state->deadline = call_loop.schedule(*options.timeout, [weak] {
      if (auto s = weak.lock()) {
        s->deadline.reset();
        s->end_locally(Status(StatusCode::deadline_exceeded, "Deadline Exceeded"));
      }
    });
  }
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
    spawn_detached(self->loop(), self->unary_to(std::move(method), std::move(request), std::move(options), std::move(done)));
  });
}

// The callback form's coroutine. `keep` holds the client until `done` has run: the posting task's
// `self` is gone once the coroutine is spawned.
Task<> Client::unary_to(std::string method, ByteBuf request, CallOptions options, UniqueFunction<void(UnaryResult)> done) {
  std::shared_ptr<Client> keep = shared_from_this();
  std::optional<UnaryResult> result;
  try {
    Task<UnaryResult> call = unary(std::move(method), std::move(request), std::move(options));
    result.emplace(co_await call);
  } catch (const InvalidMetadata& e) {
    result.emplace(Status(StatusCode::invalid_argument, e.what()), ByteBuf());
  } catch (const std::exception& e) {
    result.emplace(Status(StatusCode::internal, e.what()), ByteBuf());
  }
  done(std::move(*result));
}

}  // namespace weft::grpc
