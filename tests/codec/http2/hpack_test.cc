// HPACK (src/codec/http2/hpack.h): the examples of RFC 7541 Appendix C, round trips against
// libnghttp2's own HPACK (nghttp2_hd_*) in both directions over many blocks with table size
// changes, malformed blocks (each a COMPRESSION_ERROR), blocks cut at every byte, and steady-state
// loops (run under callgrind for the instruction counts).

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../src/codec/http2/hpack.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft::http2::hpack {
namespace {

using Field = std::pair<std::string, std::string>;
using Fields = std::vector<Field>;

std::vector<std::uint8_t> hex(std::string_view s) {
  std::vector<std::uint8_t> out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < s.size(); i += 2) {
    if (s[i] == ' ') {
      --i;
      continue;
    }
    out.push_back(static_cast<std::uint8_t>(nibble(s[i]) * 16 + nibble(s[i + 1])));
  }
  return out;
}

int collect(void* context, std::string_view name, std::string_view value) {
  static_cast<Fields*>(context)->emplace_back(std::string(name), std::string(value));
  return 0;
}

// Decodes from an exact-size heap copy (ASan sees any read past the block).
int decode(Decoder& d, const std::vector<std::uint8_t>& block, Fields& out) {
  out.clear();
  const auto copy = std::make_unique<std::uint8_t[]>(block.size());
  std::copy(block.begin(), block.end(), copy.get());
  return d.decode(copy.get(), block.size(), collect, &out);
}

Fields entries(const Decoder& d) {
  Fields out;
  for (std::uint32_t i = 0; i < d.table_count(); ++i) {
    const auto [n, v] = d.table_entry(i);
    out.emplace_back(std::string(n), std::string(v));
  }
  return out;
}

std::vector<std::uint8_t> bytes_of(const ByteBuf& b) { return {b.read_ptr(), b.read_ptr() + b.readable_bytes()}; }

std::vector<std::uint8_t> encode(Encoder& e, const Fields& fields, const std::vector<bool>& never = {}) {
  ByteBuf out = default_allocator().buffer();
  e.begin_block(out);
  for (std::size_t i = 0; i < fields.size(); ++i) e.encode(out, fields[i].first, fields[i].second, i < never.size() && never[i]);
  return bytes_of(out);
}

// ---- RFC 7541 Appendix C ----

const Fields kRequests[3] = {
    {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}},
    {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}, {"cache-control", "no-cache"}},
    {{":method", "GET"}, {":scheme", "https"}, {":path", "/index.html"}, {":authority", "www.example.com"}, {"custom-key", "custom-value"}},
};
const Fields kResponses[3] = {
    {{":status", "302"}, {"cache-control", "private"}, {"date", "Mon, 21 Oct 2013 20:13:21 GMT"}, {"location", "https://www.example.com"}},
    {{":status", "307"}, {"cache-control", "private"}, {"date", "Mon, 21 Oct 2013 20:13:21 GMT"}, {"location", "https://www.example.com"}},
    {{":status", "200"}, {"cache-control", "private"}, {"date", "Mon, 21 Oct 2013 20:13:22 GMT"}, {"location", "https://www.example.com"},
     {"content-encoding", "gzip"}, {"set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"}},
};
const char* const kC3[3] = {
    "828684410f7777772e6578616d706c652e636f6d",
    "828684be58086e6f2d6361636865",
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
};
const char* const kC4[3] = {
    "828684418cf1e3c2e5f23a6ba0ab90f4ff",
    "828684be5886a8eb10649cbf",
    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
};
const char* const kC5[3] = {
    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
    "4803333037c1c0bf",
    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
};
const char* const kC6[3] = {
    "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
    "4883640effc1c0bf",
    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
};

TEST(HpackDecoder, FieldRepresentationsOfC2) {
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572"), f), 0);  // C.2.1
  EXPECT_EQ(f, (Fields{{"custom-key", "custom-header"}}));
  EXPECT_EQ(d.table_size(), 55u);
  EXPECT_EQ(entries(d), (Fields{{"custom-key", "custom-header"}}));

  Decoder d2;
  ASSERT_EQ(decode(d2, hex("040c2f73616d706c652f70617468"), f), 0);  // C.2.2
  EXPECT_EQ(f, (Fields{{":path", "/sample/path"}}));
  EXPECT_EQ(d2.table_count(), 0u);

  Decoder d3;
  ASSERT_EQ(decode(d3, hex("100870617373776f726406736563726574"), f), 0);  // C.2.3
  EXPECT_EQ(f, (Fields{{"password", "secret"}}));
  EXPECT_EQ(d3.table_count(), 0u);

  Decoder d4;
  ASSERT_EQ(decode(d4, hex("82"), f), 0);  // C.2.4
  EXPECT_EQ(f, (Fields{{":method", "GET"}}));
  EXPECT_EQ(d4.table_count(), 0u);
}

