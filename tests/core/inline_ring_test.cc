#include "weft/core/inline_ring.h"

#include <gtest/gtest.h>

#include <memory>

namespace weft {
namespace {

TEST(InlineRingTest, KeepsOrderAcrossWrapAroundWithinTheInlineSlots) {
  InlineRing<int, 4> ring;
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i) ring.push_back(next_in++);
    ASSERT_EQ(ring.size(), 3u);
    EXPECT_EQ(ring[0], next_out);
    EXPECT_EQ(ring[2], next_out + 2);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(ring.pop_front(), next_out++);
    EXPECT_TRUE(ring.empty());
  }
}

TEST(InlineRingTest, GrowsPastTheInlineSlotsFromAnyHeadPosition) {
  InlineRing<int, 2> ring;
  ring.push_back(-1);
  ring.push_back(-2);
  EXPECT_EQ(ring.pop_front(), -1);  // head now in the middle of the inline slots
  for (int i = 0; i < 100; ++i) ring.push_back(i);
  ASSERT_EQ(ring.size(), 101u);
  EXPECT_EQ(ring.pop_front(), -2);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(ring[0], i);
    EXPECT_EQ(ring.pop_front(), i);
  }
  EXPECT_TRUE(ring.empty());
  // The heap ring is kept: it still wraps correctly after growing.
  for (int round = 0; round < 50; ++round) {
    ring.push_back(round);
    ring.push_back(round + 1000);
    EXPECT_EQ(ring.pop_front(), round);
    EXPECT_EQ(ring.pop_front(), round + 1000);
  }
}

TEST(InlineRingTest, GrowsAgainOnTheHeapWithItsHeadInTheMiddle) {
  InlineRing<int, 2> ring;
  int next_in = 0, next_out = 0;
  for (int i = 0; i < 20; ++i) ring.push_back(next_in++);  // on the heap now (32 slots)
  for (int i = 0; i < 15; ++i) EXPECT_EQ(ring.pop_front(), next_out++);
  for (int i = 0; i < 60; ++i) ring.push_back(next_in++);  // wraps, then grows from head 15
  ASSERT_EQ(ring.size(), 65u);
  for (std::size_t i = 0; i < ring.size(); ++i) EXPECT_EQ(ring[i], next_out + static_cast<int>(i));
  while (!ring.empty()) EXPECT_EQ(ring.pop_front(), next_out++);
  EXPECT_EQ(next_out, next_in);
}

TEST(InlineRingTest, DroppingAndClearingDestroyWhatEntriesOwn) {
  auto owned = std::make_shared<int>(7);
  InlineRing<std::shared_ptr<int>, 2> ring;
  for (int i = 0; i < 5; ++i) ring.push_back(owned);
  EXPECT_EQ(owned.use_count(), 6);
  ring.drop_front();
  EXPECT_EQ(owned.use_count(), 5);
  std::shared_ptr<int> taken = ring.pop_front();
  EXPECT_EQ(owned.use_count(), 5);
  taken.reset();
  EXPECT_EQ(owned.use_count(), 4);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(owned.use_count(), 1);
  ring.push_back(owned);
  EXPECT_EQ(*ring[0], 7);
}

}  // namespace
}  // namespace weft
