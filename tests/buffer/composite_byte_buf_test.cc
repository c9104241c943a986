#include "weft/buffer/composite_byte_buf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "counting_allocator.h"

namespace weft {
namespace {

using test::CountingAllocator;

ByteBuf buf_of(CountingAllocator& alloc, std::string_view s) {
  ByteBuf b = alloc.buffer(s.size() + 8);
  b.write_bytes("##");  // consumed prefix: only readable bytes join the composite
  b.write_bytes(s);
  b.skip_bytes(2);
  return b;
}

TEST(CompositeByteBufTest, AddsComponentsWithoutCopying) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  ByteBuf a = buf_of(alloc, "hello ");
  const std::uint8_t* a_bytes = a.read_ptr();
  c.add_component(std::move(a));
  c.add_component(buf_of(alloc, "wide "));
  c.add_component(alloc.buffer(4));  // empty: dropped
  c.add_component(buf_of(alloc, "world"));
  EXPECT_FALSE(a.has_storage());
  EXPECT_EQ(c.num_components(), 3u);
  EXPECT_EQ(c.component(0).read_ptr(), a_bytes);  // the same memory
  EXPECT_EQ(c.component_offset(2), 11u);
  EXPECT_EQ(c.readable_bytes(), 16u);
  EXPECT_EQ(c.to_string(), "hello wide world");
  EXPECT_EQ(alloc.allocations(), 4);  // nothing allocated by the composite
}

TEST(CompositeByteBufTest, ReadsIntegersAndBytesAcrossBoundaries) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  ByteBuf a = alloc.buffer(8);
  a.write_u8(0x01);
  a.write_u8(0x02);
  ByteBuf b = alloc.buffer(8);
  b.write_u8(0x03);
  ByteBuf d = alloc.buffer(8);
  d.write_u8(0x04);
  d.write_u32_le(0xAABBCCDD);
  c.add_component(std::move(a));
  c.add_component(std::move(b));
  c.add_component(std::move(d));
  EXPECT_EQ(c.get_u32(0), 0x01020304u);
  EXPECT_EQ(c.get_u16(1), 0x0203u);
  EXPECT_EQ(c.get_u32_le(4), 0xAABBCCDDu);
  EXPECT_EQ(c.read_u8(), 0x01);
  EXPECT_EQ(c.read_u16(), 0x0203);
  EXPECT_EQ(c.read_u8(), 0x04);
  EXPECT_EQ(c.read_u32_le(), 0xAABBCCDDu);
  EXPECT_FALSE(c.is_readable());
  EXPECT_THROW(c.read_u8(), std::out_of_range);
  EXPECT_THROW(c.get_u64(1), std::out_of_range);
  c.set_reader_index(1);
  c.mark_reader_index();
  c.skip_bytes(3);
  c.reset_reader_index();
  EXPECT_EQ(c.read_string(3), std::string("\x02\x03\x04"));
}

TEST(CompositeByteBufTest, SearchSpansComponents) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "GET / HTTP/1.1\r"));
  c.add_component(buf_of(alloc, "\nHost: x\r\n"));
  c.add_component(buf_of(alloc, "\r\n"));
  EXPECT_EQ(c.index_of(std::uint8_t{'\n'}), 15);
  EXPECT_EQ(c.index_of("\r\n"), 14);
  EXPECT_EQ(c.index_of("\r\n\r\n"), 23);
  EXPECT_EQ(c.index_of("nope"), -1);
  EXPECT_EQ(c.index_of(""), 0);
  c.skip_bytes(16);
  EXPECT_EQ(c.index_of("\r\n"), 23);
  const std::ptrdiff_t colon = c.for_each_byte([](std::uint8_t v) { return v != ':'; });
  EXPECT_EQ(colon, 20);
  EXPECT_EQ(c.for_each_byte([](std::uint8_t) { return true; }), -1);
}