void expect_requests(const char* const (&blocks)[3]) {
  Decoder d;
  Fields f;
  const std::uint32_t sizes[3] = {57, 110, 164};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(decode(d, hex(blocks[i]), f), 0) << i;
    EXPECT_EQ(f, kRequests[i]) << i;
    EXPECT_EQ(d.table_size(), sizes[i]) << i;
  }
  EXPECT_EQ(entries(d), (Fields{{"custom-key", "custom-value"}, {"cache-control", "no-cache"}, {":authority", "www.example.com"}}));
}

TEST(HpackDecoder, RequestsWithoutHuffmanOfC3) { expect_requests(kC3); }
TEST(HpackDecoder, RequestsWithHuffmanOfC4) { expect_requests(kC4); }

void expect_responses(const char* const (&blocks)[3]) {
  Decoder d(256);
  Fields f;
  const std::uint32_t sizes[3] = {222, 222, 215};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(decode(d, hex(blocks[i]), f), 0) << i;
    EXPECT_EQ(f, kResponses[i]) << i;
    EXPECT_EQ(d.table_size(), sizes[i]) << i;
  }
  // Eviction: the oldest entries made room for the new ones.
  EXPECT_EQ(entries(d), (Fields{{"set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"},
                                {"content-encoding", "gzip"},
                                {"date", "Mon, 21 Oct 2013 20:13:22 GMT"}}));
}

TEST(HpackDecoder, ResponsesWithEvictionOfC5) { expect_responses(kC5); }
TEST(HpackDecoder, ResponsesWithHuffmanAndEvictionOfC6) { expect_responses(kC6); }

TEST(HpackEncoder, RequestsOfC3AndC4AreTheRfcBytes) {
  Encoder raw;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(encode(raw, kRequests[i]), hex(kC3[i])) << i;
  EXPECT_EQ(raw.table_size(), 164u);
  Encoder huffman;
  huffman.set_huffman(true);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(encode(huffman, kRequests[i]), hex(kC4[i])) << i;
  EXPECT_EQ(huffman.table_size(), 164u);
}

// A name with more values in the table than the encoder looks at still encodes (as a literal).
TEST(HpackEncoder, ManyValuesOfOneName) {
  Encoder e;
  Decoder d;
  Fields f;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) {
      const Fields fields = {{"x-v", std::to_string(i)}};
      ASSERT_EQ(decode(d, encode(e, fields), f), 0);
      ASSERT_EQ(f, fields);
    }
  }
  const Fields newest = {{"x-v", "39"}};
  EXPECT_EQ(encode(e, newest).size(), 1u);
}

TEST(HpackEncoder, RepeatedResponseHeadIsOneBytePerField) {
  Encoder e;
  const Fields head = {{":status", "200"}, {"content-type", "text/plain"}, {"content-length", "13"},
                       {"date", "Wed, 02 Dec 2026 18:00:00 GMT"}, {"server", "weft"}, {"x-app", "a"}};
  const auto first = encode(e, head);
  EXPECT_EQ(first[0], 0x88);  // :status 200 from the static table
  encode(e, head);            // content-length repeats: indexed now
  EXPECT_EQ(encode(e, head).size(), head.size());
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, first, f), 0);
  EXPECT_EQ(f, head);
}

TEST(HpackEncoder, NeverIndexedFieldsStayOutOfTheTable) {
  Encoder e;
  const auto block = encode(e, {{"authorization", "secret"}, {"x-token", "t"}}, {true, true});
  EXPECT_EQ(e.table_count(), 0u);
  EXPECT_EQ(block[0], 0x10 | 15);  // never indexed, name index 23 = 15 + 8
  EXPECT_EQ(block[1], 8);
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, block, f), 0);
  EXPECT_EQ(f, (Fields{{"authorization", "secret"}, {"x-token", "t"}}));
  EXPECT_EQ(d.table_count(), 0u);
}

