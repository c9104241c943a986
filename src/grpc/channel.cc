// grpc::ClientChannel: the handle (create, close, the unary forms); ClientChannel::Impl (channel_impl.cc) balances.

#include "weft/grpc/channel.h"

#include <stdexcept>

#include "channel_impl.h"
#include "weft/channel/transport.h"
#include "weft/core/error.h"
#include "weft/core/spawn.h"
#include "weft/grpc/metadata.h"

namespace weft::grpc {

std::shared_ptr<ClientChannel> ClientChannel::create(EventLoop& loop, std::string_view target, Options options) {
  if (!transport_of(loop).loops_serve_many_channels()) {
    throw std::invalid_argument(
        "grpc::ClientChannel keeps its connections on one loop, and a loop of the blocking transport serves one "
        "connection: use grpc::Client on the blocking transport");
  }
  ChannelTarget parsed = parse_target(target);
  if (options.client.http2.settings.authority.empty()) options.client.http2.settings.authority = parsed.authority;
  auto impl = std::make_shared<Impl>(loop, std::move(parsed), std::move(options));
  auto channel = std::make_shared<ClientChannel>(loop, impl);
  loop.execute([impl] { impl->start(); });
  return channel;
}

ClientChannel::ClientChannel(EventLoop& loop, std::shared_ptr<Impl> impl) noexcept
    : loop_(loop), impl_(std::move(impl)), state_(impl_->shared_state()) {}

ClientChannel::~ClientChannel() { (void)close(); }

Future<void> ClientChannel::close() {
  Future<void> closed = impl_->closed();
  try {
    loop_.execute([impl = impl_] { impl->shutdown(); });
  } catch (const RejectedExecutionError&) {
    // The loop has ended: its connections with it; the waiting calls' loop is gone too.
  }
  return closed;
}

Future<void> ClientChannel::ready() const { return impl_->first_ready(); }

ChannelStats ClientChannel::stats() const { return impl_->stats(); }

ClientCall ClientChannel::call(std::string_view method, const CallOptions& options) {
  return impl_->call(method, options);
}

ClientCall ClientChannel::call_watched(std::string_view method, const CallOptions& options,
                                       std::weak_ptr<detail::ConnectionCloseWatcher> watcher) {
  return impl_->call(method, options, std::move(watcher));
}

namespace {

// A unary call over `impl`, sent again while it is refused and the retries allow.
Task<UnaryResult> unary_over(std::shared_ptr<ClientChannel::Impl> impl, std::string method, ByteBuf request,
                             CallOptions options) {
  const std::optional<TimePoint> deadline =
      options.timeout ? std::optional<TimePoint>(Clock::now() + *options.timeout) : std::nullopt;
  for (std::size_t attempt = 1;; ++attempt) {
    if (deadline && attempt > 1) {
      // A retry gets the time left.
      const Duration left = *deadline - Clock::now();
      if (left <= Duration::zero()) {
        co_return UnaryResult(Status(StatusCode::deadline_exceeded, "Deadline Exceeded"), ByteBuf());
      }
      options.timeout = left;
    }
    ClientCall call = impl->call(method, options);
    // A slice shares the request's bytes (no copy): the same bytes go again if the call is refused.
    co_await call.write(request.slice());
    co_await call.writes_done();
    std::optional<ByteBuf> response = co_await call.read();
    Status status = co_await call.finish();
    if (call.refused()) {
      if (impl->may_retry(attempt)) continue;  // the budget has paid for this failure
    } else {
      impl->count_result(call, status);
    }
    if (status.ok() && !response) status = Status(StatusCode::internal, "the server sent no response message");
    ByteBuf message = status.ok() ? std::move(*response) : ByteBuf();
    co_return UnaryResult(std::move(status), std::move(message));
  }
}

}  // namespace

Task<UnaryResult> ClientChannel::unary(std::string method, ByteBuf request, CallOptions options) {
  return unary_over(impl_, std::move(method), std::move(request), std::move(options));
}

void ClientChannel::unary(std::string method, ByteBuf request, CallOptions options,
                          UniqueFunction<void(UnaryResult)> done) {
  loop_.execute([impl = impl_, method = std::move(method), request = std::move(request), options = std::move(options),
                 done = std::move(done)]() mutable {
    Task<UnaryResult> call = unary_over(impl, std::move(method), std::move(request), std::move(options));
    EventLoop& loop = impl->loop();
    spawn_detached(loop, deliver_unary(std::move(impl), std::move(call), std::move(done)));
  });
}

}  // namespace weft::grpc
