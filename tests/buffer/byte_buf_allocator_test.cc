#include "weft/buffer/byte_buf_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "counting_allocator.h"

namespace weft {
namespace {

using test::CountingAllocator;

TEST(ByteBufAllocatorTest, DefaultAllocatorIsOneHeapAllocator) {
  ByteBufAllocator& a = default_allocator();
  EXPECT_EQ(&a, &default_allocator());
  EXPECT_NE(dynamic_cast<HeapByteBufAllocator*>(&a), nullptr);
}

TEST(ByteBufAllocatorTest, HeapAllocatorGivesAlignedExactCapacity) {
  HeapByteBufAllocator heap;
  for (std::size_t n : {0u, 1u, 7u, 256u, 4096u}) {
    ByteBuf b = heap.buffer(n, 1 << 20);
    EXPECT_EQ(b.capacity(), n);
    EXPECT_EQ(b.allocator(), &heap);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 16, 0u) << n;
  }
}

TEST(ByteBufAllocatorTest, HeapAllocatorGrowsInPlaceAndByCopy) {
  HeapByteBufAllocator heap;
  ByteBuf b = heap.buffer(8, 1 << 20);
  std::string expected;
  for (int i = 0; i < 5000; ++i) {
    const char c = static_cast<char>('a' + i % 26);
    b.write_u8(static_cast<std::uint8_t>(c));
    expected.push_back(c);
  }
  EXPECT_EQ(b.view(), expected);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 16, 0u);
  ByteBuf keep = b.slice();
  const std::uint8_t* old_data = b.data();
  b.write_zero(b.writable_bytes() + 1);  // grows while shared: copy on grow
  EXPECT_NE(b.data(), old_data);
  EXPECT_EQ(keep.view(), expected);
  EXPECT_EQ(b.view().substr(0, expected.size()), expected);
  EXPECT_EQ(keep.ref_count(), 1u);
}

TEST(ByteBufAllocatorTest, SizeClassAllocatorCapacityIsTheBlockSizeUpToMax) {
  CountingAllocator alloc({.granularity = 128, .in_place_realloc = true});
  ByteBuf b = alloc.buffer(100, 1000);
  EXPECT_EQ(b.capacity(), 128u);  // the size class, not the request
  ByteBuf c = alloc.buffer(100, 120);
  EXPECT_EQ(c.capacity(), 120u);  // clamped to max_capacity
  EXPECT_EQ(c.max_capacity(), 120u);
  c.write_zero(120);
  EXPECT_THROW(c.write_u8(0), std::length_error);
  b.write_zero(129);  // grows to 256 (policy), which is already a size class
  EXPECT_EQ(b.capacity(), 256u);
}

TEST(ByteBufAllocatorTest, DefaultReallocateCopiesAndFreesTheOldBlock) {
  CountingAllocator alloc({.granularity = 1, .in_place_realloc = false});
  ByteBuf b = alloc.buffer(4, 1024);
  b.write_bytes("abcd");
  b.set_u8(0, 'A');
  b.write_bytes("efgh");
  EXPECT_EQ(b.view(), "Abcdefgh");
  EXPECT_EQ(alloc.reallocations(), 1);
  EXPECT_EQ(alloc.allocations(), 2);
  EXPECT_EQ(alloc.frees(), 1);
  EXPECT_EQ(alloc.live(), 1u);
  b.release();
  EXPECT_EQ(alloc.live(), 0u);
  EXPECT_EQ(alloc.bad_frees(), 0);
}

