#include "weft/buffer/leak_detector.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "weft/buffer/byte_buf_allocator.h"
#include "weft/buffer/pooled_byte_buf_allocator.h"

namespace weft {
namespace {

// Restores the level the test run uses (paranoid, from tests/support/leak_check.cc).
class LeakDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = LeakDetector::level(); }
  void TearDown() override {
    LeakDetector::set_level(saved_);
    LeakDetector::set_sampling_interval(128);
  }
  LeakDetectionLevel saved_{};
};

// Something that leaks the way C++ code leaks a buffer: an owner that is never destroyed.
struct Holder {
  ByteBuf buf;
  std::shared_ptr<Holder> self;  // a cycle: never freed by itself
};

ByteBuf __attribute__((noinline)) allocate_here(ByteBufAllocator& alloc) { return alloc.buffer(123); }

TEST_F(LeakDetectorTest, ParanoidReportsABufferKeptAliveWithItsAllocationAndLastTouch) {
  LeakDetector::set_level(LeakDetectionLevel::paranoid);
  PooledByteBufAllocator alloc;
  const std::uint64_t since = LeakDetector::checkpoint();
  auto holder = std::make_shared<Holder>();
  holder->buf = allocate_here(alloc);
  holder->buf.touch("queued for the slow consumer");
  holder->self = holder;  // leaked owner
  std::weak_ptr<Holder> weak = holder;
  holder.reset();

  LeakDetector::ScopedCapture capture;
  EXPECT_EQ(LeakDetector::live_count(since), 1u);
  EXPECT_EQ(LeakDetector::report_live("check point", since), 1u);
  ASSERT_EQ(capture.reports().size(), 1u);
  const LeakReport& r = capture.reports()[0];
  EXPECT_EQ(r.allocator, &alloc);
  EXPECT_GE(r.capacity, 123u);
  EXPECT_NE(r.allocated_at.find('\n'), std::string::npos);  // frames
  EXPECT_NE(r.last_touched_at.find("queued for the slow consumer"), std::string::npos);
  EXPECT_NE(r.context, "");  // the test's name, from the test listener
  const std::string text = r.to_string();
  EXPECT_EQ(text.rfind("LEAK: ByteBuf", 0), 0u) << text;
  EXPECT_NE(text.find("allocated at:"), std::string::npos);
  EXPECT_NE(text.find("last touched at:"), std::string::npos);
  // Reported once only.
  EXPECT_EQ(LeakDetector::report_live("again", since), 0u);

  // Break the cycle: the buffer is released and its record goes.
  weak.lock()->self.reset();
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
}

TEST_F(LeakDetectorTest, ReleasedBuffersAreNotReported) {
  LeakDetector::set_level(LeakDetectionLevel::paranoid);
  const std::uint64_t since = LeakDetector::checkpoint();
  {
    ByteBuf a = default_allocator().buffer(10);
    ByteBuf s = a.slice(0, 4);
    a.write_bytes(std::string(5000, 'x'));  // grows while shared: a new block, tracked too
    EXPECT_EQ(LeakDetector::live_count(since), 2u);
    std::thread([b = std::move(a)]() mutable { b.release(); }).join();  // released on another thread
    EXPECT_EQ(LeakDetector::live_count(since), 1u);
  }
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
}

TEST_F(LeakDetectorTest, RecordFollowsAReallocatedBlock) {
  LeakDetector::set_level(LeakDetectionLevel::paranoid);
  PooledByteBufAllocator alloc;
  const std::uint64_t since = LeakDetector::checkpoint();
  ByteBuf b = alloc.buffer(16);
  b.write_bytes(std::string(400000, 'y'));  // sole owner: reallocate_storage, into a mapping
  auto live = LeakDetector::live_buffers(since);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_GE(live[0].capacity, 400000u);
  b.release();
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
}

TEST_F(LeakDetectorTest, SimpleSamplesAndDisabledTracksNothing) {
  LeakDetector::set_level(LeakDetectionLevel::simple);
  LeakDetector::set_sampling_interval(10);
  const std::uint64_t since = LeakDetector::checkpoint();
  std::vector<ByteBuf> bufs;
  for (int i = 0; i < 100; ++i) bufs.push_back(default_allocator().buffer(8));
  EXPECT_EQ(LeakDetector::live_count(since), 10u);
  auto live = LeakDetector::live_buffers(since);
  ASSERT_FALSE(live.empty());
  EXPECT_NE(live[0].allocated_at, "");  // the caller's address
  bufs.clear();
  EXPECT_EQ(LeakDetector::live_count(since), 0u);

  LeakDetector::set_level(LeakDetectionLevel::disabled);
  for (int i = 0; i < 100; ++i) bufs.push_back(default_allocator().buffer(8));
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
  bufs.clear();
}

// PooledByteBufAllocator::buffer() calls its fast path directly, and that path leaves a cached block's
// record alone (ByteBuf drops it on release): a tracked block that comes back from the thread cache is
// tracked again.
TEST_F(LeakDetectorTest, PooledBufferTracksABlockAgainWhenTheThreadCacheHandsItOutAgain) {
  LeakDetector::set_level(LeakDetectionLevel::paranoid);
  PooledByteBufAllocator alloc;
  const std::uint64_t since = LeakDetector::checkpoint();
  const std::uint8_t* first;
  {
    ByteBuf b = alloc.buffer(300);
    first = b.data();
    EXPECT_EQ(LeakDetector::live_count(since), 1u);
  }
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
  ByteBuf again = alloc.buffer(300);
  ASSERT_EQ(again.data(), first);  // the same block, from the thread cache
  auto live = LeakDetector::live_buffers(since);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].allocator, &alloc);
  again.release();
  EXPECT_EQ(LeakDetector::live_count(since), 0u);
}

TEST_F(LeakDetectorTest, CapturedReportsDoNotCountAsFailures) {
  LeakDetector::set_level(LeakDetectionLevel::paranoid);
  const std::uint64_t before = LeakDetector::reported_count();
  const std::uint64_t since = LeakDetector::checkpoint();
  ByteBuf kept = default_allocator().buffer(1);
  {
    LeakDetector::ScopedCapture outer;
    {
      LeakDetector::ScopedCapture inner;
      EXPECT_EQ(LeakDetector::report_live("inner", since), 1u);
      EXPECT_EQ(inner.reports().size(), 1u);
    }
    EXPECT_TRUE(outer.reports().empty());
  }
  EXPECT_EQ(LeakDetector::reported_count(), before);
}

}  // namespace
}  // namespace weft
