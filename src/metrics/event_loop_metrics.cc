#include "weft/metrics/event_loop_metrics.h"

#include "weft/core/event_loop.h"

namespace weft::metrics {

namespace {

struct Families {
  Family& busy;
  Family& poll;
  Family& turns;
  Family& tasks;
};

Families families(Registry& registry) {
  return {registry.counter("weft_event_loop_busy_seconds", "Time event loops spent running events, timers and tasks.",
                           {"loop"}),
          registry.counter("weft_event_loop_poll_seconds", "Time event loops spent waiting in the poll.", {"loop"}),
          registry.counter("weft_event_loop_turns", "Polls event loops made.", {"loop"}),
          registry.gauge("weft_event_loop_tasks", "Tasks and timers an event loop's last turn ran.", {"loop"})};
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
    loops_.push_back(name);
  }
}

EventLoopMetrics::~EventLoopMetrics() {
  Families f = families(registry_);
  for (const std::string& name : loops_) {
    for (Family* family : {&f.busy, &f.poll, &f.turns, &f.tasks}) family->remove_function({name});
  }
  for (std::size_t i = 0; i < group_.size(); ++i) group_.at(i).observe_times(false);
}

}  // namespace weft::metrics