TEST(HpackEncoder, PeerTableSizeChangesStartTheNextBlock) {
  Encoder e;
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, encode(e, {{"x-a", "1"}, {"x-b", "2"}}), f), 0);
  e.set_peer_max_table_size(4096);  // no change: no size update
  EXPECT_EQ(encode(e, {{"x-a", "1"}}), hex("bf"));
  e.set_peer_max_table_size(0);
  e.set_peer_max_table_size(100);
  d.set_max_table_size(0);
  d.set_max_table_size(100);
  const auto block = encode(e, {{"x-c", "3"}});
  EXPECT_EQ(block[0], 0x20);  // the smallest size since the last block, then the new one
  EXPECT_EQ(block[1], 0x3f);
  EXPECT_EQ(block[2], 100 - 31);
  ASSERT_EQ(decode(d, block, f), 0);
  EXPECT_EQ(f, (Fields{{"x-c", "3"}}));
  EXPECT_EQ(d.table_capacity(), 100u);
  EXPECT_EQ(e.table_size(), d.table_size());
  EXPECT_EQ(entries(d), (Fields{{"x-c", "3"}}));
}

// ---- malformed blocks ----

TEST(HpackDecoder, MalformedBlocksAreCompressionErrors) {
  const char* const bad[] = {
      "80",                    // index 0
      "be",                    // index 62, empty dynamic table
      "ff80808080808000",      // integer with six continuation bytes
      "ffffffffff0f",          // integer above 2^32 - 1
      "7e0161",                // literal whose name index is beyond the tables
      "0f2f0161",              // the same without indexing (name index 62)
      "000561620161",          // name longer than the block
      "04056162",              // value longer than the block
      "0085",                  // name length, no name
      "04",                    // no value
      "0484ffffffff",          // Huffman string containing EOS
      "04821fff",              // Huffman padding longer than 7 bits
      "048118",                // Huffman padding not all ones
      "3fe21f",                // size update to 4097 > 4096
      "8220",                  // size update after a field
      "ff",                    // truncated integer
  };
  for (const char* h : bad) {
    Decoder d;
    Fields f;
    EXPECT_EQ(decode(d, hex(h), f), kCompressionError) << h;
  }
  Decoder d;
  Fields f;
  EXPECT_EQ(decode(d, hex("3fe11f82"), f), 0);  // a size update to 4096 is the limit, not above it
  EXPECT_EQ(f, (Fields{{":method", "GET"}}));
}

TEST(HpackDecoder, HuffmanPaddingOfUpToSevenOnes) {
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, hex("04811f"), f), 0);  // 'a' = 00011, then 111
  EXPECT_EQ(f, (Fields{{":path", "a"}}));
  ASSERT_EQ(decode(d, hex("0480"), f), 0);  // empty Huffman string
  EXPECT_EQ(f, (Fields{{":path", ""}}));
}

TEST(HpackDecoder, ReducedLimitRequiresASizeUpdateFirst) {
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, hex(kC3[0]), f), 0);
  d.set_max_table_size(100);
  {
    Decoder copy;  // the same state, to try the block without the update
    ASSERT_EQ(decode(copy, hex(kC3[0]), f), 0);
    copy.set_max_table_size(100);
    EXPECT_EQ(decode(copy, hex("82"), f), kCompressionError);
    Decoder copy2;
    ASSERT_EQ(decode(copy2, hex(kC3[0]), f), 0);
    copy2.set_max_table_size(100);
    EXPECT_EQ(decode(copy2, hex("3f4682"), f), kCompressionError);  // 101 > 100
  }
  ASSERT_EQ(decode(d, hex("3f45be"), f), 0);  // update to 100, then index 62
  EXPECT_EQ(f, (Fields{{":authority", "www.example.com"}}));
  EXPECT_EQ(d.table_capacity(), 100u);
}

TEST(HpackDecoder, SinkAbortStopsDecoding) {
  Decoder d;
  int calls = 0;
  auto sink = +[](void* c, std::string_view, std::string_view) {
    return ++*static_cast<int*>(c) == 2 ? 7 : 0;
  };
  const auto block = hex(kC3[0]);
  EXPECT_EQ(d.decode(block.data(), block.size(), sink, &calls), 7);
  EXPECT_EQ(calls, 2);
}

// Literal with incremental indexing whose name is the entry the insertion evicts (RFC 7541 4.4).
TEST(HpackDecoder, NewEntryMayNameTheEntryItEvicts) {
  Decoder d(64);
  Fields f;
  ASSERT_EQ(decode(d, hex("4004787878780161"), f), 0);  // xxxx: a (37 bytes)
  // Name index 62 (xxxx) and a 20-byte value: 56 bytes, so xxxx: a is evicted to make room.
  // Repeated, so that the table's storage is compacted under the moving entries too.
  for (int i = 0; i < 50; ++i) {
    const std::string value(20, static_cast<char>('b' + i % 20));
    std::vector<std::uint8_t> block(2 + value.size());
    block[0] = 0x7e;
    block[1] = 20;
    std::copy(value.begin(), value.end(), block.begin() + 2);
    ASSERT_EQ(decode(d, block, f), 0) << i;
    EXPECT_EQ(f, (Fields{{"xxxx", value}}));
    EXPECT_EQ(entries(d), (Fields{{"xxxx", value}}));
    EXPECT_EQ(d.table_size(), 56u);
  }
}

