#include "weft/buffer/byte_buf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "counting_allocator.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft {
namespace {

using test::CountingAllocator;

// The readable bytes as a vector, for byte-pattern comparisons.
std::vector<std::uint8_t> bytes_of(const ByteBuf& b) {
  return std::vector<std::uint8_t>(b.read_ptr(), b.read_ptr() + b.readable_bytes());
}

// ---- basics ---------------------------------------------------------------------------------------

TEST(ByteBufTest, HandleIsSmallAndMoveOnly) {
  EXPECT_LE(sizeof(ByteBuf), 40u);
  EXPECT_FALSE(std::is_copy_constructible_v<ByteBuf>);
  EXPECT_FALSE(std::is_copy_assignable_v<ByteBuf>);
  EXPECT_TRUE(std::is_nothrow_move_constructible_v<ByteBuf>);
  EXPECT_TRUE(std::is_nothrow_move_assignable_v<ByteBuf>);
}

TEST(ByteBufTest, DefaultConstructedIsEmptyAndCannotBeWritten) {
  ByteBuf b;
  EXPECT_FALSE(b.has_storage());
  EXPECT_EQ(b.ref_count(), 0u);
  EXPECT_EQ(b.allocator(), nullptr);
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_EQ(b.max_capacity(), 0u);
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 0u);
  EXPECT_EQ(b.readable_bytes(), 0u);
  EXPECT_EQ(b.writable_bytes(), 0u);
  EXPECT_FALSE(b.is_readable());
  EXPECT_TRUE(b.view().empty());
  EXPECT_EQ(b.to_string(), "");
  EXPECT_EQ(b.index_of(std::uint8_t{0}), -1);
  EXPECT_EQ(b.index_of("x"), -1);
  EXPECT_NO_THROW(b.ensure_writable(0));
  EXPECT_THROW(b.ensure_writable(1), std::length_error);
  EXPECT_THROW(b.write_u8(1), std::length_error);
  EXPECT_THROW(b.read_u8(), std::out_of_range);
  EXPECT_THROW(b.get_u8(0), std::out_of_range);
  EXPECT_FALSE(b.slice().has_storage());
  EXPECT_FALSE(b.duplicate().has_storage());
  ByteBuf c = b.copy();  // a real, growable buffer from the default allocator
  EXPECT_TRUE(c.has_storage());
  EXPECT_EQ(c.allocator(), &default_allocator());
  EXPECT_EQ(c.readable_bytes(), 0u);
  c.write_u8(7);
  EXPECT_EQ(c.read_u8(), 7);
  b.release();  // no-op
  EXPECT_FALSE(b.has_storage());
}

TEST(ByteBufTest, AllocatorBufferStartsEmptyWithRequestedCapacity) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(100, 1000);
  EXPECT_TRUE(b.has_storage());
  EXPECT_EQ(b.allocator(), &alloc);
  EXPECT_EQ(b.ref_count(), 1u);
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 0u);
  EXPECT_EQ(b.capacity(), 100u);
  EXPECT_EQ(b.max_capacity(), 1000u);
  EXPECT_EQ(b.writable_bytes(), 100u);
  EXPECT_EQ(b.max_writable_bytes(), 1000u);
  EXPECT_EQ(alloc.allocations(), 1);
  EXPECT_EQ(alloc.live(), 1u);
}

TEST(ByteBufTest, AllocatorBufferArgumentChecks) {
  CountingAllocator alloc;
  EXPECT_THROW(alloc.buffer(11, 10), std::invalid_argument);
  EXPECT_EQ(alloc.allocations(), 0);
  ByteBuf b = alloc.buffer(0, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(b.max_capacity(), kMaxCapacityLimit);
  ByteBuf d = alloc.buffer();
  EXPECT_EQ(d.capacity(), kDefaultInitialCapacity);
  EXPECT_EQ(d.max_capacity(), kDefaultMaxCapacity);
}

TEST(ByteBufTest, CopyOfHoldsACopy) {
  std::string text = "hello, weft";
  ByteBuf b = ByteBuf::copy_of(text);
  text[0] = 'J';
  EXPECT_EQ(b.view(), "hello, weft");
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 11u);
  EXPECT_EQ(b.allocator(), &default_allocator());
  EXPECT_EQ(b.ref_count(), 1u);

  const std::uint8_t raw[] = {0, 1, 2, 0xff};
  ByteBuf r = ByteBuf::copy_of(raw, sizeof raw);
  EXPECT_EQ(bytes_of(r), (std::vector<std::uint8_t>{0, 1, 2, 0xff}));

  ByteBuf e = ByteBuf::copy_of("");
  EXPECT_TRUE(e.has_storage());
  EXPECT_EQ(e.readable_bytes(), 0u);
  e.write_bytes("grows");
  EXPECT_EQ(e.view(), "grows");
}

// ---- indices ----------------------------------------------------------------------------------------

TEST(ByteBufTest, IndexSettersAreBoundsChecked) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16, 16);
  b.write_bytes("abcdefgh");
  EXPECT_THROW(b.set_reader_index(9), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 0u);
  b.set_reader_index(8);
  EXPECT_EQ(b.readable_bytes(), 0u);
  b.set_reader_index(3);
  EXPECT_EQ(b.view(), "defgh");

  EXPECT_THROW(b.set_writer_index(2), std::out_of_range);   // below reader
  EXPECT_THROW(b.set_writer_index(17), std::out_of_range);  // above capacity
  EXPECT_EQ(b.writer_index(), 8u);
  b.set_writer_index(16);
  EXPECT_EQ(b.writable_bytes(), 0u);
  b.set_writer_index(5);
  EXPECT_EQ(b.view(), "de");

  EXPECT_THROW(b.set_index(4, 3), std::out_of_range);
  EXPECT_THROW(b.set_index(0, 17), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 3u);
  EXPECT_EQ(b.writer_index(), 5u);
  b.set_index(1, 4);
  EXPECT_EQ(b.view(), "bcd");
}

