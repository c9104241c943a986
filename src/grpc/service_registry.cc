#include "weft/grpc/service_registry.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>

#include "server_metrics.h"
#include "weft/channel/handler.h"
#include "weft/codec/http1/request_parser.h"
#include "weft/core/frame_pool.h"
#include "weft/core/log.h"
#include "weft/metrics/instrumentation.h"

namespace weft::grpc {

namespace detail {
// Before the call's Connection in the child's pipeline: marks the call cancelled as soon as the
// client resets the stream (the handler may not be reading), tells it that its connection drains
// (which may be known before the call is made), then passes everything on.
struct CallWatch final : InboundHandler<http2::StreamMessage, http2::StreamMessage> {
  void channel_read(Context& ctx, http2::StreamMessage&& message) override { ctx.fire_read(std::move(message)); }
  void exception_caught(Context& ctx, std::exception_ptr error) override;
  void channel_inactive(Context& ctx) override;
  void user_event(Context& ctx, const std::any& event) override;

  std::weak_ptr<ServerCall> call;  // once it is made
  bool draining = false;
};

// A method as the calls find it (ServiceRegistry::stream_chooser): made once per chooser, so that a
// call's stream initializer holds only a pointer to it (no allocation per call).
struct MethodEntry : std::enable_shared_from_this<MethodEntry> {
  std::shared_ptr<const Handler> handler;  // null: an unknown method (UNIMPLEMENTED)
  std::shared_ptr<MethodMetrics> metrics;
  ServerOptions options;
};
}  // namespace detail

// Outside the anonymous namespace's class body: ServerCall::on_reset is private to friends.
class ResetNotifier {
 public:
  static void notify(ServerCall& call) noexcept;
  static void notify_closed(ServerCall& call) noexcept { call.on_stream_closed(); }
  static void notify_draining(ServerCall& call) { call.on_connection_draining(); }
};

namespace detail {
Task<ByteBuf> read_unary_request(ServerCall& call) {
  std::optional<ByteBuf> request = co_await call.read();
  if (!request) throw StatusError(Status(StatusCode::internal, "a unary call without its request message"));
  std::optional<ByteBuf> extra = co_await call.read();
  if (extra) throw StatusError(Status(StatusCode::internal, "a unary call with more than one request message"));
  co_return std::move(*request);
}
}  // namespace detail

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
    ByteBuf request = co_await detail::read_unary_request(call);
    ByteBuf response = co_await handler(call, std::move(request));
    co_await call.write(std::move(response));
    Status ok;
    co_await call.finish(std::move(ok));
  });
}

void ServiceRegistry::add_unary_callback(std::string path, UnaryCallback callback) {
  add(std::move(path), [callback = std::move(callback)](ServerCall& call) -> Task<> {
    ByteBuf request = co_await detail::read_unary_request(call);
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
  auto make_metrics = [](std::string_view name) -> std::shared_ptr<detail::MethodMetrics> {
    try {
      return std::make_shared<detail::MethodMetrics>(std::string(name));
    } catch (const std::exception& e) {
      log(LogLevel::warn, "grpc: no call metrics for {}: {}", name, e.what());
      return nullptr;
    }
  };
  auto entry = [&](std::shared_ptr<const Handler> handler, std::string_view name) {
    auto method = std::make_shared<detail::MethodEntry>();
    method->handler = std::move(handler);
    method->metrics = make_metrics(name);
    method->options = options_;
    return method;
  };
  using Methods = std::map<std::string, std::shared_ptr<const detail::MethodEntry>, std::less<>>;
  auto methods = std::make_shared<Methods>();
  for (const auto& [path, handler] : methods_) {
    // A66's grpc.method: the full name without the leading '/'.
    methods->emplace(path, entry(handler, std::string_view(path).substr(path.starts_with('/') ? 1 : 0)));
  }
  std::shared_ptr<const detail::MethodEntry> other = entry(nullptr, "other");
  // The initializer runs while the codec that holds this chooser (and so the entries) is there.
  return [methods = std::shared_ptr<const Methods>(std::move(methods)),
          other](const http::RequestHead& head) -> http2::StreamInitializer {
    const bool grpc = is_grpc_content_type(head.header("content-type").value_or(""));
    const auto found = methods->find(head.path);
    if (!grpc && found == methods->end()) return {};  // not a call: served whole, by the pipeline
    const detail::MethodEntry* method = found != methods->end() ? found->second.get() : other.get();
    return [method, grpc](http2::StreamChannel& channel) { serve_call(channel, *method, grpc); };
  };
}

void ServiceRegistry::serve_call(http2::StreamChannel& channel, const detail::MethodEntry& method, bool grpc) {
  auto watch = std::allocate_shared<detail::CallWatch>(frame_pool::Allocator<detail::CallWatch>());
  channel.pipeline().add_last("grpc-call", watch);
  weft::serve<http2::StreamMessage>(
      channel, [method = method.shared_from_this(), watch, grpc](Connection<http2::StreamMessage>& c) -> Task<> {
        co_await run_call(c, method, watch, grpc);
      });
}

Task<> ServiceRegistry::run_call(Connection<http2::StreamMessage>& connection,
                                 std::shared_ptr<const detail::MethodEntry> method,
                                 std::shared_ptr<detail::CallWatch> watch, bool grpc) {
  http2::StreamMessage first = co_await connection.read();
  auto* headers = std::get_if<http2::StreamHeaders>(&first);
  if (headers == nullptr) co_return;
  auto call = std::allocate_shared<ServerCall>(frame_pool::Allocator<ServerCall>(), connection, std::move(*headers),
                                               method->options);
  watch->call = call;
  if (watch->draining) ResetNotifier::notify_draining(*call);
  const std::shared_ptr<const Handler>& handler = method->handler;
  if (method->metrics != nullptr && metrics::instrumentation_enabled()) call->start_metrics(method->metrics);
  // The stream may have closed (a reset with the HEADERS) before the watcher knew the call.
  if (connection.is_closed()) ResetNotifier::notify_closed(*call);
  std::optional<Status> outcome;
  try {
    if (!grpc) {  // a registered path with another content-type (the chooser looked)
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

namespace detail {
void CallWatch::exception_caught(Context& ctx, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const http2::StreamResetError&) {
    if (auto made = call.lock()) ResetNotifier::notify(*made);
  } catch (...) {
  }
  ctx.fire_exception(error);
}

void CallWatch::user_event(Context& ctx, const std::any& event) {
  if (std::any_cast<http2::ConnectionDrainingEvent>(&event) != nullptr) {
    draining = true;
    if (auto made = call.lock()) ResetNotifier::notify_draining(*made);
  }
  ctx.fire_user_event(event);
}

void CallWatch::channel_inactive(Context& ctx) {
  // The connection went while the handler may be waiting elsewhere (an executor, a reactor).
  if (auto made = call.lock()) ResetNotifier::notify_closed(*made);
  ctx.fire_channel_inactive();
}
}  // namespace detail

}  // namespace weft::grpc