TEST(CompositeByteBufTest, ReadSliceIsZeroCopyInsideAComponentAndACopyAcross) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "abcd"));
  c.add_component(buf_of(alloc, "efgh"));
  ByteBuf inside = c.read_slice(3);
  EXPECT_EQ(inside.to_string(), "abc");
  EXPECT_TRUE(inside.shares_storage_with(c.component(0)));
  ByteBuf across = c.read_slice(3);
  EXPECT_EQ(across.to_string(), "def");
  EXPECT_FALSE(across.shares_storage_with(c.component(0)));
  EXPECT_FALSE(across.shares_storage_with(c.component(1)));
  EXPECT_EQ(c.to_string(), "gh");
}

TEST(CompositeByteBufTest, ConsolidateOnDemandAndPastMaxComponents) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc, 4);
  for (char ch = 'a'; ch <= 'd'; ++ch) c.add_component(buf_of(alloc, std::string(3, ch)));
  EXPECT_EQ(c.num_components(), 4u);
  c.add_component(buf_of(alloc, "eee"));  // fifth: consolidated
  EXPECT_EQ(c.num_components(), 1u);
  EXPECT_EQ(c.to_string(), "aaabbbcccdddeee");
  EXPECT_EQ(alloc.live(), 1u);  // old components released
  c.skip_bytes(5);
  c.add_component(buf_of(alloc, "fff"));
  c.consolidate();
  EXPECT_EQ(c.num_components(), 1u);
  EXPECT_EQ(c.reader_index(), 0u);
  EXPECT_EQ(c.to_string(), "bcccdddeeefff");
}

TEST(CompositeByteBufTest, DiscardReadComponentsReleasesThem) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "1234"));
  c.add_component(buf_of(alloc, "5678"));
  c.add_component(buf_of(alloc, "9"));
  c.skip_bytes(6);
  c.discard_read_components();
  EXPECT_EQ(c.num_components(), 2u);
  EXPECT_EQ(alloc.live(), 2u);
  EXPECT_EQ(c.reader_index(), 2u);
  EXPECT_EQ(c.writer_index(), 5u);
  EXPECT_EQ(c.to_string(), "789");
  EXPECT_EQ(c.component_offset(1), 4u);
}

TEST(CompositeByteBufTest, IovecsExportTheReadableBytes) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "ab"));
  c.add_component(buf_of(alloc, "cde"));
  c.add_component(buf_of(alloc, "f"));
  c.skip_bytes(1);
  iovec v[4];
  EXPECT_EQ(c.count_iovecs(), 3u);
  ASSERT_EQ(c.fill_iovecs(v, 4), 3u);
  std::string joined;
  for (const iovec& x : v) {
    if (&x - v >= 3) break;
    joined.append(static_cast<const char*>(x.iov_base), x.iov_len);
  }
  EXPECT_EQ(joined, "bcdef");
  EXPECT_EQ(c.fill_iovecs(v, 2), 2u);
}

TEST(CompositeByteBufTest, WriteBytesAppendsToAnOwnedTail) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "head:"));
  c.write_bytes("one,");
  c.write_bytes("two");
  EXPECT_EQ(c.num_components(), 2u);
  c.add_component(buf_of(alloc, ";"));
  c.write_bytes("three");
  EXPECT_EQ(c.num_components(), 4u);
  EXPECT_EQ(c.to_string(), "head:one,two;three");
}

TEST(CompositeByteBufTest, ToByteBufIsZeroCopyForOneComponent) {
  CountingAllocator alloc;
  CompositeByteBuf c(alloc);
  c.add_component(buf_of(alloc, "xx"));
  c.add_component(buf_of(alloc, "payload"));
  c.skip_bytes(3);
  ByteBuf out = c.to_byte_buf();  // first component dropped, second moved out
  EXPECT_EQ(out.to_string(), "ayload");
  EXPECT_EQ(alloc.allocations(), 2);
  EXPECT_EQ(c.num_components(), 0u);
  EXPECT_EQ(c.readable_bytes(), 0u);
  c.add_component(buf_of(alloc, "a"));
  c.add_component(buf_of(alloc, "b"));
  EXPECT_EQ(c.to_byte_buf().to_string(), "ab");
}

}  // namespace
}  // namespace weft
