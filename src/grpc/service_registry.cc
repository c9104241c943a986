#include "weft/grpc/service_registry.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>

#include "server_metrics.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/core/log.h"
#include "weft/metrics/instrumentation.h"

namespace weft::grpc {

namespace detail {
// What the call's watcher knows: the call, once it is made, and whether the connection drains (which
// may be known before the call is).
struct CallWatch {
  std::weak_ptr<ServerCall> call;
  bool draining = false;
};
}  // namespace detail

namespace {

// Before the call's Connection in the child's pipeline: marks the call cancelled as soon as the
// client resets the stream (the handler may not be reading), then passes everything on.
class ResetWatcher final : public InboundHandler<http2::StreamMessage, http2::StreamMessage> {
 public:
  explicit ResetWatcher(std::shared_ptr<detail::CallWatch> watch) noexcept : watch_(std::move(watch)) {}
  void channel_read(Context& ctx, http2::StreamMessage&& message) override { ctx.fire_read(std::move(message)); }
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void channel_inactive(Context& ctx) override;
  void user_event(Context& ctx, const std::any& event) override;

 private:
  std::shared_ptr<detail::CallWatch> watch_;
};

}  // namespace

// Outside the anonymous namespace's class body: ServerCall::on_reset is private to friends.
class ResetNotifier {
 public:
  static void notify(ServerCall& call) noexcept;
  static void notify_closed(ServerCall& call) noexcept { call.on_stream_closed(); }
  static void notify_draining(ServerCall& call) { call.on_connection_draining(); }
};

namespace {
// The one request message of a unary call; a missing or second one fails the call INTERNAL.
Task<ByteBuf> read_unary_request(ServerCall& call) {
  std::optional<ByteBuf> request = co_await call.read();
  if (!request) throw StatusError(Status(StatusCode::internal, "a unary call without its request message"));
  std::optional<ByteBuf> extra = co_await call.read();
  if (extra) throw StatusError(Status(StatusCode::internal, "a unary call with more than one request message"));
  co_return std::move(*request);
}
}  // namespace

void ServiceRegistry::add(std::string path, Handler handler) {
  methods_[std::move(path)] = std::make_shared<const Handler>(std::move(handler));
}

std::vector<std::string> ServiceRegistry::services() const {
  std::vector<std::string> names;
  for (const auto& [path, handler] : methods_) {
    const std::size_t slash = path.find('/', 1);
    if (path.size() < 2 || path.front() != '/' || slash == std::string::npos) continue;
    std::string name = path.substr(1, slash - 1);
    if (names.empty() || names.back() != name) names.push_back(std::move(name));  // a service's paths are adjacent
  }
  std::sort(names.begin(), names.end());  // "/a.B.C/..." sorts before "/a.B/...", "a.B" before "a.B.C"
  return names;
}

void ServiceRegistry::add_unary(std::string path, UnaryHandler handler) {
  add(std::move(path), [handler = std::move(handler)](ServerCall& call) -> Task<> {
    ByteBuf request = co_await read_unary_request(call);
    ByteBuf response = co_await handler(call, std::move(request));
    co_await call.write(std::move(response));
    Status ok;
    co_await call.finish(std::move(ok));
  });
}

void ServiceRegistry::add_unary_callback(std::string path, UnaryCallback callback) {
  add(std::move(path), [callback = std::move(callback)](ServerCall& call) -> Task<> {
    ByteBuf request = co_await read_unary_request(call);
    auto state = std::make_shared<UnaryResponder::State>(call.loop());
    callback(call, std::move(request), UnaryResponder(state));
    UnaryResponder::Outcome outcome = co_await state->wait();
    if (!outcome.response) throw StatusError(std::move(outcome.status));
    co_await call.write(std::move(*outcome.response));
    Status ok;
    co_await call.finish(std::move(ok));
  });
}

void ServiceRegistry::add_reactor(std::string path, ReactorFactory factory) {
  add(std::move(path), [factory = std::move(factory)](ServerCall& call) -> Task<> {
    co_await serve_with_reactor(call, factory);
  });
}

http2::Settings ServiceRegistry::http2_settings() const {
  http2::Settings settings;
  settings.stream_initializer = stream_chooser();
  settings.keepalive_time = std::chrono::hours(2);
  settings.keepalive_timeout = std::chrono::seconds(20);
  settings.min_ping_interval = std::chrono::minutes(5);
  settings.max_ping_strikes = 2;
  return settings;
}

http2::StreamChooser ServiceRegistry::stream_chooser() const {
  // Each method with its metrics (made now: a call only finds them); paths not registered share "other".
  struct Method {
    std::shared_ptr<const Handler> handler;
    std::shared_ptr<detail::MethodMetrics> metrics;
  };
  auto make_metrics = [](std::string_view name) -> std::shared_ptr<detail::MethodMetrics> {
    try {
      return std::make_shared<detail::MethodMetrics>(std::string(name));
    } catch (const std::exception& e) {
      log(LogLevel::warn, "grpc: no call metrics for {}: {}", name, e.what());
      return nullptr;
    }
  };
  auto methods = std::make_shared<std::map<std::string, Method, std::less<>>>();
  std::shared_ptr<detail::MethodMetrics> other = make_metrics("other");
  for (const auto& [path, handler] : methods_) {
    // A66's grpc.method: the full name without the leading '/'.
    methods->emplace(path, Method{handler, make_metrics(std::string_view(path).substr(path.starts_with('/') ? 1 : 0))});
  }
  const ServerOptions options = options_;
  return [methods = std::shared_ptr<const std::map<std::string, Method, std::less<>>>(std::move(methods)), other,
          options](const http::RequestHead& head) -> http2::StreamInitializer {
    const bool grpc = is_grpc_content_type(head.header("content-type").value_or(""));
    const auto found = methods->find(head.path);
    if (!grpc && found == methods->end()) return {};  // not a call: served whole, by the pipeline
    std::shared_ptr<const Handler> handler = found != methods->end() ? found->second.handler : nullptr;
    std::shared_ptr<detail::MethodMetrics> metrics = found != methods->end() ? found->second.metrics : other;
    return
        [handler, options, metrics](http2::StreamChannel& channel) { serve_call(channel, handler, options, metrics); };
  };
}

void ServiceRegistry::serve_call(http2::StreamChannel& channel, std::shared_ptr<const Handler> handler,
                                 ServerOptions options, std::shared_ptr<detail::MethodMetrics> metrics) {
  auto watched = std::make_shared<detail::CallWatch>();
  channel.pipeline().add_last("grpc-reset-watcher", std::make_shared<ResetWatcher>(watched));
  weft::serve<http2::StreamMessage>(
      channel,
      [handler = std::move(handler), options, watched, metrics = std::move(metrics)](
          Connection<http2::StreamMessage>& c) -> Task<> { co_await run_call(c, handler, options, watched, metrics); });
}

Task<> ServiceRegistry::run_call(Connection<http2::StreamMessage>& connection, std::shared_ptr<const Handler> handler,
                                 ServerOptions options, std::shared_ptr<detail::CallWatch> watched,
                                 std::shared_ptr<detail::MethodMetrics> metrics) {
  http2::StreamMessage first = co_await connection.read();
  auto* headers = std::get_if<http2::StreamHeaders>(&first);
  if (headers == nullptr) co_return;
  auto call = std::make_shared<ServerCall>(connection, std::move(*headers), options);
  watched->call = call;
  if (watched->draining) ResetNotifier::notify_draining(*call);
  if (metrics != nullptr && metrics::instrumentation_enabled()) call->start_metrics(std::move(metrics));
  // The stream may have closed (a reset with the HEADERS) before the watcher knew the call.
  if (connection.is_closed()) ResetNotifier::notify_closed(*call);
  std::optional<Status> outcome;
  try {
    if (!is_grpc_content_type(call->request().header("content-type").value_or(""))) {
      Status unsupported(StatusCode::internal, "invalid gRPC request content-type");
      co_await call->finish_with(415, std::move(unsupported));
      co_return;
    }
    if (!handler) {
      Status unknown(StatusCode::unimplemented, "Method not found: " + std::string(call->method()));
      co_await call->finish(std::move(unknown));
      co_return;
    }
    if (std::optional<Status> malformed = check_binary_metadata(call->request())) {
      co_await call->finish(std::move(*malformed));
      co_return;
    }
    call->start_deadline();
    try {
      co_await (*handler)(*call);
      outcome = Status{};
    } catch (const CallEnded&) {
    } catch (const StatusError& e) {
      outcome = e.status();
    } catch (const ChannelClosedError&) {
    } catch (const std::exception& e) {
      outcome = Status{StatusCode::unknown, e.what()};
    } catch (...) {
      outcome = Status{StatusCode::unknown, "the handler threw"};
    }
    if (outcome) co_await call->finish(std::move(*outcome));
  } catch (const CallEnded&) {
    // the stream went away while the status was being written
  }
  call->stop_deadline();
  call->record_end(StatusCode::cancelled);  // (counted already unless the call ended unseen)
}

void ResetNotifier::notify(ServerCall& call) noexcept { call.on_reset(); }

namespace {
void ResetWatcher::exception_caught(Context& ctx, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const http2::StreamResetError&) {
    if (auto call = watch_->call.lock()) ResetNotifier::notify(*call);
  } catch (...) {
  }
  ctx.fire_exception(error);
}

void ResetWatcher::user_event(Context& ctx, const std::any& event) {
  if (std::any_cast<http2::ConnectionDrainingEvent>(&event) != nullptr) {
    watch_->draining = true;
    if (auto call = watch_->call.lock()) ResetNotifier::notify_draining(*call);
  }
  ctx.fire_user_event(event);
}

void ResetWatcher::channel_inactive(Context& ctx) {
  // The connection went while the handler may be waiting elsewhere (an executor, a reactor).
  if (auto call = watch_->call.lock()) ResetNotifier::notify_closed(*call);
  ctx.fire_channel_inactive();
}
}  // namespace

}  // namespace weft::grpc
