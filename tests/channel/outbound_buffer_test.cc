#include "weft/channel/outbound_buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

TEST(OutboundBufferTest, FlushedPartIsWhatTheTransportSees) {
  OutboundBuffer ob(8, 16);
  ob.add(ByteBuf::copy_of("abc"));
  ob.add(ByteBuf::copy_of("de"));
  iovec iov[4];
  EXPECT_EQ(ob.collect_iovecs(iov, 4, 1 << 20), 0);  // nothing flushed yet
  ob.add_flush();
  ob.add(ByteBuf::copy_of("later"));
  ASSERT_EQ(ob.collect_iovecs(iov, 4, 1 << 20), 2);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "abc");
  EXPECT_EQ(std::string(static_cast<char*>(iov[1].iov_base), iov[1].iov_len), "de");
  EXPECT_EQ(ob.flushed_bytes(), 5u);
  EXPECT_EQ(ob.pending_bytes(), 10u);
}

TEST(OutboundBufferTest, PartialWritesAdvanceAcrossBuffers) {
  OutboundBuffer ob(8, 16);
  ob.add(ByteBuf::copy_of("abc"));
  ob.add(ByteBuf::copy_of("defg"));
  ob.add_flush();
  ob.remove_bytes(4);  // all of "abc" and "d"
  iovec iov[4];
  ASSERT_EQ(ob.collect_iovecs(iov, 4, 1 << 20), 1);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "efg");
  ob.remove_bytes(3);
  EXPECT_FALSE(ob.has_flushed());
  EXPECT_TRUE(ob.empty());
  EXPECT_EQ(ob.pending_bytes(), 0u);
}

// The ring starts inline and moves to the heap as it grows; doing so while it has wrapped around
// keeps the order of what is queued.
TEST(OutboundBufferTest, OrderHoldsWhenTheRingWrapsAndGrows) {
  OutboundBuffer ob(1 << 20, 1 << 21);
  int next_in = 0, next_out = 0;
  auto add = [&](int n) {
    for (int i = 0; i < n; ++i) ob.add(ByteBuf::copy_of("b" + std::to_string(next_in++) + ";"));
  };
  auto take = [&](int n) {  // sends the first n queued buffers, checking each is the next expected
    ob.add_flush();
    iovec iov[64];
    ASSERT_GE(ob.collect_iovecs(iov, 64, 1 << 20), n);
    std::size_t bytes = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(std::string(static_cast<char*>(iov[i].iov_base), iov[i].iov_len), "b" + std::to_string(next_out++) + ";");
      bytes += iov[i].iov_len;
    }
    ob.remove_bytes(bytes);
  };
  add(2);
  take(1);  // head moves: the inline ring has wrapped once the next one is added
  add(1);
  add(30);  // grows twice (inline -> 16 -> 32) with the head not at slot 0
  take(20);
  add(40);
  take(52);
  EXPECT_TRUE(ob.empty());
  EXPECT_EQ(ob.pending_bytes(), 0u);
}

TEST(OutboundBufferTest, WaterMarksDriveWritabilityWithHysteresis) {
  OutboundBuffer ob(10, 20);
  EXPECT_FALSE(ob.add(ByteBuf::copy_of(std::string(20, 'x'))));  // at the mark, not above
  EXPECT_TRUE(ob.is_writable());
  EXPECT_TRUE(ob.add(ByteBuf::copy_of("y")));  // crosses high
  EXPECT_FALSE(ob.is_writable());
  EXPECT_FALSE(ob.add(ByteBuf::copy_of("z")));  // already unwritable: no second event
  ob.add_flush();
  EXPECT_FALSE(ob.remove_bytes(12));  // 10 left: not below low
  EXPECT_FALSE(ob.is_writable());
  EXPECT_TRUE(ob.remove_bytes(1));  // 9 < 10
  EXPECT_TRUE(ob.is_writable());
}

TEST(OutboundBufferTest, IovecCollectionIsBounded) {
  OutboundBuffer ob(1 << 20, 1 << 21);
  for (int i = 0; i < 100; ++i) ob.add(ByteBuf::copy_of("0123456789"));
  ob.add_flush();
  iovec iov[64];
  EXPECT_EQ(ob.collect_iovecs(iov, 64, 1 << 20), 64);
  EXPECT_EQ(ob.collect_iovecs(iov, 64, 25), 3);  // stops once the byte budget is reached
}

