#include "weft/metrics/event_loop_metrics.h"

#include "weft/core/event_loop.h"

namespace weft::metrics {

namespace {

struct Families {
  Family& busy;
  Family& poll;
  Family& turns;
  Family& tasks;
  Family& queued;
  Family& delay;
  Family& timers_pending;
  Family& timers_fired;
  Family& stalls;
  Family& connections;
};

std::vector<double> delay_bounds() {
  std::vector<double> bounds;
  for (std::int64_t ns : EventLoop::kTaskDelayBoundsNs) bounds.push_back(static_cast<double>(ns) * 1e-9);
  return bounds;
}

Families families(Registry& registry) {
  return {
      registry.counter("weft_event_loop_busy_seconds", "Time event loops spent running timers and tasks.", {"loop"}),
      registry.counter("weft_event_loop_poll_seconds",
                       "Time event loops spent in the poll: waiting, and running the I/O it returned.", {"loop"}),
      registry.counter("weft_event_loop_turns", "Polls event loops made.", {"loop"}),
      registry.gauge("weft_event_loop_tasks", "Tasks and timers an event loop's last turn ran.", {"loop"}),
      registry.gauge("weft_event_loop_tasks_queued", "Tasks posted to an event loop from other threads, not yet run.",
                     {"loop"}),
      registry.histogram("weft_event_loop_task_delay_seconds",
                         "Time from a post by another thread to the task's start on the event loop.", {"loop"},
                         delay_bounds()),
      registry.gauge("weft_event_loop_timers_pending", "Timers scheduled on an event loop and not yet due.", {"loop"}),
      registry.counter("weft_event_loop_timers_fired", "Timer runs on an event loop.", {"loop"}),
      registry.counter("weft_event_loop_stalls",
                       "Tasks, timers, channel and handler reads that ran past the event loop's stall threshold.",
                       {"loop"}),
      registry.gauge("weft_event_loop_connections", "Servers' connections open on an event loop.", {"loop"})};
}

}  // namespace

EventLoopMetrics::EventLoopMetrics(EventLoopGroup& group, Registry& registry) : registry_(registry), group_(group) {
  Families f = families(registry);
  for (std::size_t i = 0; i < group.size(); ++i) {
    EventLoop* loop = &group.at(i);
    loop->observe_times(true);
    const std::string& name = loop->name();
    f.busy.set_function({name}, [loop] { return static_cast<double>(loop->times().busy_ns) * 1e-9; });
    f.poll.set_function({name}, [loop] { return static_cast<double>(loop->times().poll_ns) * 1e-9; });
    f.turns.set_function({name}, [loop] { return static_cast<double>(loop->times().turns); });
    f.tasks.set_function({name}, [loop] { return static_cast<double>(loop->times().tasks_last_turn); });
    f.queued.set_function({name}, [loop] { return static_cast<double>(loop->times().tasks_queued); });
    f.delay.set_histogram_function({name}, [loop] {
      const EventLoop::Times t = loop->times();
      return HistogramValue{{t.task_delay_counts.begin(), t.task_delay_counts.end()},
                            static_cast<double>(t.task_delay_ns) * 1e-9};
    });
    f.timers_pending.set_function({name}, [loop] { return static_cast<double>(loop->times().timers_pending); });
    f.timers_fired.set_function({name}, [loop] { return static_cast<double>(loop->times().timers_fired); });
    f.stalls.set_function({name}, [loop] { return static_cast<double>(loop->times().stalls); });
    f.connections.set_function({name}, [loop] { return static_cast<double>(loop->times().connections); });
    loops_.push_back(name);
  }
}

EventLoopMetrics::~EventLoopMetrics() {
  Families f = families(registry_);
  for (const std::string& name : loops_) {
    for (Family* family : {&f.busy, &f.poll, &f.turns, &f.tasks, &f.queued, &f.delay, &f.timers_pending,
                           &f.timers_fired, &f.stalls, &f.connections}) {
      family->remove_function({name});
    }
  }
  for (std::size_t i = 0; i < group_.size(); ++i) group_.at(i).observe_times(false);
}

}  // namespace weft::metrics