TEST(ByteBufTest, WritePtrAdvanceWriterAndSkipBytes) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  std::memcpy(b.write_ptr(), "xyz", 3);  // as recv() would
  b.advance_writer(3);
  EXPECT_EQ(b.view(), "xyz");
  EXPECT_EQ(b.write_ptr(), b.data() + 3);
  EXPECT_EQ(b.read_ptr(), b.data());
  EXPECT_THROW(b.advance_writer(6), std::out_of_range);
  EXPECT_EQ(b.writer_index(), 3u);
  b.advance_writer(5);
  EXPECT_EQ(b.writable_bytes(), 0u);

  b.skip_bytes(2);
  EXPECT_EQ(b.reader_index(), 2u);
  EXPECT_EQ(*b.read_ptr(), 'z');
  EXPECT_THROW(b.skip_bytes(7), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 2u);
  b.skip_bytes(6);
  EXPECT_FALSE(b.is_readable());
}

TEST(ByteBufTest, ReadablePredicates) {
  ByteBuf b = ByteBuf::copy_of("abc");
  EXPECT_TRUE(b.is_readable());
  EXPECT_TRUE(b.is_readable(3));
  EXPECT_FALSE(b.is_readable(4));
  EXPECT_EQ(b.is_writable(b.writable_bytes()), true);
  EXPECT_EQ(b.is_writable(b.writable_bytes() + 1), false);
}

TEST(ByteBufTest, ClearResetsIndicesOnly) {
  ByteBuf b = ByteBuf::copy_of("abcdef");
  const std::size_t capacity = b.capacity();
  b.skip_bytes(2);
  b.clear();
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 0u);
  EXPECT_EQ(b.capacity(), capacity);
  EXPECT_EQ(b.get_u8(0), 'a');  // bytes stay
}

TEST(ByteBufTest, DiscardReadBytesMovesReadableToFront) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16, 16);
  b.write_bytes("0123456789");
  b.skip_bytes(4);
  b.discard_read_bytes();
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 6u);
  EXPECT_EQ(b.view(), "456789");
  EXPECT_EQ(b.writable_bytes(), 10u);

  b.discard_read_bytes();  // reader at 0: nothing changes
  EXPECT_EQ(b.view(), "456789");

  b.skip_bytes(6);  // everything read
  b.discard_read_bytes();
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.writer_index(), 0u);
  EXPECT_EQ(b.writable_bytes(), 16u);

  ByteBuf empty;
  empty.discard_read_bytes();
  EXPECT_EQ(empty.writer_index(), 0u);
}

// ---- integers -----------------------------------------------------------------------------------------

TEST(ByteBufTest, BigEndianByteLayout) {
  ByteBuf b = ByteBuf::copy_of("");
  b.write_u8(0xAB);
  b.write_u16(0x0102);
  b.write_u32(0x01020304);
  b.write_u64(0x0102030405060708ULL);
  EXPECT_EQ(b.hex_dump(), "ab" "0102" "01020304" "0102030405060708");
}

TEST(ByteBufTest, LittleEndianByteLayout) {
  ByteBuf b = ByteBuf::copy_of("");
  b.write_u16_le(0x0102);
  b.write_u32_le(0x01020304);
  b.write_u64_le(0x0102030405060708ULL);
  EXPECT_EQ(b.hex_dump(), "0201" "04030201" "0807060504030201");
}

TEST(ByteBufTest, UnsignedRoundTrips) {
  ByteBuf b = ByteBuf::copy_of("");
  b.write_u8(0xFE);
  b.write_u16(0xBEEF);
  b.write_u32(0xDEADBEEF);
  b.write_u64(0xFEEDFACECAFEBEEFULL);
  b.write_u16_le(0xBEEF);
  b.write_u32_le(0xDEADBEEF);
  b.write_u64_le(0xFEEDFACECAFEBEEFULL);
  EXPECT_EQ(b.readable_bytes(), 1u + 2 + 4 + 8 + 2 + 4 + 8);
  EXPECT_EQ(b.read_u8(), 0xFE);
  EXPECT_EQ(b.read_u16(), 0xBEEF);
  EXPECT_EQ(b.read_u32(), 0xDEADBEEFu);
  EXPECT_EQ(b.read_u64(), 0xFEEDFACECAFEBEEFULL);
  EXPECT_EQ(b.read_u16_le(), 0xBEEF);
  EXPECT_EQ(b.read_u32_le(), 0xDEADBEEFu);
  EXPECT_EQ(b.read_u64_le(), 0xFEEDFACECAFEBEEFULL);
  EXPECT_FALSE(b.is_readable());
}

