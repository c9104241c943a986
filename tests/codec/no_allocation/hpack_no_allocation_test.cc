// HPACK (src/codec/http2/hpack.h) allocates nothing per block once its buffers have grown: decoding
// (indexed fields, Huffman literals, insertions that evict) and encoding (indexed fields, literals
// added to a full table). Counts global operator new calls made on this thread. Its own executable,
// because it replaces operator new for the whole program.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "../src/codec/http2/hpack.h"
#include "support/allocation_counter.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft::http2::hpack {
namespace {

using test::allocations_of;

int ignore(void*, std::string_view, std::string_view) { return 0; }

// Encodes a head whose x-id value changes each block (a literal added to the table, evicting
// once the table is full) and decodes it.
void round(Encoder& e, Decoder& d, ByteBuf& out, int i) {
  char id[16];
  const int n = std::snprintf(id, sizeof id, "id-%08d", i);
  out.clear();
  e.begin_block(out);
  e.encode(out, ":status", "200");
  e.encode(out, "content-type", "text/plain");
  e.encode(out, "date", "Wed, 02 Dec 2026 18:00:00 GMT");
  e.encode(out, "server", "weft");
  e.encode(out, "x-id", std::string_view(id, static_cast<std::size_t>(n)));
  e.encode(out, "authorization", "secret", true);
  ASSERT_EQ(d.decode(out.read_ptr(), out.readable_bytes(), ignore, nullptr), 0);
}

TEST(HpackNoAllocation, SteadyStateBlocksAllocateNothing) {
  Encoder e;
  e.set_huffman(true);  // Huffman strings both ways
  Decoder d;
  ByteBuf out = default_allocator().buffer(4096);
  for (int i = 0; i < 200; ++i) round(e, d, out, i);  // the table is full and evicting by now
  EXPECT_EQ(allocations_of([&] {
              for (int i = 200; i < 1200; ++i) round(e, d, out, i);
            }),
            0);
}

}  // namespace
}  // namespace weft::http2::hpack
