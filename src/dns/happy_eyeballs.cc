// Happy Eyeballs: the attempts share one State, guarded by a mutex, since each attempt's connect
// completes on the loop its channel runs on and the delay timers run on the caller's loop.

#include "weft/dns/happy_eyeballs.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "weft/core/error.h"

namespace weft {

namespace {

struct State {
  State(EventLoop& l, const Bootstrap& b, std::vector<SocketAddress> a, ChannelInitializer i, HappyEyeballsOptions o)
      : loop(l), bootstrap(b), addresses(std::move(a)), init(std::move(i)), options(std::move(o)), promise(&l) {
    channels.resize(addresses.size());
  }
  EventLoop& loop;
  const Bootstrap bootstrap;
  const std::vector<SocketAddress> addresses;
  const ChannelInitializer init;
  const HappyEyeballsOptions options;
  Promise<ChannelPtr> promise;

  std::mutex mutex;
  std::vector<ChannelPtr> channels;  // each attempt's, once made
  std::size_t started = 0;
  std::size_t failed = 0;
  bool done = false;
  std::exception_ptr last_error;
};

void start_attempt(const std::shared_ptr<State>& state, std::size_t index);

void attempt_failed(const std::shared_ptr<State>& state, std::exception_ptr error) {
  std::unique_lock lock(state->mutex);
  ++state->failed;
  state->last_error = error;
  if (state->done) return;
  if (state->failed == state->addresses.size()) {
    state->done = true;
    lock.unlock();
    state->promise.set_error(error);
  } else if (state->failed == state->started) {
    std::size_t next = state->started;
    lock.unlock();
    start_attempt(state, next);  // nothing is left running: no need to wait for the delay
  }
}

void attempt_connected(const std::shared_ptr<State>& state, const ChannelPtr& channel) {
  std::vector<ChannelPtr> losers;
  {
    std::lock_guard lock(state->mutex);
    if (!state->done) {
      state->done = true;
      for (ChannelPtr& other : state->channels) {
        if (other && other != channel) losers.push_back(std::move(other));
      }
      state->channels.clear();
    } else {
      losers.push_back(channel);
    }
  }
  for (const ChannelPtr& loser : losers) loser->close();
  if (std::find(losers.begin(), losers.end(), channel) == losers.end()) state->promise.set_value(channel);
}

// Starts attempt `index` unless it was started already (by a failure or the delay) or one won.
void start_attempt(const std::shared_ptr<State>& state, std::size_t index) {
  {
    std::lock_guard lock(state->mutex);
    if (state->done || index != state->started || index >= state->addresses.size()) return;
    ++state->started;
  }
  Bootstrap bootstrap = state->bootstrap;
  bootstrap.handler([state, index](Channel& channel) {
    ChannelPtr self = channel.shared_from_this();
    {
      std::lock_guard lock(state->mutex);
      if (state->done) throw ChannelClosedError("happy eyeballs: another attempt connected first");
      state->channels[index] = self;
    }
    if (state->options.on_attempt) state->options.on_attempt(state->addresses[index], self);
    if (state->init) state->init(channel);
  });
  if (index + 1 < state->addresses.size()) {
    try {
      state->loop.schedule(state->options.attempt_delay, [state, index] { start_attempt(state, index + 1); });
    } catch (const RejectedExecutionError&) {
      // The loop is gone: the next attempt starts when this one fails, without the delay's head start.
    }
  }
  Future<ChannelPtr> connected;
  try {
    connected = bootstrap.connect(state->addresses[index]);
  } catch (...) {
    attempt_failed(state, std::current_exception());
    return;
  }
  connected.add_listener([state](const Future<ChannelPtr>& f) {
    if (auto error = f.error()) {
      attempt_failed(state, error);
    } else {
      attempt_connected(state, f.get());
    }
  });
}

}  // namespace

std::vector<SocketAddress> interleave_families(std::vector<SocketAddress> addresses) {
  if (addresses.empty()) return addresses;
  int first = addresses.front().family();
  std::vector<SocketAddress> mine, other, out;
  for (SocketAddress& a : addresses) (a.family() == first ? mine : other).push_back(std::move(a));
  out.reserve(mine.size() + other.size());
  for (std::size_t i = 0; i < std::max(mine.size(), other.size()); ++i) {
    if (i < mine.size()) out.push_back(std::move(mine[i]));
    if (i < other.size()) out.push_back(std::move(other[i]));
  }
  return out;
}

Future<ChannelPtr> connect_happy_eyeballs(EventLoop& loop, const Bootstrap& bootstrap,
                                          std::vector<SocketAddress> addresses, ChannelInitializer init,
                                          HappyEyeballsOptions options) {
  if (addresses.empty()) {
    return make_failed_future<ChannelPtr>(
        std::make_exception_ptr(std::invalid_argument("connect_happy_eyeballs: no address to connect to")), &loop);
  }
  auto state = std::make_shared<State>(loop, bootstrap, interleave_families(std::move(addresses)), std::move(init),
                                       std::move(options));
  Future<ChannelPtr> result = state->promise.future();
  start_attempt(state, 0);
  return result;
}

Future<ChannelPtr> connect_to_host(Resolver& resolver, const Bootstrap& bootstrap, std::string_view host,
                                   std::uint16_t port, ChannelInitializer init, HappyEyeballsOptions options) {
  EventLoop& loop = resolver.loop();
  return resolver.resolve(host, port)
      .then([&loop, bootstrap, init = std::move(init),
             options = std::move(options)](const std::vector<SocketAddress>& addresses) {
        return connect_happy_eyeballs(loop, bootstrap, addresses, init, options);
      });
}

}  // namespace weft