TEST(ByteBufTest, SignedRoundTripsAndPatterns) {
  ByteBuf b = ByteBuf::copy_of("");
  b.write_i8(-1);
  b.write_i16(-2);
  b.write_i32(-3);
  b.write_i64(std::numeric_limits<std::int64_t>::min());
  b.write_i16_le(-2);
  b.write_i32_le(-3);
  b.write_i64_le(-4);
  EXPECT_EQ(b.hex_dump(),
            "ff" "fffe" "fffffffd" "8000000000000000" "feff" "fdffffff" "fcffffffffffffff");
  EXPECT_EQ(b.read_i8(), -1);
  EXPECT_EQ(b.read_i16(), -2);
  EXPECT_EQ(b.read_i32(), -3);
  EXPECT_EQ(b.read_i64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(b.read_i16_le(), -2);
  EXPECT_EQ(b.read_i32_le(), -3);
  EXPECT_EQ(b.read_i64_le(), -4);
}

TEST(ByteBufTest, BigAndLittleEndianReadTheSameBytesDifferently) {
  const std::uint8_t raw[] = {1, 2, 3, 4, 5, 6, 7, 8};
  ByteBuf b = ByteBuf::copy_of(raw, sizeof raw);
  EXPECT_EQ(b.get_u16(0), 0x0102);
  EXPECT_EQ(b.get_u16_le(0), 0x0201);
  EXPECT_EQ(b.get_u32(0), 0x01020304u);
  EXPECT_EQ(b.get_u32_le(0), 0x04030201u);
  EXPECT_EQ(b.get_u64(0), 0x0102030405060708ULL);
  EXPECT_EQ(b.get_u64_le(0), 0x0807060504030201ULL);
  EXPECT_EQ(b.get_u32(4), 0x05060708u);
  EXPECT_EQ(b.get_i8(7), 8);
  EXPECT_EQ(b.get_i16(6), 0x0708);
  EXPECT_EQ(b.get_i16_le(6), 0x0807);
  EXPECT_EQ(b.get_i32(0), 0x01020304);
  EXPECT_EQ(b.get_i32_le(0), 0x04030201);
  EXPECT_EQ(b.get_i64(0), 0x0102030405060708LL);
  EXPECT_EQ(b.get_i64_le(0), 0x0807060504030201LL);
  EXPECT_EQ(b.reader_index(), 0u);  // get_* move nothing
  EXPECT_EQ(b.writer_index(), 8u);
}

TEST(ByteBufTest, SetWritesAtAbsoluteIndexWithoutMovingIndices) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(32, 32);
  b.write_zero(16);
  b.skip_bytes(1);
  b.set_u8(0, 0x11);
  b.set_u16(1, 0x2233);
  b.set_u32(3, 0x44556677);
  b.set_u16_le(7, 0x2233);
  b.set_u64(9, 0x0102030405060708ULL);
  EXPECT_EQ(b.reader_index(), 1u);
  EXPECT_EQ(b.writer_index(), 16u);
  EXPECT_EQ(b.get_u8(0), 0x11);
  EXPECT_EQ(b.hex_dump(), "2233" "44556677" "3322" "01020304050607");  // up to the writer (16)
  b.set_u32_le(0, 0x01020304);
  b.set_u64_le(4, 0x0102030405060708ULL);
  EXPECT_EQ(b.get_u32(0), 0x04030201u);
  EXPECT_EQ(b.get_u64(4), 0x0807060504030201ULL);
  b.set_i8(0, -1);
  b.set_i16(0, -2);
  EXPECT_EQ(b.get_i16(0), -2);
  b.set_i32(0, -3);
  EXPECT_EQ(b.get_i32(0), -3);
  b.set_i64(0, -4);
  EXPECT_EQ(b.get_i64(0), -4);
  b.set_i16_le(0, -5);
  EXPECT_EQ(b.get_i16_le(0), -5);
  b.set_i32_le(0, -6);
  EXPECT_EQ(b.get_i32_le(0), -6);
  b.set_i64_le(0, -7);
  EXPECT_EQ(b.get_i64_le(0), -7);
  // Beyond the writer but inside the capacity is allowed (as Netty).
  b.set_u32(28, 0xCAFEBABE);
  EXPECT_EQ(b.get_u32(28), 0xCAFEBABEu);
}

TEST(ByteBufTest, AbsoluteAccessOutsideCapacityThrows) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  EXPECT_NO_THROW(b.get_u64(0));
  EXPECT_NO_THROW(b.get_u32(4));
  EXPECT_THROW(b.get_u32(5), std::out_of_range);
  EXPECT_THROW(b.get_u8(8), std::out_of_range);
  EXPECT_THROW(b.set_u16(7, 1), std::out_of_range);
  EXPECT_THROW(b.set_u8(8, 1), std::out_of_range);
  constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(b.get_u64(kHuge), std::out_of_range);  // no wrap-around
  EXPECT_THROW(b.get_u16(kHuge - 1), std::out_of_range);
  EXPECT_THROW(b.set_u32(kHuge - 2, 0), std::out_of_range);
  ByteBuf small = alloc.buffer(2, 2);
  EXPECT_THROW(small.get_u32(0), std::out_of_range);  // wider than the whole buffer
}

TEST(ByteBufTest, ReadPastReadableThrowsAndMovesNothing) {
  ByteBuf b = default_allocator().buffer(8);
  b.write_bytes("\x01\x02\x03");
  EXPECT_THROW(b.read_u32(), std::out_of_range);
  EXPECT_THROW(b.read_u64_le(), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 0u);
  EXPECT_EQ(b.read_u16(), 0x0102);
  EXPECT_THROW(b.read_u16(), std::out_of_range);
  EXPECT_THROW(b.read_i16_le(), std::out_of_range);
  EXPECT_EQ(b.read_u8(), 3);
  EXPECT_THROW(b.read_u8(), std::out_of_range);
  EXPECT_THROW(b.read_i8(), std::out_of_range);
  // Bytes written beyond the writer by set_* are not readable.
  b.set_u8(3, 9);
  EXPECT_THROW(b.read_u8(), std::out_of_range);
}

// ---- growth ---------------------------------------------------------------------------------------------

TEST(ByteBufTest, CalculateNewCapacityPolicy) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  auto calc = [](std::size_t n, std::size_t max) { return ByteBufAllocator::calculate_new_capacity(n, max); };
  EXPECT_EQ(calc(0, 1000), 64u);
  EXPECT_EQ(calc(1, 1000), 64u);
  EXPECT_EQ(calc(64, 1000), 64u);
  EXPECT_EQ(calc(65, 1000), 128u);
  EXPECT_EQ(calc(600, 1000), 1000u);  // 1024 capped at max
  EXPECT_EQ(calc(1000, 1000), 1000u);
  EXPECT_THROW(calc(1001, 1000), std::length_error);
  EXPECT_EQ(calc(3 * kMiB, kDefaultMaxCapacity), 4 * kMiB);
  EXPECT_EQ(calc(4 * kMiB, kDefaultMaxCapacity), 4 * kMiB);
  EXPECT_EQ(calc(4 * kMiB + 1, kDefaultMaxCapacity), 8 * kMiB);
  EXPECT_EQ(calc(9 * kMiB, kDefaultMaxCapacity), 12 * kMiB);
  EXPECT_EQ(calc(12 * kMiB, kDefaultMaxCapacity), 12 * kMiB);
  EXPECT_EQ(calc(9 * kMiB, 10 * kMiB), 10 * kMiB);
  EXPECT_EQ(calc(kMaxCapacityLimit, kMaxCapacityLimit), kMaxCapacityLimit);
}

