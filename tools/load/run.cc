#include "run.h"

#include <fmt/format.h>

#include <latch>
#include <system_error>

#include "weft/core/error.h"
#include "weft/transport/epoll.h"

namespace weft::load {

void Stats::merge(const Stats& other) noexcept {
  requests += other.requests;
  responses += other.responses;
  bytes_read += other.bytes_read;
  latency.merge(other.latency);
  errors.add(other.errors);
}

std::string connect_failure_reason(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::system_error& e) {
    return e.code().message();
  } catch (const ConnectTimeoutError&) {
    return "connect timed out";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void ConnectFailures::add(std::string_view reason) {
  count_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (first_reason_.empty()) first_reason_ = reason;
}

std::string ConnectFailures::first_reason() const {
  std::lock_guard lock(mutex_);
  return first_reason_;
}

void Tally::finish() {
  if (finished_) return;
  finished_ = true;
  publish();
  run_.tally_finished();
}

void Worker::begin() {
  began_ = true;
  if (timeout_ns_ > 0) {
    timeout_timer_ = loop_.schedule_at_fixed_rate(std::chrono::milliseconds(100), std::chrono::milliseconds(100),
                                                  [this] { check_timeouts(); });
  }
}

void Worker::stop() {
  stopping_ = true;
  if (timeout_timer_ != 0) loop_.cancel(timeout_timer_);
  publish();
  for (Session* s : std::vector<Session*>(sessions_)) s->close_connection();
}

void Worker::check_timeouts() {
  if (!sending()) return;
  const Nanos now = now_ns();
  // A copy: abandoning a session may remove it from sessions_.
  for (Session* s : std::vector<Session*>(sessions_)) {
    if (s->in_flight() > 0 && now - s->last_progress() > timeout_ns_) {
      stats.errors.timeout += s->in_flight();
      s->abandon();
    }
  }
  publish();
}

Histogram ConnectTimes::histogram() {
  pending_.wait();
  Histogram h;
  for (const auto& took : took_) {
    const Nanos ns = took.load(std::memory_order_relaxed);
    if (ns >= 0) h.record(static_cast<std::uint64_t>(ns));
  }
  return h;
}

void Run::add_tallies(std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) add(std::make_unique<Tally>(*this));
}

void Run::wait(TimePoint start, TimePoint end, const ProgressFn& progress, ProgressCounts counts) {
  for (auto tick = start + std::chrono::seconds(1);; tick += std::chrono::seconds(1)) {
    {
      std::unique_lock lock(mutex_);
      if (finished_cv_.wait_until(lock, std::min(tick, end), [&] { return finished_ == tallies_.size(); })) break;
    }
    if (Clock::now() >= end) break;
    if (progress) {
      std::uint64_t first = 0, second = 0;
      for (const auto& t : tallies_) {
        if (counts == ProgressCounts::responses_errors) {
          first += t->published_responses();
          second += t->published_errors();
        } else {
          first += t->published_requests();
          second += t->published_responses();
        }
      }
      progress(seconds_since(start), first, second);
    }
  }
}

Stats Run::merge() const {
  Stats all;
  for (const auto& t : tallies_) all.merge(t->stats);
  return all;
}

void Run::tally_finished() {
  std::lock_guard lock(mutex_);
  ++finished_;
  finished_cv_.notify_all();
}

LoopRun::LoopRun(int threads) : loops_(epoll(), static_cast<std::size_t>(threads), "weft-load") {}

void LoopRun::add_workers(const std::function<std::unique_ptr<Worker>(EventLoop&)>& make) {
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    std::unique_ptr<Worker> w = make(loops_.at(i));
    workers_.push_back(w.get());
    add(std::move(w));
  }
}

Worker& LoopRun::worker_of_loop(EventLoop& loop) const noexcept {
  for (Worker* w : workers_) {
    if (&w->loop() == &loop) return *w;
  }
  return *workers_.front();  // not reached: every channel runs on one of the group's loops
}

void LoopRun::on_every_worker(const std::function<void(Worker&)>& fn) {
  std::latch done(static_cast<std::ptrdiff_t>(workers_.size()));
  for (Worker* w : workers_) {
    w->loop().execute([w, &fn, &done] {
      fn(*w);
      done.count_down();
    });
  }
  done.wait();
}

TimePoint LoopRun::warm_up(TimePoint start, double seconds) {
  if (seconds <= 0) return start;
  wait(start, deadline_after(start, seconds), nullptr);
  on_every_worker([](Worker& w) { w.restart_counting(); });
  return Clock::now();
}

void LoopRun::stop() {
  on_every_worker([](Worker& w) { w.stop(); });
}

void LoopRun::shutdown() { loops_.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(2)).wait(); }

TimePoint deadline_after(TimePoint start, double seconds) noexcept {
  return seconds > 0 ? start + std::chrono::nanoseconds(static_cast<Nanos>(seconds * 1e9)) : TimePoint::max();
}

double seconds_since(TimePoint start) noexcept { return std::chrono::duration<double>(Clock::now() - start).count(); }

ClientTls client_tls(std::string_view protocol, const std::string& host, bool insecure, const std::string& ca_file,
                     double timeout_s) {
  TlsContextBuilder builder = TlsContext::client();
  builder.application_protocols({std::string(protocol)});
  if (insecure) builder.verify(TlsVerify::none);
  if (!ca_file.empty()) builder.trust_file(ca_file);
  ClientTls tls;
  try {
    tls.context = builder.build();
  } catch (const std::exception& e) {
    throw LoadError(fmt::format("TLS: {}", e.what()));
  }
  tls.options.server_name = host;
  tls.options.verify_hostname = !insecure;
  tls.options.handshake_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  return tls;
}

}  // namespace weft::load
