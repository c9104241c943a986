#include "origin_pool.h"

#include <algorithm>
#include <utility>

#include "origin_connection.h"
#include "weft/client/client_errors.h"

namespace weft::client::detail {
namespace {

// The streams an HTTP/2 connection is expected to take before its SETTINGS say: how many waiting
// requests one connection being opened will serve.
constexpr std::size_t kExpectedHttp2Streams = 100;
// A server without a concurrency limit still gets no more than this on one connection at once.
constexpr std::size_t kMaxStreamsPerConnection = 1000;

}  // namespace

OriginPool::OriginPool(EventLoop& loop, OriginConnector& connector, const Url& origin, const ClientOptions& options,
                       TlsContextPtr tls, ExchangeSink& sink, StatsCounters& stats)
    : loop_(loop),
      connector_(connector),
      origin_(origin),
      name_(std::string(origin.scheme_name()) + "://" + origin.authority()),
      options_(options),
      tls_(std::move(tls)),
      sink_(sink),
      stats_(stats) {}

OriginPool::~OriginPool() {
  if (sweep_timer_) loop_.cancel(*sweep_timer_);
}

void OriginPool::submit(std::shared_ptr<Exchange> x) {
  if (closed_) {
    sink_.failed(std::move(x), std::make_exception_ptr(ClientClosedError()));
    return;
  }
  if (pending_.empty()) {
    if (PooledConnection* c = pick(false)) {
      if (c->served > 0) StatsCounters::bump(stats_.connections_reused);
      c->send(std::move(x));
      return;
    }
  }
  if (pending_.size() >= options_.max_pending_requests) {
    StatsCounters::bump(stats_.queue_full);
    sink_.failed(std::move(x), std::make_exception_ptr(PoolQueueFullError(name_, options_.max_pending_requests)));
    return;
  }
  x->queued = true;
  pending_.push_back(std::move(x));
  dispatch();
}

void OriginPool::withdraw(Exchange& x) {
  if (x.queued) {
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.get() == &x; });
    if (it != pending_.end()) pending_.erase(it);
    x.queued = false;
  } else if (x.on != nullptr) {
    std::shared_ptr<PooledConnection> on = x.on->shared_from_this();  // its close may report at once
    on->abandon(x);
    note(*on);  // HTTP/1.1 closes it: reaped at the next dispatch, as before its close is reported
  }
}

bool OriginPool::expired(const PooledConnection& c, TimePoint now) const noexcept {
  // Counted from when it became ready, and never before its first request: however slow the
  // connect, and however short the age, a connection carries something.
  return options_.max_connection_age > Duration::zero() && c.served > 0 &&
         now - c.opened_at >= options_.max_connection_age;
}

PooledConnection* OriginPool::pick(bool fresh_only) {
  // The clock is read only where connections age (expired() is false without a maximum age).
  const TimePoint now = options_.max_connection_age > Duration::zero() ? loop_.now() : TimePoint{};
  // The one that became idle last is as good as any idle one, and found without a scan (a retry
  // needs one that has served nothing: the scan finds it).
  if (!fresh_only) {
    if (PooledConnection* idle = pop_idle(now)) return idle;
  }
  PooledConnection* best = nullptr;
  for (std::size_t i = 0; i < connections_.size(); ++i) {
    PooledConnection& c = *connections_[i];
    if (!c.ready || c.dead) continue;
    if (expired(c, now)) {
      c.dead = true;  // too old: finishes what it carries, takes nothing new (reap() closes it)
      reap_due_ = true;
      continue;
    }
    if (c.in_flight >= std::min(c.capacity, kMaxStreamsPerConnection)) continue;
    if (fresh_only && c.served > 0) continue;
    if (best == nullptr || c.in_flight < best->in_flight) best = &c;
    if (best->in_flight == 0) break;  // none is better: the rest are not looked at (nor aged: sweep() does)
  }
  return best;
}

PooledConnection* OriginPool::pop_idle(TimePoint now) {
  while (!idle_.empty()) {
    PooledConnection* c = idle_.back();
    idle_.pop_back();
    c->in_idle_stack = false;
    if (!c->ready || c->dead || c->in_flight > 0) continue;  // handed out by a scan since, or dying
    if (expired(*c, now)) {
      c->dead = true;  // as pick()'s scan does
      reap_due_ = true;
      continue;
    }
    return c;
  }
  return nullptr;
}