TEST(ByteBufTest, WritesGrowByThePolicyAndKeepContent) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(0, 1000);
  EXPECT_EQ(b.capacity(), 0u);
  std::vector<std::size_t> capacities;
  for (int i = 0; i < 700; ++i) {
    b.write_u8(static_cast<std::uint8_t>(i));
    if (capacities.empty() || capacities.back() != b.capacity()) capacities.push_back(b.capacity());
  }
  EXPECT_EQ(capacities, (std::vector<std::size_t>{64, 128, 256, 512, 1000}));
  for (int i = 0; i < 700; ++i) ASSERT_EQ(b.get_u8(i), static_cast<std::uint8_t>(i));
  EXPECT_EQ(b.writer_index(), 700u);
  EXPECT_EQ(alloc.live(), 1u);  // sole owner: grown in place
  EXPECT_EQ(alloc.reallocations(), 5);
}

TEST(ByteBufTest, GrowthPreservesBytesSetBeyondTheWriter) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 1024);
  b.set_u32(4, 0xA1B2C3D4);
  b.ensure_writable(100);
  EXPECT_GE(b.writable_bytes(), 100u);
  EXPECT_EQ(b.get_u32(4), 0xA1B2C3D4u);
}

TEST(ByteBufTest, EnsureWritableBeyondMaxThrowsAndLeavesBufferUnchanged) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(4, 10);
  b.write_bytes("abc");
  EXPECT_THROW(b.ensure_writable(8), std::length_error);
  EXPECT_THROW(b.write_bytes("12345678"), std::length_error);
  EXPECT_THROW(b.write_zero(8), std::length_error);
  EXPECT_EQ(b.capacity(), 4u);
  EXPECT_EQ(b.view(), "abc");
  b.ensure_writable(7);  // exactly up to max_capacity
  EXPECT_EQ(b.capacity(), 10u);
  b.write_bytes("defghij");
  EXPECT_EQ(b.view(), "abcdefghij");
  EXPECT_THROW(b.write_u8(0), std::length_error);
  EXPECT_NO_THROW(b.ensure_writable(0));
  // A huge request must not wrap around.
  EXPECT_THROW(b.ensure_writable(std::numeric_limits<std::size_t>::max()), std::length_error);
}

TEST(ByteBufTest, LargeGrowthUsesMegabyteSteps) {
  ByteBuf b = ByteBuf::copy_of("");
  const std::string chunk(1 << 20, 'q');
  for (int i = 0; i < 5; ++i) b.write_bytes(chunk);
  EXPECT_EQ(b.readable_bytes(), 5u << 20);
  EXPECT_EQ(b.capacity(), 8u << 20);
  EXPECT_EQ(b.index_of(std::uint8_t{'x'}), -1);
  EXPECT_EQ(b.get_u8((5u << 20) - 1), 'q');
}

TEST(ByteBufTest, FailedAllocationLeavesBufferUnchanged) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(4, 100);
  b.write_bytes("wxyz");
  alloc.set_failing(true);
  EXPECT_THROW(b.write_u8(1), std::bad_alloc);  // in-place path
  EXPECT_EQ(b.view(), "wxyz");
  EXPECT_EQ(b.capacity(), 4u);
  ByteBuf s = b.slice();
  EXPECT_THROW(b.write_u8(1), std::bad_alloc);  // copy-on-grow path
  EXPECT_EQ(b.view(), "wxyz");
  EXPECT_TRUE(b.shares_storage_with(s));
  EXPECT_EQ(b.ref_count(), 2u);
  alloc.set_failing(false);
  b.write_u8('!');
  EXPECT_EQ(b.view(), "wxyz!");
}

// ---- byte ranges --------------------------------------------------------------------------------------

TEST(ByteBufTest, WriteAndReadBytes) {
  ByteBuf b = ByteBuf::copy_of("");
  b.write_bytes("hello ");
  const char tail[] = {'w', 'o', 'r', 'l', 'd'};
  b.write_bytes(tail, sizeof tail);
  b.write_bytes(nullptr, 0);
  EXPECT_EQ(b.view(), "hello world");
  char out[6] = {};
  b.read_bytes(out, 5);
  EXPECT_EQ(std::string_view(out, 5), "hello");
  EXPECT_EQ(b.reader_index(), 5u);
  EXPECT_THROW(b.read_bytes(out, 7), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 5u);
  b.read_bytes(out, 0);
  b.read_bytes(out, 6);
  EXPECT_EQ(std::string_view(out, 6), " world");
  EXPECT_FALSE(b.is_readable());
}

TEST(ByteBufTest, WriteBytesFromAnotherBufferLeavesSourceUnchanged) {
  ByteBuf src = ByteBuf::copy_of("..payload");
  src.skip_bytes(2);
  ByteBuf dst = ByteBuf::copy_of("head:");
  dst.write_bytes(src);
  EXPECT_EQ(dst.view(), "head:payload");
  EXPECT_EQ(src.reader_index(), 2u);
  EXPECT_EQ(src.view(), "payload");
  dst.write_bytes(ByteBuf());  // empty source
  EXPECT_EQ(dst.view(), "head:payload");
}

TEST(ByteBufTest, WriteBytesOfItselfDoublesTheContentEvenWhenGrowing) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(6, 64);
  b.write_bytes("xabcde");
  b.skip_bytes(1);
  b.write_bytes(b);  // needs growth: the source moves with the buffer
  EXPECT_EQ(b.view(), "abcdeabcde");
}

TEST(ByteBufTest, WriteBytesFromPointerIntoOwnStorageSurvivesGrowth) {
  CountingAllocator alloc({.granularity = 1, .in_place_realloc = true});
  ByteBuf b = alloc.buffer(4, 64);
  b.write_bytes("abcd");
  b.write_bytes(b.read_ptr() + 1, 3);  // grows; our allocator moves the data on realloc
  EXPECT_EQ(b.view(), "abcdbcd");
}

TEST(ByteBufTest, WriteBytesFromSharedSliceWhileGrowing) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(4, 64);
  b.write_bytes("abcd");
  ByteBuf s = b.slice(1, 2);
  b.write_bytes(s);  // copy on grow while the source shares the old block
  EXPECT_EQ(b.view(), "abcdbc");
  EXPECT_EQ(s.view(), "bc");
}

TEST(ByteBufTest, WriteZero) {
  ByteBuf b = ByteBuf::copy_of("a");
  b.write_zero(3);
  b.write_zero(0);
  EXPECT_EQ(b.hex_dump(), "61000000");
}

