#include "server_connections.h"

#include <algorithm>
#include <array>

#include "weft/core/log.h"
#include "weft/metrics/instrumentation.h"

namespace weft::detail {

void DrainRun::loop_done(std::size_t open, std::size_t forced) {
  open_.fetch_add(open, std::memory_order_relaxed);
  forced_.fetch_add(forced, std::memory_order_relaxed);
  if (loops_left_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;  // acq_rel: the counts above are seen
  DrainReport report;
  report.open = open_.load(std::memory_order_relaxed);
  report.forced = forced_.load(std::memory_order_relaxed);
  report.drained = report.open - report.forced;
  result_.set_value(report);
}

void LoopConnections::add(const ChannelPtr& channel, const std::shared_ptr<LoopConnections>& self) {
  const std::uint64_t id = channel->id();
  open_.emplace(id, channel);
  loop_.count_connection(true);
  if (metrics::instrumentation_enabled()) counters_.opened.inc();
  // The close future's listeners run on the channel's loop (or, once it has terminated, on the
  // thread that closes the channel as it terminates).
  channel->close_future().add_listener([self, id](const Future<void>&) { self->remove(id); });
}

void LoopConnections::remove(std::uint64_t id) {
  const auto it = open_.find(id);
  if (it != open_.end()) {
    if (metrics::instrumentation_enabled()) {
      // The channel is alive here: its close future completes (and so this runs) while it closes.
      const ChannelPtr channel = it->second.lock();
      const CloseReason reason = channel != nullptr ? channel->close_reason() : CloseReason::local;
      counters_.closed[static_cast<std::size_t>(reason)].inc();
    }
    open_.erase(it);
    loop_.count_connection(false);
  }
  if (drain_ != nullptr && open_.empty()) finish();
}

void LoopConnections::begin_drain(std::shared_ptr<DrainRun> run, const std::shared_ptr<LoopConnections>& self) {
  if (drain_ != nullptr) return;
  drain_ = std::move(run);
  open_at_drain_ = open_.size();
  if (open_.empty()) {
    finish();
    return;
  }
  const Duration left = std::max(Duration::zero(), Duration(drain_->due() - Clock::now()));
  deadline_timer_ = loop_.schedule(left, [self] {
    self->deadline_timer_ = 0;
    self->force();
  });
  // Each request may close its channel (and so remove it from open_) at once.
  std::vector<ChannelPtr> channels;
  channels.reserve(open_.size());
  for (const auto& [id, weak] : open_) {
    if (ChannelPtr channel = weak.lock()) channels.push_back(std::move(channel));
  }
  for (const ChannelPtr& channel : channels) channel->request_shutdown();
}

// The deadline: what is still open closes now, its queued writes dropped (as at a loop's shutdown
// timeout).
void LoopConnections::force() {
  if (reported_) return;
  std::vector<ChannelPtr> channels;
  for (const auto& [id, weak] : open_) {
    ChannelPtr channel = weak.lock();
    if (channel != nullptr && channel->is_open()) channels.push_back(std::move(channel));
  }
  forced_ = channels.size();
  if (forced_ > 0) {
    log(LogLevel::info, "drain: {} connection(s) on loop {} still open at the deadline; closing them", forced_,
        loop_.name());
  }
  for (const ChannelPtr& channel : channels) static_cast<LoopResource&>(*channel).abort_for_shutdown();
  if (!reported_) {
    // The closes' listeners may still be queued: what is left now is closed, so the loop is done.
    finish();
  }
}

void LoopConnections::finish() {
  if (reported_) return;
  reported_ = true;
  if (deadline_timer_ != 0) {
    loop_.cancel(deadline_timer_);
    deadline_timer_ = 0;
  }
  drain_->loop_done(open_at_drain_, forced_);
}

ServerConnections::ServerConnections(EventLoopGroup& group) {
  std::array<std::string_view, kCloseReasons> reasons;
  for (std::size_t i = 0; i < kCloseReasons; ++i) reasons[i] = close_reason_name(static_cast<CloseReason>(i));
  const metrics::ConnectionCounters counters = metrics::connection_counters(
      group.size() > 0 && group.at(0).driver_factory() != nullptr ? group.at(0).driver_factory()->name()
                                                                  : std::string_view("other"),
      reasons);
  for (std::size_t i = 0; i < group.size(); ++i) {
    EventLoop& loop = group.at(i);
    auto connections = std::make_shared<LoopConnections>(loop, counters);
    loops_.emplace(&loop, connections);
    in_group_order_.push_back(std::move(connections));
  }
}

const std::shared_ptr<LoopConnections>& ServerConnections::hand_to_least_loaded() const noexcept {
  // The scan starts one loop further each time, so equal counts (short connections, each closed
  // before the next arrives) go round-robin rather than all to the first loop.
  const std::size_t n = in_group_order_.size();
  const std::size_t start = next_tie_.fetch_add(1, std::memory_order_relaxed) % n;
  std::size_t best = start;
  std::size_t fewest = in_group_order_[start]->handed();
  for (std::size_t i = 1; i < n && fewest > 0; ++i) {
    const std::size_t at = (start + i) % n;
    const std::size_t count = in_group_order_[at]->handed();
    if (count < fewest) {
      best = at;
      fewest = count;
    }
  }
  in_group_order_[best]->hand_in();
  return in_group_order_[best];
}

std::shared_ptr<LoopConnections> ServerConnections::on(EventLoop& loop) const {
  const auto it = loops_.find(&loop);
  return it == loops_.end() ? nullptr : it->second;
}

void ServerConnections::begin_drain(const std::shared_ptr<DrainRun>& run) const {
  for (const auto& entry : loops_) {
    const std::shared_ptr<LoopConnections>& connections = entry.second;
    const bool posted = entry.first->try_execute([run, connections] { connections->begin_drain(run, connections); });
    if (!posted) run->loop_done(0, 0);  // terminated: its loop closed its connections
  }
}

}  // namespace weft::detail
