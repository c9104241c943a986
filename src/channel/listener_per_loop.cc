#include "listener_per_loop.h"

#include <atomic>
#include <vector>

#include "weft/core/error.h"

namespace weft::detail {
namespace {

// In the first listener's pipeline: its close closes every other listener first, and goes on once
// all of them are closed, so that when the server's close future completes no listener of the
// group accepts any more. Loop thread only.
class ClosesEveryListener final : public Handler {
 public:
  explicit ClosesEveryListener(std::vector<ChannelPtr> others) : others_(std::move(others)) {}

  void close(Context& ctx, Promise<void> promise) override {
    if (others_.empty() || (remaining_ && remaining_->load(std::memory_order_acquire) == 0)) {
      ctx.close(std::move(promise));
      return;
    }
    ChannelPtr self = ctx.channel().shared_from_this();
    self->close_future().add_listener([promise](const Future<void>& f) mutable { promise.complete_from(f); });
    if (remaining_) return;  // already closing the others
    remaining_ = std::make_shared<std::atomic<std::size_t>>(others_.size());
    for (const ChannelPtr& other : others_) {
      other->close().add_listener([self, remaining = remaining_](const Future<void>&) {
        if (remaining->fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        // The last one: this listener's own close goes on, on its loop (which, if it is ending,
        // closes the listener itself).
        self->loop().try_execute([self] { self->close(); });
      });
    }
  }

 private:
  std::vector<ChannelPtr> others_;
  std::shared_ptr<std::atomic<std::size_t>> remaining_;  // others not closed yet; null until close()
};

// One bind_listener_per_loop() call: binds listener i on loop i, then listener i + 1 once i is
// bound. Its steps run one at a time (each posted by the one before), on the listeners' loops.
class ListenerPerLoopBind final : public std::enable_shared_from_this<ListenerPerLoopBind> {
 public:
  ListenerPerLoopBind(const SocketAddress& local, ChannelConfig config, ChannelInitializer init,
                      std::shared_ptr<const ChildSetup> setup)
      : address_(local),
        config_(std::move(config)),
        init_(std::move(init)),
        setup_(std::move(setup)),
        result_(&setup_->group.at(0)) {
    config_.reuse_port = true;
  }

  Future<ChannelPtr> result() const { return result_.future(); }

  // Creates the next listener and posts its bind to its loop (or finishes when every loop has one).
  void bind_next() {
    const std::size_t index = listeners_.size();
    if (index == setup_->group.size()) {
      finish();
      return;
    }
    EventLoop& loop = setup_->group.at(index);
    try {
      ChannelPtr listener = setup_->transport.new_server_channel(loop, config_);
      loop.execute([self = shared_from_this(), listener] { self->bind_on_loop(listener); });
    } catch (...) {
      fail(std::current_exception());
    }
  }

 private:
  void bind_on_loop(const ChannelPtr& listener) {
    try {
      if (init_) init_(*listener);
      listener->pipeline().add_last("acceptor", std::make_shared<Acceptor>(setup_));
      listener->register_channel();
      listeners_.push_back(listener);  // registered: from here on, a loop that ends closes it
      Promise<void> bound(&listener->loop());
      bound.future().add_listener([self = shared_from_this(), listener](const Future<void>& f) {
        if (auto error = f.error()) {
          self->fail(error);
          return;
        }
        // Port 0: the first listener's port is the kernel's choice, and the others take it too.
        if (self->listeners_.size() == 1) self->address_ = listener->local_address();
        self->bind_next();
      });
      listener->pipeline().bind(address_, bound);
    } catch (...) {
      listener->close();
      fail(std::current_exception());
    }
  }

  // Every listener is bound: the first one's close now closes them all.
  void finish() {
    ChannelPtr first = listeners_.front();
    std::vector<ChannelPtr> others(listeners_.begin() + 1, listeners_.end());
    try {
      first->loop().execute([self = shared_from_this(), first, others = std::move(others)]() mutable {
        if (!first->is_open()) {
          self->fail(std::make_exception_ptr(ChannelClosedError("a listener closed before the server was bound")));
          return;
        }
        first->pipeline().add_last("closes-every-listener", std::make_shared<ClosesEveryListener>(std::move(others)));
        self->result_.set_value(first);
      });
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // Closes the listeners bound so far, then fails the result: once it has failed, none is open.
  void fail(std::exception_ptr error) {
    if (listeners_.empty()) {
      result_.set_error(error);
      return;
    }
    auto remaining = std::make_shared<std::atomic<std::size_t>>(listeners_.size());
    for (const ChannelPtr& listener : listeners_) {
      listener->close().add_listener([self = shared_from_this(), remaining, error](const Future<void>&) {
        if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) self->result_.set_error(error);
      });
    }
  }

  SocketAddress address_;  // what the next listener binds to
  ChannelConfig config_;
  ChannelInitializer init_;
  std::shared_ptr<const ChildSetup> setup_;
  Promise<ChannelPtr> result_;
  std::vector<ChannelPtr> listeners_;  // registered so far, in loop order
};

}  // namespace

Future<ChannelPtr> bind_listener_per_loop(const SocketAddress& local, ChannelConfig config, ChannelInitializer init,
                                          std::shared_ptr<const ChildSetup> setup) {
  auto bind = std::make_shared<ListenerPerLoopBind>(local, std::move(config), std::move(init), std::move(setup));
  Future<ChannelPtr> result = bind->result();
  bind->bind_next();
  return result;
}

}  // namespace weft::detail