// Every block handed out comes back exactly once, whatever the mix of growth, sharing and copying.
TEST(ByteBufAllocatorTest, EveryBlockIsReturnedExactlyOnce) {
  for (bool in_place : {true, false}) {
    CountingAllocator alloc({.granularity = 16, .in_place_realloc = in_place});
    {
      std::vector<ByteBuf> kept;
      for (int i = 0; i < 200; ++i) {
        ByteBuf b = alloc.buffer(static_cast<std::size_t>(i % 7), 1 << 16);
        b.write_zero(static_cast<std::size_t>(i * 3));  // grows in place or by copy
        if (i % 3 == 0) kept.push_back(b.slice());
        if (i % 5 == 0) kept.push_back(b.duplicate());
        b.write_zero(64);  // copy on grow when shared
        if (i % 4 == 0) kept.push_back(b.copy());
        if (i % 2 == 0) kept.push_back(std::move(b));
      }
      EXPECT_GT(alloc.live(), 0u);
      std::reverse(kept.begin(), kept.end());
    }
    EXPECT_EQ(alloc.live(), 0u) << "in_place=" << in_place;
    EXPECT_EQ(alloc.bad_frees(), 0) << "in_place=" << in_place;
    // The default reallocate_storage returns old blocks through free_storage too.
    EXPECT_EQ(alloc.frees(), alloc.allocations()) << "in_place=" << in_place;
  }
}

TEST(ByteBufAllocatorTest, LastReleaseOnAnotherThreadFreesThere) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(64, 64);
  b.write_bytes("cross-thread");
  std::thread::id worker_id;
  std::string seen;
  std::thread worker([buf = std::move(b), &worker_id, &seen]() mutable {
    worker_id = std::this_thread::get_id();
    seen = buf.to_string();
    buf.release();
  });
  worker.join();
  EXPECT_EQ(seen, "cross-thread");
  EXPECT_EQ(alloc.frees(), 1);
  ASSERT_EQ(alloc.free_threads().size(), 1u);
  EXPECT_EQ(alloc.free_threads()[0], worker_id);
  EXPECT_EQ(alloc.bad_frees(), 0);
}

TEST(ByteBufAllocatorTest, SlicesReleasedConcurrentlyFreeTheBlockOnce) {
  constexpr int kRounds = 200;
  constexpr int kThreads = 4;
  CountingAllocator alloc;
  for (int round = 0; round < kRounds; ++round) {
    ByteBuf parent = alloc.buffer(kThreads * 8, kThreads * 8);
    for (int t = 0; t < kThreads; ++t) parent.write_u64(static_cast<std::uint64_t>(round * kThreads + t));
    std::atomic<int> ok{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      ByteBuf part = parent.slice(static_cast<std::size_t>(t) * 8, 8);
      threads.emplace_back([part = std::move(part), &ok, &go, round, t]() mutable {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        if (part.read_u64() == static_cast<std::uint64_t>(round * kThreads + t)) ok.fetch_add(1);
        ByteBuf extra = part.duplicate();  // more traffic on the count
        part.release();
      });
    }
    EXPECT_EQ(parent.ref_count(), static_cast<std::uint32_t>(kThreads + 1));
    if (round % 2 == 0) parent.release();  // sometimes the parent goes first
    go.store(true, std::memory_order_release);
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), kThreads);
    if (round % 2 != 0) {
      EXPECT_EQ(parent.ref_count(), 1u);
      parent.release();
    }
    ASSERT_EQ(alloc.frees(), round + 1);
  }
  EXPECT_EQ(alloc.live(), 0u);
  EXPECT_EQ(alloc.bad_frees(), 0);
}

TEST(ByteBufAllocatorTest, BuffersAllocatedOnManyThreads) {
  CountingAllocator alloc({.granularity = 32, .in_place_realloc = true});
  std::vector<std::thread> threads;
  std::vector<ByteBuf> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&alloc, &results, t] {
      for (int i = 0; i < 500; ++i) {
        ByteBuf b = alloc.buffer(8);
        b.write_u32(static_cast<std::uint32_t>(i));
        b.write_zero(static_cast<std::size_t>(i % 100));
        if (b.read_u32() != static_cast<std::uint32_t>(i)) return;
      }
      ByteBuf last = alloc.buffer(4);
      last.write_u32(static_cast<std::uint32_t>(t));
      results[static_cast<std::size_t>(t)] = std::move(last);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(results[static_cast<std::size_t>(t)].get_u32(0), static_cast<std::uint32_t>(t));
  results.clear();  // released on this thread, allocated on others
  EXPECT_EQ(alloc.live(), 0u);
  EXPECT_EQ(alloc.allocations(), 4 * 501);
  EXPECT_EQ(alloc.frees(), 4 * 501);
  EXPECT_EQ(alloc.bad_frees(), 0);
}

}  // namespace
}  // namespace weft
