#pragma once
/// @file
/// The CPUs a thread may run on (sched_getaffinity), for pinning event loops to them
/// (EventLoopGroup::Options::cpus, EventLoop::Options::cpu).

#include <cstddef>
#include <vector>

namespace weft {

/// Thread-safe. The CPUs the calling thread may run on (its affinity mask: taskset, cgroup cpusets),
/// in increasing order. Throws std::system_error when the kernel does not say.
std::vector<int> allowed_cpus();

/// Thread-safe. The first `count` CPUs of allowed_cpus() (all of them when fewer are allowed): the
/// list to pin `count` loops to, one per CPU while there are enough.
std::vector<int> first_allowed_cpus(std::size_t count);

/// Thread-safe. Throws std::invalid_argument, naming the CPU and the allowed ones, unless every CPU of
/// `cpus` is in allowed_cpus().
void check_cpus_allowed(const std::vector<int>& cpus);

}  // namespace weft