// ---- cut blocks ----

TEST(HpackDecoder, BlocksCutAtEveryByteAreErrorsOrPrefixes) {
  const std::vector<std::pair<std::uint32_t, const char* const*>> sets = {{4096, kC3}, {4096, kC4}, {256, kC5}, {256, kC6}};
  const Fields* expected[4] = {kRequests, kRequests, kResponses, kResponses};
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (int k = 0; k < 3; ++k) {
      const auto block = hex(sets[s].second[k]);
      for (std::size_t cut = 0; cut < block.size(); ++cut) {
        Decoder d(sets[s].first);
        Fields f;
        for (int j = 0; j < k; ++j) ASSERT_EQ(decode(d, hex(sets[s].second[j]), f), 0);
        const int rc = decode(d, std::vector<std::uint8_t>(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(cut)), f);
        ASSERT_TRUE(rc == 0 || rc == kCompressionError) << rc;
        // Every field emitted is whole: the cut is found before a field that it reaches.
        ASSERT_LE(f.size(), expected[s][k].size());
        for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], expected[s][k][i]) << s << " " << k << " " << cut;
      }
    }
  }
}

// ---- round trips against libnghttp2's HPACK ----

// Random header lists: names from the static table, custom ones and random ones; values repeated,
// random (every byte value) or long (larger than the table); some never indexed.
class RandomFields {
 public:
  explicit RandomFields(unsigned seed) : rng_(seed) {}

  Fields next(std::vector<bool>& never) {
    static const char* const kNames[] = {":status", ":path", "content-type", "content-length", "date", "server",
                                         "set-cookie", "location", "cache-control", "x-app", "x-request-id", "etag",
                                         "user-agent", "accept", ":authority", "cookie"};
    static const char* const kValues[] = {"200", "404", "text/plain", "13", "weft", "gzip, deflate", "/", "*/*", ""};
    Fields fields;
    never.clear();
    const int n = pick(0, 12);
    for (int i = 0; i < n; ++i) {
      std::string name;
      switch (pick(0, 3)) {
        case 0: name = kNames[pick(0, std::size(kNames) - 1)]; break;
        case 1: name = "x-custom-" + std::to_string(pick(0, 20)); break;
        case 2: name = random_string(pick(0, 12), true); break;
        default: name = kNames[pick(0, 5)]; break;
      }
      std::string value;
      switch (pick(0, 4)) {
        case 0: value = kValues[pick(0, std::size(kValues) - 1)]; break;
        case 1: value = random_string(pick(0, 40), false); break;
        case 2: value = std::to_string(pick(0, 100000)); break;
        case 3: value = random_string(pick(200, 5000), false); break;
        default: value = kValues[pick(0, 3)]; break;
      }
      fields.emplace_back(std::move(name), std::move(value));
      never.push_back(pick(0, 15) == 0);
    }
    return fields;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  std::string random_string(int n, bool token) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(token ? static_cast<char>('a' + pick(0, 25)) : static_cast<char>(pick(0, 255)));
    return s;
  }
  std::mt19937 rng_;
};

std::vector<nghttp2_nv> nv_of(const Fields& fields, const std::vector<bool>& never) {
  std::vector<nghttp2_nv> nva;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto& [n, v] = fields[i];
    nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(n.data())),
                   reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                   static_cast<std::uint8_t>(never[i] ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE)});
  }
  return nva;
}

const std::uint32_t kTableSizes[] = {0, 64, 256, 1000, 4096, 8192};