TEST(ByteBufTest, GetAndSetBytes) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  b.set_bytes(2, "xyz", 3);
  char out[3];
  b.get_bytes(2, out, 3);
  EXPECT_EQ(std::string_view(out, 3), "xyz");
  EXPECT_EQ(b.writer_index(), 0u);
  EXPECT_THROW(b.set_bytes(6, "xyz", 3), std::out_of_range);
  EXPECT_THROW(b.get_bytes(7, out, 2), std::out_of_range);
  EXPECT_THROW(b.get_bytes(std::numeric_limits<std::size_t>::max(), out, 2), std::out_of_range);
  b.get_bytes(8, out, 0);  // empty range at the end is fine
}

// ---- slices and sharing -------------------------------------------------------------------------------

TEST(ByteBufTest, SliceHasItsOwnWindowAndIndices) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16, 64);
  b.write_bytes("0123456789");
  b.skip_bytes(1);
  ByteBuf s = b.slice(3, 4);
  EXPECT_EQ(s.reader_index(), 0u);
  EXPECT_EQ(s.writer_index(), 4u);
  EXPECT_EQ(s.capacity(), 4u);
  EXPECT_EQ(s.max_capacity(), 4u);
  EXPECT_EQ(s.view(), "3456");
  EXPECT_EQ(s.get_u8(0), '3');
  EXPECT_EQ(s.data(), b.data() + 3);
  EXPECT_EQ(s.allocator(), &alloc);
  EXPECT_TRUE(s.shares_storage_with(b));
  EXPECT_EQ(b.reader_index(), 1u);  // parent untouched
  EXPECT_THROW(s.get_u8(4), std::out_of_range);
  EXPECT_EQ(s.read_u16(), 0x3334);
  EXPECT_EQ(b.reader_index(), 1u);
  EXPECT_THROW(b.slice(10, 7), std::out_of_range);
  EXPECT_THROW(b.slice(std::numeric_limits<std::size_t>::max(), 2), std::out_of_range);
  ByteBuf edge = b.slice(16, 0);
  EXPECT_TRUE(edge.has_storage());
  EXPECT_EQ(edge.capacity(), 0u);
}

TEST(ByteBufTest, SliceSharesMemoryBothWays) {
  ByteBuf b = ByteBuf::copy_of("abcdef");
  ByteBuf s = b.slice(2, 3);
  b.set_u8(3, 'X');
  EXPECT_EQ(s.view(), "cXe");
  s.set_u8(0, 'Y');
  EXPECT_EQ(b.view(), "abYXef");
  s.clear();  // a slice may write inside its window
  s.write_bytes("123");
  EXPECT_EQ(b.view(), "ab123f");
}

TEST(ByteBufTest, SliceCannotGrow) {
  ByteBuf b = ByteBuf::copy_of("abcdef");
  ByteBuf s = b.slice(0, 3);
  EXPECT_EQ(s.writable_bytes(), 0u);
  EXPECT_THROW(s.ensure_writable(1), std::length_error);
  EXPECT_THROW(s.write_u8(1), std::length_error);
  EXPECT_THROW(s.write_bytes("z"), std::length_error);
  EXPECT_EQ(b.view(), "abcdef");
  ByteBuf d = s.duplicate();  // a duplicate of a slice is fixed too
  EXPECT_THROW(d.write_u8(1), std::length_error);
}

TEST(ByteBufTest, SliceDefaultIsTheReadableRegion) {
  ByteBuf b = ByteBuf::copy_of("GET / HTTP/1.1");
  b.skip_bytes(4);
  ByteBuf s = b.slice();
  EXPECT_EQ(s.view(), "/ HTTP/1.1");
  EXPECT_EQ(s.data(), b.read_ptr());
  ByteBuf ss = s.slice(2, 4);  // slice of a slice
  EXPECT_EQ(ss.view(), "HTTP");
  EXPECT_EQ(ss.data(), b.read_ptr() + 2);
  EXPECT_EQ(b.ref_count(), 3u);
}

TEST(ByteBufTest, ReadSliceAdvancesReader) {
  ByteBuf b = ByteBuf::copy_of("key=value");
  ByteBuf key = b.read_slice(3);
  EXPECT_EQ(key.view(), "key");
  EXPECT_EQ(b.reader_index(), 3u);
  EXPECT_EQ(b.read_u8(), '=');
  EXPECT_THROW(b.read_slice(6), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 4u);
  EXPECT_EQ(b.read_slice(5).view(), "value");
  EXPECT_FALSE(b.is_readable());
  ByteBuf none = b.read_slice(0);
  EXPECT_EQ(none.readable_bytes(), 0u);
}

TEST(ByteBufTest, RefCountsFollowHandles) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  EXPECT_EQ(b.ref_count(), 1u);
  {
    ByteBuf s1 = b.slice(0, 4);
    EXPECT_EQ(b.ref_count(), 2u);
    ByteBuf d = b.duplicate();
    EXPECT_EQ(b.ref_count(), 3u);
    EXPECT_EQ(s1.ref_count(), 3u);
    ByteBuf moved = std::move(s1);  // a move takes no reference
    EXPECT_EQ(b.ref_count(), 3u);
    d.release();
    EXPECT_EQ(b.ref_count(), 2u);
    EXPECT_EQ(d.ref_count(), 0u);
  }
  EXPECT_EQ(b.ref_count(), 1u);
  EXPECT_EQ(alloc.frees(), 0);
  ByteBuf copy = b.copy();  // a copy takes no reference on the original
  EXPECT_EQ(b.ref_count(), 1u);
  EXPECT_EQ(copy.ref_count(), 1u);
  EXPECT_FALSE(copy.shares_storage_with(b));
}

TEST(ByteBufTest, SliceKeepsStorageAliveAfterParentIsDestroyed) {
  CountingAllocator alloc;
  ByteBuf s;
  {
    ByteBuf b = alloc.buffer(16, 16);
    b.write_bytes("keep me alive");
    s = b.slice(5, 2);
  }
  EXPECT_EQ(alloc.frees(), 0);
  EXPECT_EQ(alloc.live(), 1u);
  EXPECT_EQ(s.ref_count(), 1u);
  EXPECT_EQ(s.view(), "me");
  s.release();
  EXPECT_EQ(alloc.frees(), 1);
  EXPECT_EQ(alloc.live(), 0u);
  EXPECT_FALSE(s.has_storage());
}

