// EventLoopGroup::Options::cpus: each loop's thread is pinned to its CPU before it runs a task, and
// a CPU the process may not use is refused before any loop starts.

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/core/cpu_affinity.h"
#include "weft/core/event_loop_group.h"

namespace weft {
namespace {

// The CPUs the loop's thread may run on, read on that thread.
std::vector<int> cpus_of(EventLoop& loop) {
  Promise<std::vector<int>> cpus;
  loop.execute([&cpus] { cpus.set_value(allowed_cpus()); });
  return cpus.future().get();
}

TEST(CpuPinningTest, EachLoopRunsOnlyOnItsCpu) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  // Three loops over the first two allowed CPUs (one on a one-CPU machine): loop 2 wraps to the first.
  const std::vector<int> cpus = first_allowed_cpus(2);
  EventLoopGroup group(basic_driver_factory(), EventLoopGroup::Options{3, "pinned", cpus});
  for (std::size_t i = 0; i < group.size(); ++i) {
    EXPECT_EQ(cpus_of(group.at(i)), std::vector<int>{cpus[i % cpus.size()]}) << "loop " << i;
  }
  EXPECT_EQ(allowed_cpus(), allowed);  // the creating thread keeps its own CPUs
}

TEST(CpuPinningTest, WithoutCpusNoLoopIsPinned) {
  EventLoopGroup group(basic_driver_factory(), 1);
  EXPECT_EQ(cpus_of(group.at(0)), allowed_cpus());
}

TEST(CpuPinningTest, ACpuNotAllowedIsRefusedByName) {
  const std::vector<int> allowed = allowed_cpus();
  int refused = 0;
  while (refused < CPU_SETSIZE && std::find(allowed.begin(), allowed.end(), refused) != allowed.end()) ++refused;
  ASSERT_LT(refused, CPU_SETSIZE);
  try {
    EventLoopGroup group(basic_driver_factory(), EventLoopGroup::Options{2, "pinned", {allowed[0], refused}});
    FAIL() << "CPU " << refused << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CPU " + std::to_string(refused) + " "), std::string::npos) << e.what();
  }
  EventLoop::Options options;
  options.cpu = refused;
  EXPECT_THROW(EventLoop(basic_driver_factory().create_driver(), options), std::invalid_argument);
}

TEST(CpuPinningTest, FirstAllowedCpusStopsAtWhatIsAllowed) {
  const std::vector<int> allowed = allowed_cpus();
  EXPECT_EQ(first_allowed_cpus(1), std::vector<int>{allowed[0]});
  EXPECT_EQ(first_allowed_cpus(allowed.size() + 3), allowed);
}

}  // namespace
}  // namespace weft
