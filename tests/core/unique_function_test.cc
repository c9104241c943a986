#include "weft/core/unique_function.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>

namespace weft {
namespace {

TEST(UniqueFunctionTest, HoldsMoveOnlyCaptures) {
  auto p = std::make_unique<int>(41);
  UniqueFunction<int()> f = [p = std::move(p)] { return *p + 1; };
  UniqueFunction<int()> g = std::move(f);
  EXPECT_FALSE(static_cast<bool>(f));
  EXPECT_EQ(g(), 42);
}

TEST(UniqueFunctionTest, LargeCapturesGoToTheHeapAndAreDestroyed) {
  auto counter = std::make_shared<int>(0);
  {
    std::array<char, 200> big{};
    big[0] = 'x';
    UniqueFunction<char()> f = [big, counter] { return big[0]; };
    EXPECT_EQ(counter.use_count(), 2);
    UniqueFunction<char()> g;
    g = std::move(f);
    EXPECT_EQ(g(), 'x');
  }
  EXPECT_EQ(counter.use_count(), 1);
}

TEST(UniqueFunctionTest, PassesArguments) {
  UniqueFunction<int(int, int)> add = [](int a, int b) { return a + b; };
  EXPECT_EQ(add(2, 3), 5);
}

}  // namespace
}  // namespace weft
