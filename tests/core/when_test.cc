#include "weft/core/when.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "weft/core/awaitables.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/spawn.h"

using namespace std::chrono_literals;

namespace weft {
namespace {

Task<int> after(Duration d, int value) {
  co_await sleep(d);
  co_return value;
}
Task<> pause(Duration d) { co_await sleep(d); }
Task<int> fail_after(Duration d) {
  co_await sleep(d);
  throw std::runtime_error("late failure");
}
Task<int> immediate(int v) { co_return v; }

struct WhenTest : ::testing::Test {
  EventLoopGroup group{basic_driver_factory(), 1, "when-test"};
  template <class T>
  T run(Task<T> task) {
    Future<T> f = spawn(group.next(), std::move(task));
    EXPECT_TRUE(f.wait_for(20s));
    return f.get();
  }
};

TEST_F(WhenTest, AllOfATupleRunsConcurrently) {
  auto body = []() -> Task<bool> {
    auto start = Clock::now();
    auto [a, b, c] = co_await when_all(after(60ms, 1), after(60ms, 2), pause(60ms));
    auto took = Clock::now() - start;
    (void)c;
    co_return a == 1 && b == 2 && took < 170ms;  // sequential would take 180 ms
  };
  EXPECT_TRUE(run(body()));
}

TEST_F(WhenTest, AllOfAVectorKeepsOrderAndHandlesSynchronousTasks) {
  auto body = []() -> Task<std::vector<int>> {
    std::vector<Task<int>> tasks;
    tasks.push_back(after(30ms, 1));
    tasks.push_back(immediate(2));
    tasks.push_back(after(10ms, 3));
    tasks.push_back(immediate(4));
    co_return co_await when_all(std::move(tasks));
  };
  EXPECT_EQ(run(body()), (std::vector<int>{1, 2, 3, 4}));
  auto only_sync = []() -> Task<std::vector<int>> {
    std::vector<Task<int>> tasks;
    for (int i = 0; i < 1000; ++i) tasks.push_back(immediate(i));
    co_return co_await when_all(std::move(tasks));
  };
  EXPECT_EQ(run(only_sync()).size(), 1000u);
  auto empty = []() -> Task<std::size_t> { co_return (co_await when_all(std::vector<Task<int>>{})).size(); };
  EXPECT_EQ(run(empty()), 0u);
}

TEST_F(WhenTest, AllRethrowsAFailureOnlyAfterEveryTaskFinished) {
  auto finished = std::make_shared<bool>(false);
  auto slow = [](std::shared_ptr<bool> flag) -> Task<int> {
    co_await sleep(50ms);
    *flag = true;
    co_return 1;
  };
  auto body = [&]() -> Task<bool> {
    try {
      co_await when_all(fail_after(1ms), slow(finished));
    } catch (const std::runtime_error&) {
      co_return *finished;
    }
    co_return false;
  };
  EXPECT_TRUE(run(body()));
}

TEST_F(WhenTest, AnyYieldsTheFirstAndLetsTheOthersFinish) {
  auto body = []() -> Task<std::pair<std::size_t, int>> {
    std::vector<Task<int>> tasks;
    tasks.push_back(after(80ms, 1));
    tasks.push_back(after(5ms, 2));
    tasks.push_back(after(40ms, 3));
    co_return co_await when_any(std::move(tasks));
  };
  auto [index, value] = run(body());
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(value, 2);
  std::this_thread::sleep_for(120ms);  // the losers finish in the background without touching freed state

  auto failing_first = []() -> Task<int> {
    std::vector<Task<int>> tasks;
    tasks.push_back(after(50ms, 1));
    tasks.push_back(fail_after(1ms));
    co_return (co_await when_any(std::move(tasks))).second;
  };
  EXPECT_THROW(run(failing_first()), std::runtime_error);
  std::this_thread::sleep_for(80ms);
  auto none = []() -> Task<int> { co_return (co_await when_any(std::vector<Task<int>>{})).second; };
  EXPECT_THROW(run(none()), std::invalid_argument);
}

}  // namespace
}  // namespace weft
