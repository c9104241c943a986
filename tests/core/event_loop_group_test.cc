#include "weft/core/event_loop_group.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

using namespace std::chrono_literals;

namespace weft {
namespace {

TEST(EventLoopGroupTest, DefaultsToOneLoopPerCore) {
  EventLoopGroup group(basic_driver_factory());
  EXPECT_EQ(group.size(), std::max(1u, std::thread::hardware_concurrency()));
}

TEST(EventLoopGroupTest, NextIsRoundRobin) {
  EventLoopGroup group(basic_driver_factory(), 3);
  EventLoop* first = &group.next();
  EventLoop* second = &group.next();
  EventLoop* third = &group.next();
  EXPECT_EQ(std::set<EventLoop*>({first, second, third}).size(), 3u);
  EXPECT_EQ(&group.next(), first);
  EXPECT_EQ(&group.next(), second);
}

TEST(EventLoopGroupTest, EachLoopRunsOnItsOwnNamedThread) {
  EventLoopGroup group(basic_driver_factory(), 2, "workers");
  std::set<std::thread::id> threads;
  for (std::size_t i = 0; i < group.size(); ++i) {
    Promise<std::thread::id> p;
    group.at(i).execute([&p] { p.set_value(std::this_thread::get_id()); });
    threads.insert(p.future().get());
  }
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(group.at(1).name(), "workers-1");
}

TEST(EventLoopGroupTest, ShutdownGracefullyTerminatesEveryLoop) {
  EventLoopGroup group(basic_driver_factory(), 2);
  auto done = group.shutdown_gracefully(10ms, 1s);
  ASSERT_TRUE(done.wait_for(5s));
  for (std::size_t i = 0; i < group.size(); ++i) EXPECT_TRUE(group.at(i).is_terminated());
  group.await_termination();  // returns at once now
}

TEST(EventLoopGroupTest, DestructorStopsLoopsThatWereNotShutDown) {
  auto start = Clock::now();
  {
    EventLoopGroup group(basic_driver_factory(), 2);
    group.next().execute([] {});
  }
  EXPECT_LT(Clock::now() - start, 2s);  // no quiet period on destruction
}

}  // namespace
}  // namespace weft
