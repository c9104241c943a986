// grpc::ClientChannel::Impl: subchannels, picking, waiting calls, resolution and backoff (channel_impl.h).

#include "channel_impl.h"

#include <algorithm>
#include <exception>

#include "weft/core/error.h"

namespace weft::grpc {

namespace {

// Runs `fn(impl)` on the channel's loop: at once when called there (the usual case: connections
// complete on it), else posted; nothing once the channel is gone or its loop has ended.
template <class Fn>
void on_loop(const std::weak_ptr<ClientChannel::Impl>& weak, Fn fn) {
  std::shared_ptr<ClientChannel::Impl> impl = weak.lock();
  if (!impl) return;
  if (impl->loop().in_loop()) {
    fn(*impl);
    return;
  }
  try {
    impl->loop().execute([weak, fn = std::move(fn)]() mutable {
      if (auto again = weak.lock()) fn(*again);
    });
  } catch (const RejectedExecutionError&) {
  }
}

}  // namespace

Duration ConnectionBackoff::next(std::mt19937& random) {
  std::uniform_real_distribution<double> spread(-options_.jitter, options_.jitter);
  const std::chrono::duration<double, std::nano> base = current_;
  const Duration wait = std::chrono::duration_cast<Duration>(base * (1 + spread(random)));
  current_ = std::min(std::chrono::duration_cast<Duration>(base * options_.multiplier), options_.max);
  return std::max(wait, Duration::zero());
}

ClientChannel::Impl::Impl(EventLoop& loop, ChannelTarget target, ChannelOptions options)
    : loop_(loop),
      target_(std::move(target)),
      options_(std::move(options)),
      random_(std::random_device{}()),
      retry_tokens_(options_.retries.max_tokens),
      resolution_backoff_(options_.backoff),
      state_(std::make_shared<std::atomic<ConnectivityState>>(ConnectivityState::idle)) {}

void ClientChannel::Impl::start() {
  if (shut_down_) return;
  set_state(ConnectivityState::connecting);
  if (!target_.addresses.empty()) {
    set_addresses(target_.addresses);
    return;
  }
  resolver_ = std::make_unique<Resolver>(loop_, options_.resolver);
  resolve();
}

// ---- resolution ------------------------------------------------------------------------------

void ClientChannel::Impl::resolve() {
  resolving_ = true;
  last_resolution_ = Clock::now();
  ++stats_.resolutions;
  resolver_->clear_cache();  // a re-resolution asks again: the addresses may have moved
  std::weak_ptr<Impl> weak = weak_from_this();
  resolver_->resolve(target_.host, target_.port).add_listener([weak](const Future<std::vector<SocketAddress>>& f) {
    on_loop(weak, [f](Impl& self) {
      if (self.shut_down_) return;
      self.resolving_ = false;
      if (auto error = f.error()) {
        self.last_error_ = "resolving '" + self.target_.host + "': " + describe_exception(error);
        // The addresses already known stay in use; the name is asked again after a backoff.
        std::weak_ptr<Impl> again = self.weak_from_this();
        self.resolution_timer_ = self.loop_.schedule(self.resolution_backoff_.next(self.random_), [again] {
          on_loop(again, [](Impl& s) {
            s.resolution_timer_.reset();
            if (!s.shut_down_) s.resolve();
          });
        });
        self.update_state();
        return;
      }
      self.resolution_backoff_.reset();
      self.set_addresses(f.get());
    });
  });
}

// From a timer, even when due now: the caller may be inside pick() or serve_waiting(), and a
// resolution can complete at once (a numeric name, the hosts file) and replace subchannels_.
void ClientChannel::Impl::request_re_resolution() {
  if (!resolver_ || resolving_ || resolution_timer_ || shut_down_) return;
  const TimePoint earliest = *last_resolution_ + options_.min_re_resolution_interval;
  const Duration wait = std::max<Duration>(earliest - Clock::now(), Duration::zero());
  std::weak_ptr<Impl> weak = weak_from_this();
  resolution_timer_ = loop_.schedule(wait, [weak] {
    on_loop(weak, [](Impl& self) {
      self.resolution_timer_.reset();
      if (!self.shut_down_) self.resolve();
    });
  });
}

void ClientChannel::Impl::set_addresses(std::vector<SocketAddress> addresses) {
  std::vector<std::shared_ptr<Subchannel>> next;
  for (const SocketAddress& address : addresses) {
    const std::string key = address.to_string();
    const auto same = [&key](const std::shared_ptr<Subchannel>& sc) { return sc->address.to_string() == key; };
    if (std::any_of(next.begin(), next.end(), same)) continue;  // listed twice
    auto kept = std::find_if(subchannels_.begin(), subchannels_.end(), same);
    next.push_back(kept != subchannels_.end() ? *kept : std::make_shared<Subchannel>(address, options_.backoff));
  }
  for (const std::shared_ptr<Subchannel>& old : subchannels_) {
    if (std::find(next.begin(), next.end(), old) != next.end()) continue;
    old->removed = true;
    if (old->retry_timer) loop_.cancel(*old->retry_timer);
    stop_connect_timer(*old);
    if (old->client) (void)old->client->close();  // its calls end UNAVAILABLE
  }
  subchannels_ = std::move(next);
  if (next_pick_ >= subchannels_.size()) next_pick_ = 0;
  if (subchannels_.empty()) last_error_ = "the target '" + target_.host + "' resolved to no address";
  if (options_.load_balancing == LoadBalancing::round_robin) {
    for (const std::shared_ptr<Subchannel>& sc : subchannels_) {
      if (sc->state == ConnectivityState::idle) connect(sc);
    }
  } else {
    connect_next_first();
  }
  update_state();
  serve_waiting();
}

// ---- connections -----------------------------------------------------------------------------

void ClientChannel::Impl::connect(const std::shared_ptr<Subchannel>& sc) {
  sc->state = ConnectivityState::connecting;
  const std::uint64_t attempt = ++sc->attempt;
  ++stats_.connects;
  ClientOptions options = options_.client;
  options.http2.connect_timeout = sc->backoff.connect_timeout();
  std::weak_ptr<Impl> weak = weak_from_this();
  Future<std::shared_ptr<Client>> connecting;
  try {
    connecting = Client::connect(loop_, sc->address, std::move(options));
  } catch (const std::exception& e) {
    connect_failed(sc, attempt, e.what());
    return;
  }
  // The whole attempt is bounded, not only its TCP connect: a peer that accepts and never sends its
  // SETTINGS (a proxy whose backend is down) must not hold the address in CONNECTING.
  sc->connect_timer = loop_.schedule(sc->backoff.connect_timeout(), [weak, sc, attempt] {
    on_loop(weak, [sc, attempt](Impl& self) {
      sc->connect_timer.reset();
      if (sc->attempt != attempt || sc->state != ConnectivityState::connecting) return;
      self.connect_failed(sc, attempt, "no HTTP/2 connection within the connect timeout");
      ++sc->attempt;  // the attempt's late completion is closed (connected())
    });
  });
  connecting.add_listener([weak, sc, attempt](const Future<std::shared_ptr<Client>>& f) {
    if (weak.expired()) {
      if (!f.error()) (void)f.get()->close();
      return;
    }
    on_loop(weak, [sc, attempt, f](Impl& self) {
      if (auto error = f.error()) {
        self.connect_failed(sc, attempt, describe_exception(error));
      } else {
        self.connected(sc, attempt, f.get());
      }
    });
  });
}

void ClientChannel::Impl::connected(const std::shared_ptr<Subchannel>& sc, std::uint64_t attempt,
                                    std::shared_ptr<Client> client) {
  if (shut_down_ || sc->removed || attempt != sc->attempt) {
    (void)client->close();
    return;
  }
  stop_connect_timer(*sc);
  sc->client = client;
  sc->state = ConnectivityState::ready;
  sc->ready_at = Clock::now();
  if (!first_ready_set_) {
    first_ready_set_ = true;
    first_ready_.set_value();
  }
  update_state();
  serve_waiting();
  std::weak_ptr<Impl> weak = weak_from_this();
  client->http2().channel().close_future().add_listener([weak, sc, attempt](const Future<void>&) {
    on_loop(weak, [sc, attempt](Impl& self) {
      if (!self.shut_down_ && !sc->removed && sc->attempt == attempt && sc->client) self.lost(sc);
    });
  });
}

void ClientChannel::Impl::connect_failed(const std::shared_ptr<Subchannel>& sc, std::uint64_t attempt,
                                         const std::string& why) {
  if (shut_down_ || sc->removed || attempt != sc->attempt) return;
  stop_connect_timer(*sc);
  ++stats_.connect_failures;
  last_error_ = "connecting to " + sc->address.to_string() + ": " + why;
  sc->state = ConnectivityState::transient_failure;
  retry_later(sc);
  request_re_resolution();
  if (options_.load_balancing == LoadBalancing::pick_first) connect_next_first();
  update_state();
}

// The connection closed, or its server sent GOAWAY (its calls in flight finish on it): a new one
// is made at once, as the old one was ready.
void ClientChannel::Impl::lost(std::shared_ptr<Subchannel> sc) {
  sc->client.reset();
  sc->state = ConnectivityState::idle;
  ++sc->attempt;
  request_re_resolution();
  if (Clock::now() - sc->ready_at < options_.backoff.initial) {
    // Lost as soon as it was made (a server that closes or sends GOAWAY at once): the backoff
    // keeps growing, or the channel would reconnect in a loop.
    sc->state = ConnectivityState::transient_failure;
    retry_later(sc);
    if (options_.load_balancing == LoadBalancing::pick_first) connect_next_first();
    update_state();
    return;
  }
  sc->backoff.reset();
  if (options_.load_balancing == LoadBalancing::round_robin) {
    connect(sc);
  } else {
    connect_next_first();
  }
  update_state();
}

void ClientChannel::Impl::retry_later(const std::shared_ptr<Subchannel>& sc) {
  std::weak_ptr<Impl> weak = weak_from_this();
  sc->retry_timer = loop_.schedule(sc->backoff.next(random_), [weak, sc] {
    on_loop(weak, [sc](Impl& self) {
      sc->retry_timer.reset();
      if (self.shut_down_ || sc->removed) return;
      sc->state = ConnectivityState::idle;
      if (self.options_.load_balancing == LoadBalancing::round_robin) {
        self.connect(sc);
      } else {
        self.connect_next_first();
      }
      self.update_state();
    });
  });
}

void ClientChannel::Impl::connect_next_first() {
  for (const std::shared_ptr<Subchannel>& sc : subchannels_) {
    if (sc->state == ConnectivityState::ready || sc->state == ConnectivityState::connecting) return;
  }
  for (const std::shared_ptr<Subchannel>& sc : subchannels_) {
    if (sc->state == ConnectivityState::idle) {
      connect(sc);
      return;
    }
  }
}

// ---- calls -----------------------------------------------------------------------------------

bool ClientChannel::Impl::usable(Subchannel& sc) {
  if (sc.state != ConnectivityState::ready) return false;
  client::Http2Connection& http2 = sc.client->http2();
  if (http2.channel().is_active() && !http2.codec().goaway_received()) return true;
  // Closed, or told to go away: its close listener may not have run yet.
  for (const std::shared_ptr<Subchannel>& shared : subchannels_) {
    if (shared.get() == &sc) {
      lost(shared);
      break;
    }
  }
  return false;
}

Subchannel* ClientChannel::Impl::pick() {
  const std::size_t n = subchannels_.size();
  if (options_.load_balancing == LoadBalancing::round_robin) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = (next_pick_ + i) % n;
      Subchannel& sc = *subchannels_[index];
      if (usable(sc)) {
        next_pick_ = index + 1 == n ? 0 : index + 1;
        return &sc;
      }
    }
    return nullptr;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (usable(*subchannels_[i])) return subchannels_[i].get();
  }
  return nullptr;
}