void OriginPool::reap() {
  if (!reap_due_) return;
  reap_due_ = false;
  std::vector<std::shared_ptr<PooledConnection>> gone;
  for (const auto& c : connections_) {
    if (c->ready && c->dead && c->in_flight == 0) gone.push_back(c);
  }
  for (auto& c : gone) {
    remove(*c);
    c->close();  // may report back at once: remove() is then a no-op
  }
}

void OriginPool::dispatch() {
  // A connection's close may report back at once (its channel on this loop) and dispatch again.
  if (dispatching_) {
    dispatch_again_ = true;
    return;
  }
  dispatching_ = true;
  do {
    dispatch_again_ = false;
    reap();
    dispatch_once();
  } while (dispatch_again_);
  dispatching_ = false;
}

void OriginPool::dispatch_once() {
  while (!pending_.empty()) {
    const bool fresh_only = pending_.front()->fresh_only;
    PooledConnection* c = pick(fresh_only);
    if (c == nullptr) break;
    std::shared_ptr<Exchange> x = std::move(pending_.front());
    pending_.pop_front();
    x->queued = false;
    if (c->served > 0) StatsCounters::bump(stats_.connections_reused);
    c->send(std::move(x));
  }
  if (pending_.empty() || closed_) return;
  // Open connections for what waits: as many as the waiting requests need, within the limit.
  std::size_t opening = 0;
  for (const auto& c : connections_) {
    if (!c->ready && !c->dead) ++opening;
  }
  // HTTP/2 is expected where it was seen, asked for (h2c), or offered by ALPN and not yet refused.
  const bool http2 = spoke_http2_ || (origin_.scheme() == Scheme::http && options_.http2_prior_knowledge) ||
                     (origin_.scheme() == Scheme::https && options_.http2 && !spoke_http1_);
  const std::size_t per_connection = http2 ? kExpectedHttp2Streams : 1;
  while (opening * per_connection < pending_.size()) {
    if (connections_.size() >= options_.max_connections_per_origin) {
      // A retry must have a fresh connection: an idle, used one makes room for it.
      if (!pending_.front()->fresh_only || opening > 0) break;
      auto idle = std::find_if(connections_.begin(), connections_.end(),
                               [](const auto& c) { return c->ready && !c->dead && c->in_flight == 0; });
      if (idle == connections_.end()) break;
      std::shared_ptr<PooledConnection> gone = *idle;
      remove(*gone);
      gone->close();
    }
    open();
    ++opening;
  }
}

void OriginPool::open() {
  auto c = std::make_shared<OriginConnection>(weak_from_this(), loop_, origin_, options_, tls_);
  adopt(c);
  c->start(connector_);
}

void OriginPool::adopt(std::shared_ptr<PooledConnection> c) {
  connections_.push_back(c);
  note(*c);
  StatsCounters::bump(stats_.connections_opened);
  StatsCounters::bump(stats_.open_connections);
  stats_.peak(connections_.size());
  if (c->ready) connection_ready(*c);
}

void OriginPool::remove(PooledConnection& c) {
  auto it = std::find_if(connections_.begin(), connections_.end(), [&](const auto& p) { return p.get() == &c; });
  if (it == connections_.end()) return;
  if (c.in_idle_stack) {
    idle_.erase(std::find(idle_.begin(), idle_.end(), &c));
    c.in_idle_stack = false;
  }
  connections_.erase(it);
  StatsCounters::bump(stats_.open_connections, -1);
}

void OriginPool::connection_ready(PooledConnection& c) {
  note(c);
  if (c.http2) {
    spoke_http2_ = true;
  } else {
    spoke_http1_ = true;
  }
  if (closed_) {
    c.close();
    return;
  }
  dispatch();
  arm_sweep();
}

void OriginPool::connection_failed(PooledConnection& c, std::exception_ptr error) {
  StatsCounters::bump(stats_.connect_failures);
  auto keep = c.shared_from_this();
  remove(c);
  // The request that waited longest learns why; the others wait for the connections still to come.
  if (!pending_.empty()) {
    std::shared_ptr<Exchange> x = std::move(pending_.front());
    pending_.pop_front();
    x->queued = false;
    dispatch();
    sink_.failed(std::move(x), error);
    return;
  }
  dispatch();
}

