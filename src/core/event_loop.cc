#include "weft/core/event_loop.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "weft/core/cpu_affinity.h"
#include "weft/core/log.h"

namespace weft {
namespace {

thread_local EventLoop* t_current_loop = nullptr;
thread_local std::uint64_t t_remote_posts = 0;  // this thread's posts to other threads' loops

constexpr Duration kShutdownPollInterval = std::chrono::milliseconds(10);

void run_guarded(UniqueFunction<void()>& task, const std::string& loop_name) noexcept {
  try {
    task();
  } catch (const std::exception& e) {
    log(LogLevel::error, "task on loop '{}' threw: {}", loop_name, e.what());
  } catch (...) {
    log(LogLevel::error, "task on loop '{}' threw a non-standard exception", loop_name);
  }
}

}  // namespace

namespace detail {

bool loop_in_loop(const EventLoop* loop) noexcept { return loop != nullptr && loop->in_loop(); }

void loop_execute(EventLoop* loop, UniqueFunction<void()> task) {
  // The owning loop is gone: run the listeners here rather than lose them.
  if (!loop->try_execute(std::move(task))) run_guarded(task, loop->name());
}

std::exception_ptr broken_promise_error() noexcept {
  try {
    return std::make_exception_ptr(BrokenPromiseError());
  } catch (...) {
    return std::current_exception();  // std::bad_alloc: still an error, not a hang
  }
}

void throw_blocking_on_loop(const EventLoop* loop) {
  throw BlockingOperationError(fmt::format(
      "Future::get()/wait() called on event loop '{}', the loop that must complete this future; "
      "it would deadlock. Use add_listener() or then() on the loop.",
      loop->name()));
}

void log_listener_exception(std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(LogLevel::error, "future listener threw: {}", e.what());
  } catch (...) {
    log(LogLevel::error, "future listener threw a non-standard exception");
  }
}

}  // namespace detail

EventLoop::EventLoop(std::unique_ptr<IoDriver> driver, Options options)
    : options_(std::move(options)), driver_(std::move(driver)), terminated_(nullptr) {
  if (options_.cpu >= 0) check_cpus_allowed({options_.cpu});
  if (options_.manual_clock) {
    owner_ = std::this_thread::get_id();
    manual_base_ = Clock::now();
    driver_->attach(*this);
  }
}

EventLoop::~EventLoop() {
  if (thread_.joinable()) {
    if (!is_terminated()) shutdown_gracefully(Duration::zero(), Duration::zero());
    thread_.join();
  } else if (options_.manual_clock && !is_terminated() && in_loop()) {
    state_.store(kShuttingDown, std::memory_order_release);
    close_tracked_resources();
    run_pending();
    terminate();
  }
  // Polling, not a condition variable: the last holder must not touch the loop after its release.
  while (keep_alive_count_.load(std::memory_order_acquire) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Left only by a producer that died between its push and its look at the state.
  for (RemoteTask* task : late_tasks_) delete task;
  while (callbacks_.linked()) {  // a loop that never ran: its callbacks are left unscheduled
    auto* callback = static_cast<LoopCallback*>(callbacks_.next);
    callback->unlink();
    callback->loop_ = nullptr;
  }
  while (MpscNode* node = remote_tasks_.pop()) delete static_cast<RemoteTask*>(node);
}

void EventLoop::start() {
  thread_ = std::thread([this] {
    if (options_.cpu >= 0) pin_to_cpu(options_.cpu);
    run();
  });
}

void EventLoop::pin_to_cpu(int cpu) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // The constructor checked the CPU; it can still fail if the process's cpuset shrank since.
  const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (error != 0) log(LogLevel::error, "loop '{}': could not pin to CPU {}: errno {}", options_.name, cpu, error);
}

EventLoop* EventLoop::current() noexcept { return t_current_loop; }

EventLoop::RemoteTask::RemoteTask(UniqueFunction<void()> f)
    : fn(std::move(f)), id{&t_remote_posts, ++t_remote_posts} {}

void EventLoop::abort_not_in_loop(const char* operation) const noexcept {
  log(LogLevel::error, "{} must run on event loop '{}' but was called from another thread", operation,
      options_.name);
  std::abort();
}

