#include "weft/core/event_loop_group.h"

#include <thread>

#include "weft/core/cpu_affinity.h"

namespace weft {

EventLoopGroup::EventLoopGroup(IoDriverFactory& factory, std::size_t loop_count, std::string name)
    : EventLoopGroup(factory, Options{loop_count, std::move(name), {}}) {}

EventLoopGroup::EventLoopGroup(IoDriverFactory& factory, Options options) : factory_(factory), terminated_(nullptr) {
  check_cpus_allowed(options.cpus);
  std::size_t loop_count = options.loop_count;
  if (loop_count == 0) loop_count = std::max(1u, std::thread::hardware_concurrency());
  remaining_.store(loop_count);
  loops_.reserve(loop_count);
  for (std::size_t i = 0; i < loop_count; ++i) {
    EventLoop::Options loop_options;
    loop_options.name = options.name + "-" + std::to_string(i);
    loop_options.driver_factory = &factory;
    if (!options.cpus.empty()) loop_options.cpu = options.cpus[i % options.cpus.size()];
    loops_.push_back(std::make_unique<EventLoop>(factory.create_driver(), std::move(loop_options)));
  }
  for (auto& loop : loops_) {
    loop->termination_future().add_listener([this](const Future<void>&) {
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) terminated_.set_value();
    });
    loop->start();
  }
}

EventLoopGroup::~EventLoopGroup() {
  for (auto& loop : loops_) {
    if (!loop->is_shutting_down()) loop->shutdown_gracefully(Duration::zero(), Duration::zero());
  }
  loops_.clear();  // joins each loop's thread
}

EventLoop& EventLoopGroup::next() noexcept {
  return *loops_[next_index_.fetch_add(1, std::memory_order_relaxed) % loops_.size()];
}

Future<void> EventLoopGroup::shutdown_gracefully(Duration quiet_period, Duration timeout) {
  for (auto& loop : loops_) loop->shutdown_gracefully(quiet_period, timeout);
  return terminated_.future();
}

void EventLoopGroup::await_termination() { terminated_.future().wait(); }

}  // namespace weft