TEST(ByteBufTest, DuplicateSharesEverythingButIndices) {
  ByteBuf b = ByteBuf::copy_of("abcdef");
  b.skip_bytes(2);
  ByteBuf d = b.duplicate();
  EXPECT_EQ(d.reader_index(), 2u);
  EXPECT_EQ(d.writer_index(), 6u);
  EXPECT_EQ(d.capacity(), b.capacity());
  EXPECT_EQ(d.max_capacity(), b.max_capacity());
  EXPECT_EQ(d.data(), b.data());
  d.skip_bytes(2);  // own indices
  EXPECT_EQ(b.reader_index(), 2u);
  d.set_u8(5, 'Z');  // shared bytes
  EXPECT_EQ(b.view(), "cdeZ");
}

TEST(ByteBufTest, GrowingWhileSharedCopiesAndLeavesSlicesTheOldBlock) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(4, 1024);
  b.write_bytes("abcd");
  ByteBuf s = b.slice(0, 4);
  const std::uint8_t* old_data = b.data();
  b.write_bytes("efgh");  // must grow; the block is shared, so copy on grow
  EXPECT_EQ(b.view(), "abcdefgh");
  EXPECT_NE(b.data(), old_data);
  EXPECT_FALSE(b.shares_storage_with(s));
  EXPECT_EQ(b.ref_count(), 1u);
  EXPECT_EQ(s.ref_count(), 1u);
  EXPECT_EQ(alloc.live(), 2u);
  EXPECT_EQ(alloc.reallocations(), 0);
  b.set_u8(0, 'X');  // no longer shared
  EXPECT_EQ(s.view(), "abcd");
  s.release();
  EXPECT_EQ(alloc.live(), 1u);
  EXPECT_EQ(alloc.frees(), 1);
}

TEST(ByteBufTest, DuplicateCanGrowOnItsOwnBlock) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(4, 1024);
  b.write_bytes("abcd");
  ByteBuf d = b.duplicate();
  d.write_bytes("efgh");
  EXPECT_EQ(d.view(), "abcdefgh");
  EXPECT_EQ(b.view(), "abcd");
  EXPECT_FALSE(d.shares_storage_with(b));
  EXPECT_EQ(b.ref_count(), 1u);
  EXPECT_EQ(d.max_capacity(), 1024u);
}

TEST(ByteBufTest, CopyIsDeepAndUsesTheSameAllocator) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16, 16);
  b.write_bytes("xxcopy me");
  b.skip_bytes(2);
  ByteBuf c = b.copy();
  EXPECT_EQ(c.view(), "copy me");
  EXPECT_EQ(c.reader_index(), 0u);
  EXPECT_EQ(c.allocator(), &alloc);
  EXPECT_EQ(c.max_capacity(), kDefaultMaxCapacity);
  c.set_u8(0, 'C');
  EXPECT_EQ(b.view(), "copy me");
  c.write_bytes(" and grow");
  EXPECT_EQ(c.view(), "Copy me and grow");
  EXPECT_EQ(alloc.allocations(), 2);
  ByteBuf slice_copy = b.slice(2, 3).copy();  // copies of slices are growable
  slice_copy.write_bytes("!!");
  EXPECT_EQ(slice_copy.view(), "cop!!");
}

// ---- moves, swap, release -------------------------------------------------------------------------------

TEST(ByteBufTest, MovedFromHandleIsEmpty) {
  CountingAllocator alloc;
  ByteBuf a = alloc.buffer(8, 8);
  a.write_bytes("abc");
  ByteBuf b(std::move(a));
  EXPECT_FALSE(a.has_storage());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(a.capacity(), 0u);
  EXPECT_EQ(a.readable_bytes(), 0u);
  EXPECT_EQ(a.ref_count(), 0u);
  EXPECT_EQ(b.view(), "abc");
  ByteBuf c;
  c = std::move(b);
  EXPECT_FALSE(b.has_storage());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.view(), "abc");
  EXPECT_EQ(c.ref_count(), 1u);
  EXPECT_EQ(alloc.frees(), 0);
}

TEST(ByteBufTest, MoveAssignmentReleasesTheTargetsReference) {
  CountingAllocator alloc;
  ByteBuf a = alloc.buffer(8, 8);
  ByteBuf b = alloc.buffer(8, 8);
  a.write_u8(1);
  b.write_u8(2);
  a = std::move(b);
  EXPECT_EQ(alloc.frees(), 1);
  EXPECT_EQ(alloc.live(), 1u);
  EXPECT_EQ(a.read_u8(), 2);
  ByteBuf& alias = a;
  a = std::move(alias);  // self-move keeps the buffer
  EXPECT_TRUE(a.has_storage());
  EXPECT_EQ(alloc.frees(), 1);
}

TEST(ByteBufTest, SwapExchangesHandles) {
  ByteBuf a = ByteBuf::copy_of("first");
  ByteBuf b = ByteBuf::copy_of("second");
  swap(a, b);
  EXPECT_EQ(a.view(), "second");
  EXPECT_EQ(b.view(), "first");
  ByteBuf e;
  a.swap(e);
  EXPECT_FALSE(a.has_storage());
  EXPECT_EQ(e.view(), "second");
}

TEST(ByteBufTest, ReleaseFreesLastReferenceAndEmptiesHandle) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  ByteBuf d = b.duplicate();
  b.release();
  EXPECT_FALSE(b.has_storage());
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_EQ(alloc.frees(), 0);
  EXPECT_EQ(d.ref_count(), 1u);
  d.release();
  EXPECT_EQ(alloc.frees(), 1);
  d.release();  // idempotent
  EXPECT_EQ(alloc.frees(), 1);
  EXPECT_EQ(alloc.bad_frees(), 0);
}

// ---- search ---------------------------------------------------------------------------------------------