void EventLoop::run() {
  owner_ = std::this_thread::get_id();
  t_current_loop = this;
  pthread_setname_np(pthread_self(), options_.name.substr(0, 15).c_str());
  driver_->attach(*this);
  // While times() is observed, two clock reads a turn (not per event): the poll's start and end split
  // the turn into busy and poll time; then one after each task, timer and callback (run_timed), and,
  // with a stall threshold, one when the driver's wait returns (detail::note_io_ready) and, once a
  // poll's I/O stalled, two around each channel read from a transport. Unobserved, one relaxed load a turn.
  TimePoint polled{};
  auto add = [](std::atomic<std::uint64_t>& to, std::uint64_t n) {
    to.store(to.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };
  for (;;) {
    Duration timeout = poll_timeout();
    if (timeout.count() != 0) {
      sleeping_.store(true, std::memory_order_seq_cst);
      if (!remote_tasks_.empty()) timeout = Duration::zero();
    }
    const bool timed = times_observers_.load(std::memory_order_relaxed) > 0;
    timed_ = timed;
    detail::t_stall_watch = nullptr;
    detail::t_poll_watch = nullptr;
    if (timed) [[unlikely]] {
      const Duration threshold(stall_threshold_ns_.load(std::memory_order_relaxed));
      stall_watch_.set_threshold(threshold);
      if (threshold.count() > 0) {
        detail::t_poll_watch = &stall_watch_;
        if (stall_watch_.reads_timed()) detail::t_stall_watch = &stall_watch_;
      }
    }
    const TimePoint poll_start = timed ? Clock::now() : TimePoint{};
    turn_time_fresh_ = false;  // the I/O this poll dispatches reads the clock after its wait
    driver_->poll(timeout);
    turn_time_fresh_ = false;  // the timers and tasks: read again
    sleeping_.store(false, std::memory_order_relaxed);
    if (timed) [[unlikely]] {
      const TimePoint poll_end = Clock::now();
      stall_watch_.io_done(poll_end);
      // The first observed turn counts from its poll: what ran before was not observed.
      if (polled != TimePoint{}) add(busy_ns_, static_cast<std::uint64_t>((poll_start - polled).count()));
      add(poll_ns_, static_cast<std::uint64_t>((poll_end - poll_start).count()));
      add(turns_, 1);
      polled = poll_end;
      mark_ = poll_end;
    } else {
      polled = TimePoint{};
    }
    const std::size_t timers = run_due_timers();
    std::size_t ran = timers + run_tasks();
    if (timed) {
      tasks_last_turn_.store(ran, std::memory_order_relaxed);
      add(timers_fired_, timers);
      timers_pending_.store(timers_.size(), std::memory_order_relaxed);
    }
    if (state_.load(std::memory_order_acquire) != kRunning) {
      if (ran > 0) last_activity_ = now();
      if (confirm_shutdown()) break;
    }
  }
  timed_ = false;
  detail::t_stall_watch = nullptr;
  detail::t_poll_watch = nullptr;
  terminate();
  t_current_loop = nullptr;
}

EventLoop::Times EventLoop::times() const noexcept {
  Times t{poll_ns_.load(std::memory_order_relaxed), busy_ns_.load(std::memory_order_relaxed),
          turns_.load(std::memory_order_relaxed), tasks_last_turn_.load(std::memory_order_relaxed)};
  // Run is read first: a post counted after it only makes the depth larger, never negative.
  const std::uint64_t run = remote_run_.load(std::memory_order_relaxed);
  const std::uint64_t posted = remote_posted_.load(std::memory_order_relaxed);
  t.tasks_queued = posted > run ? posted - run : 0;
  t.timers_pending = timers_pending_.load(std::memory_order_relaxed);
  t.timers_fired = timers_fired_.load(std::memory_order_relaxed);
  t.connections = connections_.load(std::memory_order_relaxed);
  t.stalls = stall_watch_.stalls();
  for (std::size_t i = 0; i < t.task_delay_counts.size(); ++i) {
    t.task_delay_counts[i] = task_delay_counts_[i].load(std::memory_order_relaxed);
  }
  t.task_delay_ns = task_delay_ns_.load(std::memory_order_relaxed);
  return t;
}

void EventLoop::run_timed(UniqueFunction<void()>& task, std::string_view kind, std::int64_t posted_ns) {
  if (posted_ns != 0) count_task_delay(mark_.time_since_epoch().count() - posted_ns);
  const std::type_info& type = task.target_type();  // the task may destroy what holds it
  stall_watch_.enter();
  run_guarded(task, options_.name);
  const TimePoint end = Clock::now();
  stall_watch_.leave(mark_, end, kind, [&type] { return detail::StallWatch::type_name(type); });
  mark_ = end;
}

void EventLoop::count_task_delay(std::int64_t delay_ns) noexcept {
  if (delay_ns < 0) delay_ns = 0;  // posted after the turn's mark was read
  std::size_t i = 0;
  while (i < kTaskDelayBoundsNs.size() && delay_ns > kTaskDelayBoundsNs[i]) ++i;
  task_delay_counts_[i].store(task_delay_counts_[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  task_delay_ns_.store(task_delay_ns_.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(delay_ns),
                       std::memory_order_relaxed);
}

void EventLoop::execute(UniqueFunction<void()> task) {
  if (!post(task)) throw RejectedExecutionError(fmt::format("event loop '{}' has terminated", options_.name));
}

bool EventLoop::try_execute(UniqueFunction<void()>&& task) noexcept {
  try {
    return post(task);
  } catch (...) {
    return false;  // no memory for the queue node: the task was not moved
  }
}

bool EventLoop::post(UniqueFunction<void()>& task) {
  if (!in_loop()) return post_remote(task);
  if (state_.load(std::memory_order_relaxed) == kTerminated && !draining_) return false;
  local_tasks_.push_back(std::move(task));
  return true;
}

bool EventLoop::post_remote(UniqueFunction<void()>& task) {
  // Refused once terminating: accepting every post until the final drain ends would let posters
  // that keep posting hold the drain open for ever.
  if (state_.load(std::memory_order_acquire) == kTerminated) [[unlikely]] return false;
  // Once pushed, the task may run and let its owner destroy this loop while we still wake it:
  // ~EventLoop waits for this hold, released after our last touch of the loop.
  KeepAlive posting(*this);
  auto* node = new RemoteTask(std::move(task));
  if (times_observers_.load(std::memory_order_relaxed) > 0) [[unlikely]] {
    node->posted_ns = Clock::now().time_since_epoch().count();
    remote_posted_.fetch_add(1, std::memory_order_relaxed);
  }
  const PostId id = node->id;  // `node` may be run and freed as soon as it is pushed
  remote_tasks_.push(node);
  // seq_cst, paired with terminate(): a load that misses kTerminated comes before the final drain's
  // look at the queue in the single total order, so that look sees this push.
  if (state_.load(std::memory_order_seq_cst) == kTerminated) [[unlikely]] return post_after_termination(id, task);
  wake_if_sleeping();
  return true;
}

// Slow path: our post `pushed` is queued, and the loop is in terminate().
bool EventLoop::post_after_termination(PostId pushed, UniqueFunction<void()>& task) {
  std::lock_guard lock(termination_mutex_);
  // The final drain looks at the queue under this mutex before it ends: it will run the task.
  if (!final_drain_done_) return true;
  // Ours was pushed, and the final drain is over: either the drain took it (it ran; the push came
  // before the drain's last look at the queue), or it is still queued, and nobody pops it but the
  // producers that come here. Take out every late node (their producers come here too, under this
  // mutex) until ours is out, or the queue is empty without it: then the drain ran it and freed the
  // node, whose address a late node of another post may now have (so we look for the post's id).
  auto ours = [&] {
    return std::find_if(late_tasks_.begin(), late_tasks_.end(), [&](RemoteTask* t) { return t->id == pushed; });
  };
  auto found = ours();
  while (found == late_tasks_.end()) {
    if (MpscNode* n = remote_tasks_.pop()) {
      late_tasks_.push_back(static_cast<RemoteTask*>(n));
      found = ours();
    } else if (remote_tasks_.empty()) {
      return true;  // the final drain ran our task
    } else {
      std::this_thread::yield();  // a push is half done
    }
  }
  RemoteTask* mine = *found;
  late_tasks_.erase(found);
  // Counted as queued, handed back: not queued any more (the loop writes this no more).
  if (mine->posted_ns != 0)
    remote_run_.store(remote_run_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  task = std::move(mine->fn);
  delete mine;
  return false;
}

void EventLoop::wake_if_sleeping() noexcept {
  if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
    driver_->wakeup();
  }
}

TimePoint EventLoop::now() const noexcept {
  return options_.manual_clock ? manual_base_ + manual_offset_ : Clock::now();
}

TimerId EventLoop::schedule(Duration delay, UniqueFunction<void()> task) {
  TimerId id = next_timer_id_.fetch_add(1, std::memory_order_relaxed);
  if (in_loop()) {
    add_timer(id, now() + delay, Duration::zero(), std::move(task));
  } else {
    TimePoint deadline = Clock::now() + delay;
    execute([this, id, deadline, t = std::move(task)]() mutable {
      add_timer(id, deadline, Duration::zero(), std::move(t));
    });
  }
  return id;
}

TimerId EventLoop::schedule_at_fixed_rate(Duration initial_delay, Duration period, UniqueFunction<void()> task) {
  if (period <= Duration::zero()) throw std::invalid_argument("schedule_at_fixed_rate: period must be positive");
  TimerId id = next_timer_id_.fetch_add(1, std::memory_order_relaxed);
  if (in_loop()) {
    add_timer(id, now() + initial_delay, period, std::move(task));
  } else {
    TimePoint deadline = Clock::now() + initial_delay;
    execute([this, id, deadline, period, t = std::move(task)]() mutable {
      add_timer(id, deadline, period, std::move(t));
    });
  }
  return id;
}

bool EventLoop::cancel(TimerId id) {
  if (in_loop()) return timers_.erase(id) > 0;
  try_execute([this, id] { timers_.erase(id); });
  return true;
}

void EventLoop::add_timer(TimerId id, TimePoint deadline, Duration period, UniqueFunction<void()> fn) {
  if (state_.load(std::memory_order_relaxed) == kTerminated) return;
  timers_.emplace(id, TimerRecord{std::move(fn), period});
  timer_heap_.push_back(TimerEntry{deadline, id});
  std::push_heap(timer_heap_.begin(), timer_heap_.end(), std::greater<>{});
  // Cancelled timers stay in the heap until their deadline; rebuild when they dominate it.
  if (timer_heap_.size() > 1024 && timer_heap_.size() > 2 * timers_.size()) {
    std::erase_if(timer_heap_, [this](const TimerEntry& e) { return !timers_.contains(e.id); });
    std::make_heap(timer_heap_.begin(), timer_heap_.end(), std::greater<>{});
  }
}

std::size_t EventLoop::run_due_timers() {
  std::size_t ran = 0;
  const TimePoint now_time = now();
  auto run_timer = [this](UniqueFunction<void()>& fn) {
    if (timed_) [[unlikely]] {
      run_timed(fn, "timer", 0);
    } else {
      run_guarded(fn, options_.name);
    }
  };
  while (!timer_heap_.empty() && timer_heap_.front().deadline <= now_time) {
    std::pop_heap(timer_heap_.begin(), timer_heap_.end(), std::greater<>{});
    TimerEntry entry = timer_heap_.back();
    timer_heap_.pop_back();
    auto it = timers_.find(entry.id);
    if (it == timers_.end()) continue;  // cancelled
    ++ran;
    Duration period = it->second.period;
    UniqueFunction<void()> fn = std::move(it->second.fn);
    if (period == Duration::zero()) {
      timers_.erase(it);
      run_timer(fn);
      continue;
    }
    run_timer(fn);
    it = timers_.find(entry.id);  // the task may have cancelled itself
    if (it == timers_.end()) continue;
    it->second.fn = std::move(fn);
    TimePoint next = entry.deadline + period;
    if (next <= now_time) {  // missed periods are skipped, not run in a burst
      auto missed = (now_time - next) / period + 1;
      next += missed * period;
    }
    timer_heap_.push_back(TimerEntry{next, entry.id});
    std::push_heap(timer_heap_.begin(), timer_heap_.end(), std::greater<>{});
  }
  return ran;
}

std::size_t EventLoop::run_tasks() {
  std::size_t ran = 0;
  for (int i = 0; i < options_.max_remote_tasks_per_turn; ++i) {
    MpscNode* node = remote_tasks_.pop();
    if (node == nullptr) break;
    auto* task = static_cast<RemoteTask*>(node);
    if (task->posted_ns != 0) [[unlikely]] {
      remote_run_.store(remote_run_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    if (timed_) [[unlikely]] {
      run_timed(task->fn, "task", task->posted_ns);
    } else {
      run_guarded(task->fn, options_.name);
    }
    delete task;
    ++ran;
  }
  ran += run_callbacks();
  if (!local_tasks_.empty()) {
    running_tasks_.swap(local_tasks_);
    if (timed_) [[unlikely]] {
      for (auto& task : running_tasks_) run_timed(task, "task", 0);
    } else {
      for (auto& task : running_tasks_) run_guarded(task, options_.name);
    }
    ran += running_tasks_.size();
    running_tasks_.clear();
  }
  return ran;
}

// The callbacks scheduled so far; those they schedule wait for the next turn.
std::size_t EventLoop::run_callbacks() {
  if (!callbacks_.linked()) return 0;
  detail::LoopCallbackLink due;
  due.link_before(callbacks_);
  callbacks_.unlink();  // `due` is now the sentinel of what was scheduled
  std::size_t ran = 0;
  while (due.linked()) {
    auto* callback = static_cast<LoopCallback*>(due.next);
    callback->unlink();
    callback->loop_ = nullptr;
    ++ran;
    if (timed_) [[unlikely]] {
      run_timed(callback->fn_, "callback", 0);  // may destroy `callback`
    } else {
      run_guarded(callback->fn_, options_.name);  // may destroy `callback`
    }
  }
  return ran;
}

Duration EventLoop::poll_timeout() const {
  if (!local_tasks_.empty() || callbacks_.linked()) return Duration::zero();
  Duration timeout{-1};
  if (!timer_heap_.empty()) {
    timeout = std::max(Duration::zero(), timer_heap_.front().deadline - now());
  }
  if (state_.load(std::memory_order_relaxed) != kRunning) {
    timeout = timeout.count() < 0 ? kShutdownPollInterval : std::min(timeout, kShutdownPollInterval);
  }
  return timeout;
}

TimePoint EventLoop::shutdown_deadline() const noexcept {
  if (!is_shutting_down()) return TimePoint::max();
  const Duration timeout(shutdown_timeout_ns_.load(std::memory_order_relaxed));
  if (shutdown_started_) return shutdown_start_ + timeout;
  // Requested, not yet begun by the loop (a send under way): from the request, so that sends made
  // meanwhile do not each get a fresh timeout.
  const std::int64_t requested = shutdown_requested_ns_.load(std::memory_order_relaxed);
  return (requested != 0 ? TimePoint(Duration(requested)) : now()) + timeout;
}

Future<void> EventLoop::shutdown_gracefully(Duration quiet_period, Duration timeout) {
  quiet_period_ns_.store(quiet_period.count(), std::memory_order_relaxed);
  shutdown_timeout_ns_.store(timeout.count(), std::memory_order_relaxed);
  int expected = kRunning;
  if (!options_.manual_clock) {
    std::int64_t none = 0;
    shutdown_requested_ns_.compare_exchange_strong(none, Clock::now().time_since_epoch().count(),
                                                   std::memory_order_relaxed);
  }
  state_.compare_exchange_strong(expected, kShuttingDown, std::memory_order_acq_rel);
  if (options_.manual_clock) {
    if (in_loop() && !is_terminated()) {
      close_tracked_resources();
      run_pending();
      terminate();
    }
  } else {
    driver_->wakeup();
    if (!in_loop()) driver_->interrupt_for_shutdown(timeout);  // a thread blocked in send would never see the wake-up
  }
  return terminated_.future();
}

bool EventLoop::confirm_shutdown() {
  const TimePoint now_time = now();
  if (!shutdown_started_) {
    shutdown_started_ = true;
    shutdown_start_ = last_activity_ = now_time;
    close_tracked_resources();
    return false;
  }
  if (now_time - shutdown_start_ >= Duration(shutdown_timeout_ns_.load(std::memory_order_relaxed))) {
    abort_tracked_resources();
    return true;
  }
  if (tracked_count_ > 0) {
    // Registered after the shutdown began (an accepted connection handed over, a connect racing
    // the shutdown): close those too instead of waiting for the deadline.
    close_tracked_resources();
    return false;
  }
  if (!local_tasks_.empty() || !remote_tasks_.empty() || callbacks_.linked()) return false;
  return now_time - last_activity_ >= Duration(quiet_period_ns_.load(std::memory_order_relaxed));
}

void EventLoop::close_tracked_resources() {
  std::vector<LoopResource*> to_close;
  to_close.reserve(tracked_count_);
  for (LoopResource* r = resources_; r != nullptr; r = r->resource_next_) {
    if (r->close_requested_) continue;  // already closing
    r->close_requested_ = true;
    to_close.push_back(r);
  }
  for (LoopResource* r : to_close) {
    try {
      r->close_for_shutdown();
    } catch (const std::exception& e) {
      log(LogLevel::warn, "closing a channel at shutdown of loop '{}' failed: {}", options_.name, e.what());
    }
  }
}

void EventLoop::abort_tracked_resources() {
  std::vector<LoopResource*> to_close;
  for (LoopResource* r = resources_; r != nullptr; r = r->resource_next_) to_close.push_back(r);
  for (LoopResource* r : to_close) {
    try {
      r->abort_for_shutdown();
    } catch (const std::exception& e) {
      log(LogLevel::warn, "closing a channel at the shutdown timeout of loop '{}' failed: {}", options_.name, e.what());
    }
  }
}

void EventLoop::terminate() {
  // seq_cst: see post_remote().
  state_.store(kTerminated, std::memory_order_seq_cst);
  draining_ = true;
  for (;;) {
    driver_->drain();
    cancel_timers();
    if (run_tasks() > 0) continue;
    std::lock_guard lock(termination_mutex_);
    if (local_tasks_.empty() && timers_.empty() && remote_tasks_.empty() && !callbacks_.linked()) {
      final_drain_done_ = true;
      break;
    }
    if (!remote_tasks_.empty()) std::this_thread::yield();  // a push is half done
  }
  draining_ = false;
  while (resources_ != nullptr) untrack(*resources_);  // only when the shutdown deadline passed
  terminated_.set_value();
}

// Pending timers are destroyed unrun. A sleeping coroutine's timer task resumes it (cancelled) as it
// goes, and it may schedule again: the map is moved out first.
void EventLoop::cancel_timers() noexcept {
  timer_heap_.clear();
  if (timers_.empty()) return;
  auto dropped = std::move(timers_);
  timers_.clear();
  dropped.clear();
}

std::size_t EventLoop::run_pending() {
  assert_in_loop("EventLoop::run_pending");
  turn_time_fresh_ = false;  // a turn of its own
  std::size_t total = 0;
  for (;;) {
    std::size_t ran = run_due_timers() + run_tasks();
    if (ran == 0) break;
    total += ran;
  }
  return total;
}

void EventLoop::advance_time(Duration d) {
  manual_offset_ += d;
  run_pending();
}

void EventLoop::track(LoopResource& resource) noexcept {
  assert_in_loop("EventLoop::track");
  if (resource.tracked_) return;
  resource.tracked_ = true;
  resource.close_requested_ = false;
  resource.resource_prev_ = nullptr;
  resource.resource_next_ = resources_;
  if (resources_ != nullptr) resources_->resource_prev_ = &resource;
  resources_ = &resource;
  ++tracked_count_;
}

void EventLoop::untrack(LoopResource& resource) noexcept {
  assert_in_loop("EventLoop::untrack");
  if (!resource.tracked_) return;
  resource.tracked_ = false;
  if (resource.resource_prev_ != nullptr) {
    resource.resource_prev_->resource_next_ = resource.resource_next_;
  } else {
    resources_ = resource.resource_next_;
  }
  if (resource.resource_next_ != nullptr) resource.resource_next_->resource_prev_ = resource.resource_prev_;
  resource.resource_prev_ = resource.resource_next_ = nullptr;
  --tracked_count_;
}

}  // namespace weft
