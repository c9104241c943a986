#include "weft/core/cpu_affinity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace weft {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> first_allowed_cpus(std::size_t count) {
  std::vector<int> cpus = allowed_cpus();
  if (cpus.size() > count) cpus.resize(count);
  return cpus;
}

void check_cpus_allowed(const std::vector<int>& cpus) {
  const std::vector<int> allowed = allowed_cpus();
  for (const int cpu : cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      throw std::invalid_argument(
          fmt::format("CPU {} is not one this process may run on (allowed: {})", cpu, fmt::join(allowed, ",")));
    }
  }
}

}  // namespace weft