TEST(OutboundBufferTest, RingGrowsAndKeepsOrder) {
  OutboundBuffer ob(1 << 20, 1 << 21);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) ob.add(ByteBuf::copy_of(std::to_string(i)));
    ob.add_flush();
    iovec iov[64];
    int n = ob.collect_iovecs(iov, 64, 1 << 20);
    ASSERT_EQ(n, 40);
    for (int i = 0; i < 40; ++i) {
      EXPECT_EQ(std::string(static_cast<char*>(iov[i].iov_base), iov[i].iov_len), std::to_string(i));
    }
    ob.remove_bytes(ob.flushed_bytes());
    EXPECT_TRUE(ob.empty());
  }
}

TEST(OutboundBufferTest, ClearDropsEverything) {
  OutboundBuffer ob(1, 2);
  ob.add(ByteBuf::copy_of("abc"));
  ob.add_flush();
  ob.clear();
  EXPECT_TRUE(ob.empty());
  EXPECT_TRUE(ob.is_writable());
  EXPECT_EQ(ob.pending_bytes(), 0u);
}

// A region of a file the test does not read (the queue only keeps it and hands it to the transport).
FileRegion region(std::uint64_t offset, std::uint64_t length) {
  return FileRegion(std::make_shared<const FileHandle>(::open("/dev/null", O_RDONLY | O_CLOEXEC)), offset, length);
}

// A file takes its turn between buffers: the bytes before it are collected up to it, the file is
// the front once they are sent, and the bytes after it follow once all of it is.
TEST(OutboundBufferTest, AFileKeepsItsPlaceAmongBuffers) {
  OutboundBuffer ob(8, 1 << 20);
  ob.add(ByteBuf::copy_of("ab"));
  ob.add(ByteBuf::copy_of("cd"));
  EXPECT_FALSE(ob.add_file(region(10, 100)));
  ob.add(ByteBuf::copy_of("ef"));
  ob.add_flush();
  EXPECT_EQ(ob.pending_bytes(), 106u);
  EXPECT_EQ(ob.flushed_bytes(), 106u);
  EXPECT_EQ(ob.flushed_file(), nullptr) << "bytes are in front of it";
  iovec iov[8];
  ASSERT_EQ(ob.collect_iovecs(iov, 8, 1 << 20), 2) << "stops at the file";
  ob.remove_bytes(4);
  EXPECT_EQ(ob.collect_iovecs(iov, 8, 1 << 20), 0) << "the file is next";
  FileRegion* file = ob.flushed_file();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->offset(), 10u);
  ob.remove_file_bytes(60);
  ASSERT_EQ(ob.flushed_file(), file);
  EXPECT_EQ(file->offset(), 70u);
  EXPECT_EQ(file->length(), 40u);
  EXPECT_EQ(ob.pending_bytes(), 42u);
  ob.remove_file_bytes(40);
  EXPECT_EQ(ob.flushed_file(), nullptr);
  ASSERT_EQ(ob.collect_iovecs(iov, 8, 1 << 20), 1);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "ef");
  ob.remove_bytes(2);
  EXPECT_TRUE(ob.empty());
  EXPECT_EQ(ob.pending_bytes(), 0u);
}

// A file's remaining bytes count toward the water marks; the queue lets go of it once it is sent,
// and on clear().
TEST(OutboundBufferTest, AFileCountsTowardWritabilityAndIsReleased) {
  OutboundBuffer ob(100, 1000);
  FileRegion sent = region(0, 5000);
  std::weak_ptr<const FileHandle> sent_handle = sent.file();
  EXPECT_TRUE(ob.add_file(std::move(sent))) << "5000 bytes cross the high water mark";
  EXPECT_FALSE(ob.is_writable());
  FileRegion dropped = region(0, 10);
  std::weak_ptr<const FileHandle> dropped_handle = dropped.file();
  ob.add_file(std::move(dropped));
  EXPECT_FALSE(ob.add_file(region(0, 0))) << "an empty region queues nothing";
  ob.add_flush();
  EXPECT_FALSE(ob.remove_file_bytes(4850)) << "160 bytes left: not below the low water mark";
  EXPECT_TRUE(ob.remove_file_bytes(150)) << "10 left";
  EXPECT_TRUE(sent_handle.expired()) << "sent: the descriptor is let go";
  EXPECT_FALSE(dropped_handle.expired());
  ob.clear();
  EXPECT_TRUE(dropped_handle.expired()) << "dropped on close: the descriptor is let go";
  EXPECT_TRUE(ob.empty());
}

}  // namespace
}  // namespace weft
