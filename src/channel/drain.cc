#include "weft/channel/drain.h"

#include <stdexcept>

#include "acceptor.h"
#include "server_connections.h"
#include "weft/core/error.h"

namespace weft {
namespace {

// On the listener's loop: finds the server's connections through its acceptor, closes its
// listeners, and once they are closed starts the drain on every loop.
void start_drain(const ChannelPtr& server, Duration deadline, TimePoint called, Promise<DrainReport> result) {
  Context* context = server->pipeline().context("acceptor");
  auto* acceptor = context != nullptr ? dynamic_cast<detail::Acceptor*>(&context->handler()) : nullptr;
  if (acceptor == nullptr) {
    if (!server->is_open()) {
      result.fail(ChannelClosedError("drain_server: the server is closed"));
    } else {
      result.fail(std::invalid_argument("drain_server: not a server channel that ServerBootstrap::bind() returned"));
    }
    return;
  }
  const std::shared_ptr<detail::ServerConnections> connections = acceptor->connections();
  if (connections->run == nullptr) {
    connections->run = std::make_shared<detail::DrainRun>(connections->loop_count(), called + deadline);
    // Listeners first: once they are closed, no connection is accepted that the drain could miss
    // (one accepted before reaches its loop before the drain does, or is closed unserved).
    server->close().add_listener(
        [connections, run = connections->run](const Future<void>&) { connections->begin_drain(run); });
  }
  connections->run->future().add_listener([result](const Future<DrainReport>& f) mutable { result.complete_from(f); });
}

}  // namespace

Future<DrainReport> drain_server(const ChannelPtr& server, Duration deadline) {
  Promise<DrainReport> result;
  Future<DrainReport> future = result.future();
  if (server == nullptr) {
    result.fail(std::invalid_argument("drain_server: no server"));
    return future;
  }
  const TimePoint called = Clock::now();
  UniqueFunction<void()> task = [server, deadline, called, result]() mutable {
    start_drain(server, deadline, called, std::move(result));
  };
  if (!server->loop().try_execute(std::move(task))) {
    Promise<DrainReport> failed;
    failed.fail(ChannelClosedError("drain_server: the server's loop has terminated"));
    return failed.future();
  }
  return future;
}

}  // namespace weft
