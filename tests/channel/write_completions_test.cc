// WriteCompletions: each completion is anchored where the write queue ended when it was added, and
// completes once the bytes before that position have been written -- in order, exactly once.

#include "weft/channel/write_completions.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft {
namespace {

std::vector<Promise<void>> written(WriteCompletions& c) {
  std::vector<Promise<void>> out;
  c.take_written(out);
  return out;
}

TEST(WriteCompletions, CompletesOnceTheBytesQueuedBeforeItAreWritten) {
  WriteCompletions c;
  Promise<void> first, second;
  c.add(first, 10, false);
  c.add(second, 25, false);
  c.on_written(9);
  EXPECT_TRUE(written(c).empty());
  c.on_written(1);
  auto done = written(c);
  ASSERT_EQ(done.size(), 1u);
  done[0].set_value();
  EXPECT_TRUE(first.future().is_done());
  c.on_written(15);
  done = written(c);
  ASSERT_EQ(done.size(), 1u);
  done[0].set_value();
  EXPECT_TRUE(second.future().is_done());
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(written(c).empty()) << "each completion is handed out once";
}

TEST(WriteCompletions, NothingQueuedMeansWrittenAlready) {
  WriteCompletions c;
  c.on_written(100);
  Promise<void> p;
  c.add(p, 0, false);
  EXPECT_EQ(written(c).size(), 1u);
}

TEST(WriteCompletions, HeldBytesAnchorTheCompletionWhenReleased) {
  WriteCompletions c;
  Promise<void> p;
  c.add(p, 5, true);  // a handler holds bytes back: they are not queued yet
  c.on_written(5);
  EXPECT_TRUE(written(c).empty()) << "the held bytes have not been written";
  c.on_held_bytes_released(20);  // now queued (as ciphertext, say)
  c.on_written(19);
  EXPECT_TRUE(written(c).empty());
  c.on_written(1);
  EXPECT_EQ(written(c).size(), 1u);
}

TEST(WriteCompletions, TakeAllHandsOverEveryPendingCompletionInOrder) {
  WriteCompletions c;
  Promise<void> a, b;
  c.add(a, 10, false);
  c.add(b, 10, true);
  std::vector<Promise<void>> out;
  c.take_all(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(c.empty());
  for (auto& p : out) p.fail(std::runtime_error("closed"));
  EXPECT_NE(a.future().error(), nullptr);
  EXPECT_NE(b.future().error(), nullptr);
}

}  // namespace
}  // namespace weft