ClientCall ClientChannel::Impl::call(std::string_view method, const CallOptions& options,
                                     std::weak_ptr<detail::ConnectionCloseWatcher> watcher) {
  ++stats_.calls;
  if (shut_down_) return ended_call(loop_, Status(StatusCode::unavailable, "the channel is closed"));
  if (Subchannel* sc = pick()) {
    ClientCall call = sc->client->call(method, options);
    if (!watcher.expired()) sc->client->watch_close(std::move(watcher));
    return call;
  }
  if (state_->load(std::memory_order_relaxed) == ConnectivityState::transient_failure && !options.wait_for_ready) {
    return ended_call(loop_, Status(StatusCode::unavailable, last_error_));
  }
  if (waiting_.size() >= options_.max_pending_calls) {
    std::erase_if(waiting_, [](const std::weak_ptr<ClientCall::State>& w) {
      auto st = w.lock();
      return !st || !st->waiting_for_stream();
    });
    if (waiting_.size() >= options_.max_pending_calls) {
      return ended_call(loop_, Status(StatusCode::resource_exhausted,
                                      "too many calls wait for a connection (ChannelOptions::max_pending_calls)"));
    }
  }
  ClientCall waiting = pending_call(loop_, options_.client, method, options);
  ClientCallAccess::state(waiting)->pending->close_watcher = std::move(watcher);
  ++stats_.waited;
  waiting_.push_back(ClientCallAccess::state(waiting));
  if (options_.load_balancing == LoadBalancing::pick_first) connect_next_first();
  return waiting;
}