TEST(HpackDecoder, DecodesNghttp2Blocks) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    RandomFields random(seed);
    nghttp2_hd_deflater* deflater = nullptr;
    ASSERT_EQ(nghttp2_hd_deflate_new(&deflater, 4096), 0);
    Decoder d;
    std::vector<bool> never;
    for (int block = 0; block < 300; ++block) {
      if (random.pick(0, 20) == 0) {
        const std::uint32_t n = kTableSizes[random.pick(0, std::size(kTableSizes) - 1)];
        ASSERT_EQ(nghttp2_hd_deflate_change_table_size(deflater, n), 0);
        d.set_max_table_size(n);
      }
      const Fields fields = random.next(never);
      const auto nva = nv_of(fields, never);
      std::vector<std::uint8_t> out(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()));
      const auto len = nghttp2_hd_deflate_hd(deflater, out.data(), out.size(), nva.data(), nva.size());
      ASSERT_GE(len, 0);
      out.resize(static_cast<std::size_t>(len));
      Fields got;
      ASSERT_EQ(decode(d, out, got), 0) << "seed " << seed << " block " << block;
      ASSERT_EQ(got, fields) << "seed " << seed << " block " << block;
    }
    nghttp2_hd_deflate_del(deflater);
  }
}

Fields inflate(nghttp2_hd_inflater* inflater, const std::vector<std::uint8_t>& block) {
  Fields out;
  const std::uint8_t* in = block.data();
  std::size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const auto rv = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
    if (rv < 0) {
      ADD_FAILURE() << "nghttp2_hd_inflate_hd2: " << rv;
      return out;
    }
    in += rv;
    left -= static_cast<std::size_t>(rv);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      out.emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                       std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater);
      return out;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return out;
  }
}

TEST(HpackEncoder, Nghttp2DecodesOurBlocks) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    RandomFields random(seed);
    nghttp2_hd_inflater* inflater = nullptr;
    ASSERT_EQ(nghttp2_hd_inflate_new(&inflater), 0);
    Encoder e;
    e.set_huffman(seed % 2 == 0);
    Decoder d;  // ours, beside it: the two tables must agree
    std::vector<bool> never;
    for (int block = 0; block < 300; ++block) {
      if (random.pick(0, 20) == 0) {
        const std::uint32_t n = kTableSizes[random.pick(0, std::size(kTableSizes) - 1)];
        ASSERT_EQ(nghttp2_hd_inflate_change_table_size(inflater, n), 0);
        e.set_peer_max_table_size(n);
        d.set_max_table_size(n);
      }
      const Fields fields = random.next(never);
      const auto bytes = encode(e, fields, never);
      ASSERT_EQ(inflate(inflater, bytes), fields) << "seed " << seed << " block " << block;
      Fields got;
      ASSERT_EQ(decode(d, bytes, got), 0);
      ASSERT_EQ(got, fields);
      ASSERT_EQ(d.table_size(), e.table_size());
      ASSERT_EQ(d.table_count(), e.table_count());
    }
    nghttp2_hd_inflate_del(inflater);
  }
}

// ---- steady state (run under callgrind for instructions per field) ----

int count_fields(void* context, std::string_view name, std::string_view value) {
  *static_cast<std::size_t*>(context) += name.size() + value.size();
  return 0;
}

// h2load's request, all indexed after the first block.
TEST(HpackSteadyState, DecodeIndexedRequestBlock) {
  const Fields request = {{":method", "GET"}, {":path", "/"}, {":scheme", "https"}, {":authority", "127.0.0.1:8443"},
                          {"accept", "*/*"}, {"accept-encoding", "gzip, deflate"}, {"user-agent", "h2load nghttp2/1.52.0"}};
  Encoder e;
  Decoder d;
  Fields f;
  ASSERT_EQ(decode(d, encode(e, request), f), 0);
  const auto block = encode(e, request);
  ASSERT_EQ(block.size(), request.size());
  std::size_t total = 0;
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(d.decode(block.data(), block.size(), count_fields, &total), 0);
  std::size_t per_block = 0;
  for (const auto& [n, v] : request) per_block += n.size() + v.size();
  EXPECT_EQ(total, 10000u * per_block);
}

// A server's response head: the same fields each time but the date, which changes now and then.
TEST(HpackSteadyState, EncodeRepeatedResponseHead) {
  Encoder e;
  ByteBuf out = default_allocator().buffer();
  std::string date = "Wed, 02 Dec 2026 18:00:00 GMT";
  std::size_t bytes = 0;
  for (int i = 0; i < 10000; ++i) {
    if (i % 1000 == 0) date[23] = static_cast<char>('0' + i / 1000);
    out.clear();
    e.begin_block(out);
    e.encode(out, ":status", "200");
    e.encode(out, "content-type", "text/plain");
    e.encode(out, "content-length", "13");
    e.encode(out, "date", date);
    e.encode(out, "server", "weft");
    e.encode(out, "x-app", "a");
    bytes += out.readable_bytes();
  }
  EXPECT_LT(bytes, 10000u * 6 + 20u * 40);
}

}  // namespace
}  // namespace weft::http2::hpack