TEST(ByteBufTest, IndexOfByteSearchesOnlyTheReadableRegion) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16, 16);
  b.write_bytes("a\nbc\nd");
  b.set_u8(8, '#');  // beyond the writer
  EXPECT_EQ(b.index_of(std::uint8_t{'\n'}), 1);
  EXPECT_EQ(b.last_index_of(std::uint8_t{'\n'}), 4);
  EXPECT_EQ(b.index_of(std::uint8_t{'a'}), 0);
  EXPECT_EQ(b.index_of(std::uint8_t{'d'}), 5);
  EXPECT_EQ(b.index_of(std::uint8_t{'#'}), -1);
  b.skip_bytes(2);
  EXPECT_EQ(b.index_of(std::uint8_t{'a'}), -1);   // before the reader
  EXPECT_EQ(b.index_of(std::uint8_t{'\n'}), 4);   // absolute index
  b.skip_bytes(4);
  EXPECT_EQ(b.index_of(std::uint8_t{'d'}), -1);   // nothing readable
  EXPECT_EQ(b.last_index_of(std::uint8_t{'d'}), -1);
}

TEST(ByteBufTest, IndexOfByteInRange) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, 8);
  b.write_bytes("xyzxyz");
  EXPECT_EQ(b.index_of(std::uint8_t{'x'}, 1, 6), 3);
  EXPECT_EQ(b.index_of(std::uint8_t{'x'}, 0, 6), 0);
  EXPECT_EQ(b.index_of(std::uint8_t{'x'}, 1, 3), -1);  // `to` is exclusive
  EXPECT_EQ(b.index_of(std::uint8_t{'x'}, 3, 3), -1);  // empty range
  b.set_u8(6, 'q');
  b.set_u8(7, 0);
  EXPECT_EQ(b.index_of(std::uint8_t{0}, 6, 8), 7);  // beyond the writer, inside the capacity
  EXPECT_THROW(b.index_of(std::uint8_t{'x'}, 0, 9), std::out_of_range);
  EXPECT_THROW(b.index_of(std::uint8_t{'x'}, 4, 3), std::out_of_range);
}

TEST(ByteBufTest, IndexOfNeedle) {
  ByteBuf b = ByteBuf::copy_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(b.index_of("\r\n"), 14);
  EXPECT_EQ(b.index_of("\r\n\r\n"), 23);
  EXPECT_EQ(b.index_of("GET"), 0);
  EXPECT_EQ(b.index_of("\n"), 15);
  EXPECT_EQ(b.index_of("POST"), -1);
  EXPECT_EQ(b.index_of(""), 0);  // empty needle: at the reader
  b.skip_bytes(16);
  EXPECT_EQ(b.index_of("\r\n"), 23);  // absolute index
  EXPECT_EQ(b.index_of(""), 16);
  EXPECT_EQ(b.index_of("GET"), -1);  // before the reader
  EXPECT_EQ(b.index_of(std::string_view("\r\n\r\n")), 23);
  EXPECT_EQ(b.index_of(std::string(100, 'x')), -1);  // longer than readable
}

TEST(ByteBufTest, IndexOfNeedleEdgeCases) {
  ByteBuf b = ByteBuf::copy_of("aaab");
  EXPECT_EQ(b.index_of("aab"), 1);  // overlapping prefix
  EXPECT_EQ(b.index_of("aaab"), 0);  // whole buffer
  EXPECT_EQ(b.index_of("aaabb"), -1);
  EXPECT_EQ(b.index_of(std::string_view("\0", 1)), -1);
  b.write_u8(0);
  EXPECT_EQ(b.index_of(std::string_view("b\0", 2)), 3);  // binary needle
  // A match that crosses the writer index is not a match.
  ByteBuf c = ByteBuf::copy_of("abc\r\n");
  c.set_writer_index(4);
  EXPECT_EQ(c.index_of("\r\n"), -1);
  EXPECT_EQ(c.index_of("\r"), 3);
  // The range overload.
  ByteBuf d = ByteBuf::copy_of("ab--ab--ab");
  EXPECT_EQ(d.index_of("ab", 1, 10), 4);
  EXPECT_EQ(d.index_of("ab", 5, 10), 8);
  EXPECT_EQ(d.index_of("ab", 5, 9), -1);
  EXPECT_EQ(d.index_of("", 7, 7), 7);
  EXPECT_THROW(d.index_of("ab", 3, 2), std::out_of_range);
  EXPECT_THROW(d.index_of("ab", 0, d.capacity() + 1), std::out_of_range);
}

TEST(ByteBufTest, ForEachByteStopsAtFirstRejectedByte) {
  ByteBuf b = ByteBuf::copy_of("  12345x9");
  b.skip_bytes(2);
  std::string seen;
  const auto at = b.for_each_byte([&](std::uint8_t c) {
    seen.push_back(static_cast<char>(c));
    return c >= '0' && c <= '9';
  });
  EXPECT_EQ(at, 7);  // absolute index of 'x'
  EXPECT_EQ(seen, "12345x");
  int calls = 0;
  EXPECT_EQ(b.for_each_byte([&](std::uint8_t) { ++calls; return true; }), -1);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(b.reader_index(), 2u);  // nothing consumed
  // Ranges.
  EXPECT_EQ(b.for_each_byte(0, 2, [](std::uint8_t c) { return c != ' '; }), 0);
  EXPECT_EQ(b.for_each_byte(8, 9, [](std::uint8_t c) { return c == '9'; }), -1);
  EXPECT_THROW(b.for_each_byte(3, 2, [](std::uint8_t) { return true; }), std::out_of_range);
  EXPECT_THROW(b.for_each_byte(0, b.capacity() + 1, [](std::uint8_t) { return true; }), std::out_of_range);
  // Nothing readable: never called.
  ByteBuf empty;
  bool called = false;
  EXPECT_EQ(empty.for_each_byte([&](std::uint8_t) { called = true; return false; }), -1);
  EXPECT_FALSE(called);
}

// ---- views ----------------------------------------------------------------------------------------------