void ClientChannel::Impl::serve_waiting() {
  while (!waiting_.empty()) {
    std::shared_ptr<ClientCall::State> st = waiting_.front().lock();
    waiting_.pop_front();  // before pick(), which may change the channel's state
    if (!st || !st->waiting_for_stream()) continue;
    Subchannel* sc = pick();
    if (sc == nullptr) {
      waiting_.push_front(st);
      return;
    }
    sc->client->open_pending(*st);
    if (!st->pending->close_watcher.expired()) sc->client->watch_close(std::move(st->pending->close_watcher));
  }
}

// The refused attempt is a failure the budget pays for; a retry needs more than half of it left.
bool ClientChannel::Impl::may_retry(std::size_t attempt) {
  const RetryOptions& retries = options_.retries;
  retry_tokens_ = std::max(0.0, retry_tokens_ - 1);
  if (attempt >= retries.max_attempts || shut_down_) return false;
  if (retry_tokens_ > retries.max_tokens / 2) {
    ++stats_.transparent_retries;
    return true;
  }
  ++stats_.retries_throttled;
  return false;
}

void ClientChannel::Impl::stop_connect_timer(Subchannel& sc) {
  if (!sc.connect_timer) return;
  loop_.cancel(*sc.connect_timer);
  sc.connect_timer.reset();
}