void OriginPool::connection_closed(PooledConnection& c) {
  auto keep = c.shared_from_this();
  remove(c);
  dispatch();
}

void OriginPool::answered(PooledConnection& c, std::shared_ptr<Exchange> x, http::HttpClientResponse&& response) {
  x->on = nullptr;
  note(c);
  if (c.dead && c.in_flight == 0) {
    auto keep = c.shared_from_this();
    remove(c);
    c.close();
  }
  dispatch();
  arm_sweep();
  sink_.answered(std::move(x), std::move(response));  // last: the caller may run now, and submit again
}

void OriginPool::released(PooledConnection& c) {
  note(c);
  if (c.dead && c.in_flight == 0) {
    auto keep = c.shared_from_this();
    remove(c);
    c.close();
  }
  dispatch();
  arm_sweep();
}

void OriginPool::failed(PooledConnection& c, std::shared_ptr<Exchange> x, std::exception_ptr error, bool retryable) {
  x->on = nullptr;
  note(c);
  if (x->done) {
    dispatch();  // given up (its request timeout reset its HTTP/2 stream): its slot is free now
    return;
  }
  if (closed_) {
    x->fail_closed(loop_);  // the client closed it: say so, whatever the connection saw
    return;
  }
  if (retryable && !x->retried && !closed_ && !x->upload) {  // a streamed body cannot be replayed
    x->retried = true;
    x->fresh_only = true;
    StatsCounters::bump(stats_.retries);
    x->queued = true;
    pending_.push_front(std::move(x));
    dispatch();
    return;
  }
  dispatch();
  sink_.failed(std::move(x), error);
}

void OriginPool::close_all(std::exception_ptr error) {
  closed_ = true;
  if (sweep_timer_) loop_.cancel(*sweep_timer_);
  sweep_timer_.reset();
  std::deque<std::shared_ptr<Exchange>> waiting = std::move(pending_);
  pending_.clear();
  auto connections = std::move(connections_);
  connections_.clear();
  for (PooledConnection* c : idle_) c->in_idle_stack = false;
  idle_.clear();
  StatsCounters::bump(stats_.open_connections, -static_cast<std::int64_t>(connections.size()));
  for (auto& c : connections) c->close();
  for (auto& x : waiting) {
    x->queued = false;
    sink_.failed(std::move(x), error);
  }
}

void OriginPool::arm_sweep() {
  if (sweep_timer_ || closed_) return;
  const bool idle_off = options_.idle_connection_timeout <= Duration::zero();
  const bool age_off = options_.max_connection_age <= Duration::zero();
  if ((idle_off && age_off) || connections_.empty()) return;
  const TimePoint now = loop_.now();
  TimePoint next = TimePoint::max();
  for (const auto& c : connections_) {
    if (!c->ready || c->dead) continue;
    if (!idle_off && c->in_flight == 0) next = std::min(next, c->idle_since + options_.idle_connection_timeout);
    if (!age_off && c->served > 0) next = std::min(next, c->opened_at + options_.max_connection_age);
  }
  if (next == TimePoint::max()) return;
  std::weak_ptr<OriginPool> weak = weak_from_this();
  sweep_timer_ = loop_.schedule(std::max(next - now, Duration::zero()), [weak] {
    if (auto self = weak.lock()) {
      self->sweep_timer_.reset();
      self->sweep();
    }
  });
}

void OriginPool::sweep() {
  const TimePoint now = loop_.now();
  std::vector<std::shared_ptr<PooledConnection>> gone;
  for (const auto& c : connections_) {
    if (!c->ready || c->in_flight > 0) continue;
    const bool idle_long =
        options_.idle_connection_timeout > Duration::zero() && now - c->idle_since >= options_.idle_connection_timeout;
    if (idle_long || expired(*c, now) || c->dead) gone.push_back(c);
  }
  for (auto& c : gone) {
    remove(*c);
    c->close();
  }
  arm_sweep();
}

}  // namespace weft::client::detail