TEST(ByteBufTest, ViewToStringAndHexDump) {
  ByteBuf b = ByteBuf::copy_of(std::string_view("\x00\x7f\x80\xffok", 6));
  EXPECT_EQ(b.view().size(), 6u);
  EXPECT_EQ(b.view().data(), reinterpret_cast<const char*>(b.read_ptr()));
  EXPECT_EQ(b.to_string(), std::string("\x00\x7f\x80\xffok", 6));
  EXPECT_EQ(b.hex_dump(), "007f80ff6f6b");
  b.skip_bytes(4);
  EXPECT_EQ(b.view(), "ok");
  EXPECT_EQ(ByteBuf().hex_dump(), "");
}

// ---- marks, read-only views, strings, iovec -------------------------------------------------------

TEST(ByteBufTest, MarkAndResetReaderAndWriter) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(64);
  b.write_bytes("hello world");
  b.skip_bytes(2);
  b.mark_reader_index();
  EXPECT_EQ(b.read_string(3), "llo");
  b.reset_reader_index();
  EXPECT_EQ(b.reader_index(), 2u);
  EXPECT_EQ(b.read_string(3), "llo");

  b.mark_writer_index();
  b.write_bytes("!!!");
  EXPECT_EQ(b.writer_index(), 14u);
  b.reset_writer_index();
  EXPECT_EQ(b.writer_index(), 11u);
  EXPECT_EQ(b.to_string(), " world");

  // A mark that is no longer valid makes reset throw and leaves the index alone.
  b.mark_reader_index();  // 5
  b.set_index(0, 3);
  EXPECT_THROW(b.reset_reader_index(), std::out_of_range);
  EXPECT_EQ(b.reader_index(), 0u);
}

TEST(ByteBufTest, DiscardReadBytesShiftsMarks) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(64);
  b.write_bytes("abcdefgh");
  b.skip_bytes(2);
  b.mark_reader_index();  // 2
  b.skip_bytes(2);        // reader 4
  b.mark_writer_index();  // 8
  b.discard_read_bytes();
  EXPECT_EQ(b.to_string(), "efgh");
  b.reset_writer_index();
  EXPECT_EQ(b.writer_index(), 4u);
  b.reset_reader_index();  // clamped at 0
  EXPECT_EQ(b.reader_index(), 0u);
}

TEST(ByteBufTest, ReadOnlyViewSharesBytesButRefusesChanges) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(64);
  b.write_bytes("abcdef");
  b.skip_bytes(1);
  ByteBuf ro = b.as_read_only();
  EXPECT_TRUE(ro.is_read_only());
  EXPECT_FALSE(b.is_read_only());
  EXPECT_TRUE(ro.shares_storage_with(b));
  EXPECT_EQ(ro.ref_count(), 2u);
  EXPECT_EQ(ro.to_string(), "bcdef");
  EXPECT_EQ(ro.get_u8(0), 'a');
  EXPECT_THROW(ro.write_u8(1), std::logic_error);
  EXPECT_THROW(ro.write_bytes("x"), std::logic_error);
  EXPECT_THROW(ro.write_zero(1), std::logic_error);
  EXPECT_THROW(ro.set_u8(0, 1), std::logic_error);
  EXPECT_THROW(ro.set_u32_le(0, 1), std::logic_error);
  EXPECT_THROW(ro.set_bytes(0, "x"), std::logic_error);
  EXPECT_THROW(ro.advance_writer(0), std::logic_error);
  EXPECT_THROW(ro.discard_read_bytes(), std::logic_error);
  EXPECT_THROW(ro.ensure_writable(1), std::logic_error);
  EXPECT_EQ(ro.max_capacity(), ro.capacity());
  // Index moves are fine, and writes through the original are visible.
  ro.clear();
  ro.set_writer_index(3);
  EXPECT_EQ(ro.to_string(), "abc");
  b.set_u8(0, 'A');
  EXPECT_EQ(ro.read_u8(), 'A');
  // Slices and duplicates of a read-only view stay read-only; copies do not.
  EXPECT_TRUE(ro.slice().is_read_only());
  EXPECT_TRUE(ro.duplicate().is_read_only());
  ByteBuf c = ro.copy();
  EXPECT_FALSE(c.is_read_only());
  c.write_u8('z');
  EXPECT_EQ(c.to_string(), "bcz");
  // Moves and swaps carry the flag.
  ByteBuf moved = std::move(ro);
  EXPECT_TRUE(moved.is_read_only());
  EXPECT_FALSE(ro.is_read_only());
  swap(moved, c);
  EXPECT_TRUE(c.is_read_only());
  EXPECT_FALSE(moved.is_read_only());
}

TEST(ByteBufTest, StringsAndBufferToBufferReads) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(16);
  b.write_string("GET /index.html");
  EXPECT_EQ(b.get_string(4, 6), "/index");
  EXPECT_EQ(b.read_string(3), "GET");
  EXPECT_THROW(b.read_string(100), std::out_of_range);
  EXPECT_THROW(b.get_string(10, 100), std::out_of_range);
  b.set_bytes(5, std::string_view("INDEX"));
  EXPECT_EQ(b.to_string(), " /INDEX.html");
  ByteBuf dst = alloc.buffer(4);
  dst.write_bytes("<");
  b.read_bytes(dst, 7);
  EXPECT_EQ(dst.to_string(), "< /INDEX");
  EXPECT_EQ(b.to_string(), ".html");
  EXPECT_THROW(b.read_bytes(dst, 6), std::out_of_range);
  EXPECT_EQ(b.to_string(), ".html");
}

TEST(ByteBufTest, ReadableIovecCoversTheReadableBytes) {
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(32);
  b.write_bytes("0123456789");
  b.skip_bytes(3);
  const iovec v = b.readable_iovec();
  EXPECT_EQ(v.iov_base, static_cast<const void*>(b.read_ptr()));
  EXPECT_EQ(v.iov_len, 7u);
  EXPECT_EQ(ByteBuf().readable_iovec().iov_len, 0u);
}

TEST(ByteBufTest, CapacityLimitsAre31Bits) {
  EXPECT_EQ(kMaxCapacityLimit, 0x7FFF'FFFFu);
  EXPECT_LE(kDefaultMaxCapacity, kMaxCapacityLimit);
  CountingAllocator alloc;
  ByteBuf b = alloc.buffer(8, std::size_t{1} << 40);
  EXPECT_EQ(b.max_capacity(), kMaxCapacityLimit);
}

}  // namespace
}  // namespace weft