void ClientChannel::Impl::count_result(const ClientCall& call, const Status& status) {
  const std::shared_ptr<ClientCall::State>& st = ClientCallAccess::state(call);
  if (!st || !st->stream.valid()) return;  // ended here before it was sent (closed, TRANSIENT_FAILURE)
  const RetryOptions& retries = options_.retries;
  if (status.ok()) {
    retry_tokens_ = std::min(retries.max_tokens, retry_tokens_ + retries.token_ratio);
  } else if (status.code == StatusCode::unavailable) {
    retry_tokens_ = std::max(0.0, retry_tokens_ - 1);
  }
}

// ---- state -----------------------------------------------------------------------------------

void ClientChannel::Impl::update_state() {
  if (shut_down_) return;
  bool any_ready = false, any_trying = resolving_ && subchannels_.empty();
  for (const std::shared_ptr<Subchannel>& sc : subchannels_) {
    any_ready |= sc->state == ConnectivityState::ready;
    any_trying |= sc->state == ConnectivityState::connecting || sc->state == ConnectivityState::idle;
  }
  const ConnectivityState now = any_ready    ? ConnectivityState::ready
                                : any_trying ? ConnectivityState::connecting
                                             : ConnectivityState::transient_failure;
  set_state(now);
  if (now != ConnectivityState::transient_failure) return;
  // Every address has failed: the calls that may not wait longer fail now.
  for (const std::weak_ptr<ClientCall::State>& w : waiting_) {
    std::shared_ptr<ClientCall::State> st = w.lock();
    if (st && st->waiting_for_stream() && !st->pending->options.wait_for_ready) {
      st->end_with(Status(StatusCode::unavailable, last_error_));
    }
  }
}

void ClientChannel::Impl::set_state(ConnectivityState state) { state_->store(state, std::memory_order_release); }

ChannelStats ClientChannel::Impl::stats() const {
  ChannelStats out = stats_;
  out.ready_connections = static_cast<std::size_t>(
      std::count_if(subchannels_.begin(), subchannels_.end(),
                    [](const std::shared_ptr<Subchannel>& sc) { return sc->state == ConnectivityState::ready; }));
  return out;
}

void ClientChannel::Impl::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  set_state(ConnectivityState::shutdown);
  if (resolution_timer_) loop_.cancel(*resolution_timer_);
  resolver_.reset();
  auto remaining = std::make_shared<std::size_t>(1);
  auto one_closed = [remaining, closed = closed_]() mutable {
    if (--*remaining == 0) closed.set_value();
  };
  for (const std::shared_ptr<Subchannel>& sc : subchannels_) {
    sc->removed = true;
    if (sc->retry_timer) loop_.cancel(*sc->retry_timer);
    stop_connect_timer(*sc);
    if (!sc->client) continue;
    ++*remaining;
    sc->client->close().add_listener([one_closed](const Future<void>&) mutable { one_closed(); });
  }
  subchannels_.clear();
  std::deque<std::weak_ptr<ClientCall::State>> waiting = std::move(waiting_);
  waiting_.clear();
  for (const std::weak_ptr<ClientCall::State>& w : waiting) {
    if (auto st = w.lock(); st && st->waiting_for_stream()) {
      st->end_with(Status(StatusCode::unavailable, "the channel is closed"));
    }
  }
  if (!first_ready_set_) {
    first_ready_set_ = true;
    first_ready_.set_error(std::make_exception_ptr(Error("the channel closed before a connection was ready")));
  }
  one_closed();
}

}  // namespace weft::grpc
