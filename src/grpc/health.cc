// grpc.health.v1.Health: statuses under one mutex (health checks are not a hot path), Check as a
// unary method, Watch as a reactor that holds one status at most (latest wins) and writes on its loop.

#include "weft/grpc/health.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "weft/grpc/server_reactor.h"
#include "weft/grpc/service_registry.h"

namespace weft::grpc {

namespace {
class WatchReactor;
}  // namespace

struct HealthService::State {
  // What a watcher writes next: the service's status, and whether the call ends after it.
  struct Now {
    ServingStatus status;
    bool last;
  };

  Now now(std::string_view service) const {
    std::lock_guard lock(mu);
    if (shutdown) return {ServingStatus::not_serving, true};
    const auto found = statuses.find(service);
    return {found != statuses.end() ? found->second : ServingStatus::service_unknown, false};
  }

  mutable std::mutex mu;
  std::map<std::string, ServingStatus, std::less<>> statuses;
  // The Watch calls, by service; each leaves at its on_done.
  std::multimap<std::string, std::weak_ptr<WatchReactor>, std::less<>> watchers;
  bool shutdown = false;
};

namespace {

using State = HealthService::State;

// One Watch call. Its status is never queued: pump() reads the newest from the state each time it
// may write, so a slow client costs one status, whatever the number of changes.
class WatchReactor final : public ServerReactor, public std::enable_shared_from_this<WatchReactor> {
 public:
  WatchReactor(ServerStream stream, std::shared_ptr<State> state)
      : stream_(std::move(stream)), state_(std::move(state)) {
    stream_.start_read();
  }

  // Any thread: the status may have changed (or the service shuts down); writes it unless a write is
  // outstanding, whose end pumps again.
  void pump() {
    {
      std::lock_guard lock(mu_);
      if (over_ || writing_) {
        changed_ = true;
        return;
      }
      writing_ = true;
      changed_ = false;
    }
    for (;;) {
      State::Now now = state_->now(service_);  // a change made after this read sets changed_
      std::unique_lock lock(mu_);
      if (over_) return;
      if (draining_) now = {ServingStatus::not_serving, true};
      if (now.status != sent_) {
        sent_ = now.status;
        over_ = now.last;
        lock.unlock();
        stream_.start_write(health_encode_response(now.status));
        if (now.last) stream_.finish({});  // after the write
        return;
      }
      if (now.last) {
        over_ = true;
        lock.unlock();
        stream_.finish({});
        return;
      }
      if (!changed_) {
        writing_ = false;
        return;
      }
      changed_ = false;
    }
  }

  void on_read_done(std::optional<ByteBuf> message) override {
    if (!message) return stream_.finish(Status(StatusCode::internal, "a Watch call without its request message"));
    std::optional<std::string> service = health_decode_request(message->view());
    if (!service) return stream_.finish(Status(StatusCode::internal, "could not parse the HealthCheckRequest"));
    service_ = std::move(*service);
    {
      std::lock_guard lock(state_->mu);
      watching_ = state_->watchers.emplace(service_, weak_from_this());
      registered_ = true;
    }
    pump();
  }

  void on_write_done(bool ok) override {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      if (!ok) over_ = true;
    }
    pump();
  }

  void on_cancel() override {
    std::lock_guard lock(mu_);
    over_ = true;
  }

  // The server drains the call's connection: NOT_SERVING, then OK, as enter_shutdown() ends a watch.
  void on_draining() override {
    {
      std::lock_guard lock(mu_);
      draining_ = true;
    }
    pump();
  }

  void on_done() override {
    std::lock_guard lock(state_->mu);
    if (registered_) state_->watchers.erase(watching_);
    registered_ = false;
  }

 private:
  ServerStream stream_;
  const std::shared_ptr<State> state_;
  std::string service_;  // set once, on the loop, before the call is registered
  // state_->mu:
  std::multimap<std::string, std::weak_ptr<WatchReactor>, std::less<>>::iterator watching_;
  bool registered_ = false;
  // mu_:
  std::mutex mu_;
  bool writing_ = false;   // a write is outstanding, or pump() is deciding one
  bool changed_ = false;   // told of a change while writing_
  bool over_ = false;      // finished, or the call ended
  bool draining_ = false;  // the connection drains: the watch ends
  std::optional<ServingStatus> sent_;
};

// Tells the watchers of `service` (every watcher when `service` is null) outside the state's lock:
// a write may end a call whose on_done takes it.
void notify(State& state, const std::string* service) {
  std::vector<std::shared_ptr<WatchReactor>> told;
  {
    std::lock_guard lock(state.mu);
    auto [first, last] = service != nullptr ? state.watchers.equal_range(*service)
                                            : std::pair(state.watchers.begin(), state.watchers.end());
    for (auto it = first; it != last; ++it) {
      if (auto watcher = it->second.lock()) told.push_back(std::move(watcher));
    }
  }
  for (const auto& watcher : told) watcher->pump();
}

}  // namespace

HealthService::HealthService() : state_(std::make_shared<State>()) {
  state_->statuses.emplace("", ServingStatus::serving);
}

HealthService::~HealthService() = default;

void HealthService::add_to(ServiceRegistry& registry) const {
  registry.add_unary(std::string(kCheckMethod), [state = state_](ServerCall& call, ByteBuf request) -> Task<ByteBuf> {
    std::optional<std::string> service = health_decode_request(request.view());
    if (!service) throw StatusError(Status(StatusCode::internal, "could not parse the HealthCheckRequest"));
    std::optional<ServingStatus> status;
    {
      std::lock_guard lock(state->mu);
      const auto found = state->statuses.find(*service);
      // A draining connection answers as a server in shutdown would.
      if (found != state->statuses.end()) {
        status = state->shutdown || call.draining() ? ServingStatus::not_serving : found->second;
      }
    }
    if (!status) throw StatusError(Status(StatusCode::not_found, "service name unknown"));
    co_return health_encode_response(*status);
  });
  registry.add_reactor(std::string(kWatchMethod), [state = state_](ServerStream stream) {
    return std::make_shared<WatchReactor>(std::move(stream), state);
  });
}

void HealthService::set_status(std::string_view service, ServingStatus status) {
  if (status == ServingStatus::service_unknown) {
    throw std::invalid_argument("grpc::HealthService::set_status: SERVICE_UNKNOWN is not a status to set");
  }
  std::string name(service);
  {
    std::lock_guard lock(state_->mu);
    if (state_->shutdown) return;
    auto [it, added] = state_->statuses.try_emplace(name, status);
    if (!added && it->second == status) return;
    it->second = status;
  }
  notify(*state_, &name);
}

std::optional<ServingStatus> HealthService::status(std::string_view service) const {
  std::lock_guard lock(state_->mu);
  const auto found = state_->statuses.find(service);
  if (found == state_->statuses.end()) return std::nullopt;
  return state_->shutdown ? ServingStatus::not_serving : found->second;
}

void HealthService::enter_shutdown() {
  {
    std::lock_guard lock(state_->mu);
    if (state_->shutdown) return;
    state_->shutdown = true;
  }
  notify(*state_, nullptr);
}

bool HealthService::shutting_down() const {
  std::lock_guard lock(state_->mu);
  return state_->shutdown;
}

}  // namespace weft::grpc
