#include "acceptor.h"

#include "weft/core/error.h"
#include "weft/core/log.h"

namespace weft::detail {

void Acceptor::channel_read(Context& ctx, AcceptedSocket&& socket) {
  ChannelPtr child;
  EventLoop* loop = nullptr;
  std::shared_ptr<LoopConnections> counted_in;  // set when a least-connections count holds this child
  try {
    loop = &choose_loop(ctx, counted_in);
    child = setup_->transport.new_accepted_channel(*loop, setup_->config, std::move(socket));
  } catch (const ChannelLimitError& e) {
    if (counted_in != nullptr) counted_in->hand_out();
    refuse(ctx, std::move(socket), e);
    return;
  } catch (const std::exception& e) {
    if (counted_in != nullptr) counted_in->hand_out();
    log(LogLevel::warn, "could not create a channel for an accepted connection: {}", e.what());
    return;
  }
  // A task even on the listener's own loop: the child's events never run inside the listener's call.
  const bool posted = loop->try_execute([setup = setup_, child, counted_in] {
    if (counted_in != nullptr) {
      // Added before the initializer's listeners: they see the connection counted out.
      child->close_future().add_listener([counted_in](const Future<void>&) { counted_in->hand_out(); });
    }
    const std::shared_ptr<LoopConnections> here = setup->connections->on(child->loop());
    if (here != nullptr && here->draining()) {
      // Accepted before the listeners closed, reaching its loop after the drain did: not served.
      log(LogLevel::debug, "server draining: accepted channel {} closed unserved", child->id());
      child->close();
      return;
    }
    try {
      if (setup->init) setup->init(*child);
      child->register_channel();
      if (here != nullptr) here->add(child, here);
    } catch (const std::exception& e) {
      log(LogLevel::warn, "setting up accepted channel {} failed: {}", child->id(), e.what());
      child->close();
    }
  });
  if (!posted && counted_in != nullptr) counted_in->hand_out();  // its loop has terminated
}

EventLoop& Acceptor::choose_loop(Context& ctx, std::shared_ptr<LoopConnections>& counted_in) {
  switch (setup_->mode) {
    case AcceptMode::reuseport: return ctx.channel().loop();
    case AcceptMode::least_connections:
      // A blocking loop serves one connection: every loop the transport can reserve has none.
      if (!setup_->transport.loops_serve_many_channels()) break;
      counted_in = setup_->connections->hand_to_least_loaded();
      return counted_in->loop();
    case AcceptMode::acceptor: break;
  }
  return setup_->transport.choose_loop(setup_->group);
}

void Acceptor::exception_caught(Context& ctx, std::exception_ptr error) {
  // accept() failures are reported and the server keeps running.
  try {
    std::rethrow_exception(error);
  } catch (const ChannelLimitError&) {
    // logged, rate-limited, by refuse()
  } catch (const std::exception& e) {
    log(LogLevel::warn, "server {}: {}", ctx.channel().local_address().to_string(), e.what());
  } catch (...) {
  }
}

// The transport is full: close the connection at once, log at most once a second, and tell the
// server pipeline's handlers (from its head, so that handlers before this one see it too).
void Acceptor::refuse(Context& ctx, AcceptedSocket socket, const ChannelLimitError& error) {
  const SocketAddress remote = socket.remote_address();
  socket = AcceptedSocket();  // closes the descriptor
  ++refused_since_log_;
  const TimePoint now = ctx.channel().loop().now();
  if (now - last_refusal_log_ >= std::chrono::seconds(1)) {
    log(LogLevel::warn, "server {}: refused {} connection(s) (latest from {}): {}",
        ctx.channel().local_address().to_string(), refused_since_log_, remote.to_string(), error.what());
    last_refusal_log_ = now;
    refused_since_log_ = 0;
  }
  ctx.channel().pipeline().fire_exception(std::make_exception_ptr(error));
}

}  // namespace weft::detail
