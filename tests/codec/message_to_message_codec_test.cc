// MessageToMessageDecoder/Encoder and MessageToByteEncoder: zero, one or many outputs per input,
// and codec errors that become exception events while the channel stays open.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "codec/decoder_harness.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/codec_error.h"
#include "weft/codec/message_to_message_codec.h"

namespace weft {
namespace {

// "1,2,3" -> 1, 2, 3; "" -> nothing; a non-digit is a DecoderError.
class CsvDecoder final : public MessageToMessageDecoder<std::string, int> {
 protected:
  void decode(Context&, std::string&& line, Output<int>& out) override {
    std::size_t start = 0;
    while (start < line.size()) {
      std::size_t comma = line.find(',', start);
      if (comma == std::string::npos) comma = line.size();
      int v = 0;
      for (std::size_t i = start; i < comma; ++i) {
        if (line[i] < '0' || line[i] > '9') throw DecoderError("not a number: " + line);
        v = v * 10 + (line[i] - '0');
      }
      out(std::move(v));
      start = comma + 1;
    }
  }
};

// n -> n copies of "x<n>" (zero for n == 0).
class RepeatEncoder final : public MessageToMessageEncoder<int, std::string> {
 protected:
  void encode(Context&, int&& n, Output<std::string>& out) override {
    for (int i = 0; i < n; ++i) out("x" + std::to_string(n));
  }
};

// A u32 as 4 big-endian bytes; 0 encodes to nothing; UINT32_MAX cannot be encoded.
class U32Encoder final : public MessageToByteEncoder<std::uint32_t> {
 public:
  std::size_t capacity_seen = 0;

 protected:
  void encode(Context&, std::uint32_t&& v, ByteBuf& out) override {
    if (v == UINT32_MAX) throw EncoderError("reserved value");
    capacity_seen = out.capacity();
    if (v != 0) out.write_u32(v);
  }
  std::size_t size_hint(const std::uint32_t&) const override { return 4; }
};

TEST(MessageToMessageDecoderTest, EmitsZeroOneOrManyAndKeepsTheChannelOpenOnError) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("csv", std::make_shared<CsvDecoder>());
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  ch.write_inbound(std::string("1,22,333"));
  ch.write_inbound(std::string(""));
  ch.write_inbound(std::string("7"));
  EXPECT_EQ(ch.read_inbound<int>(), 1);
  EXPECT_EQ(ch.read_inbound<int>(), 22);
  EXPECT_EQ(ch.read_inbound<int>(), 333);
  EXPECT_EQ(ch.read_inbound<int>(), 7);
  EXPECT_EQ(ch.inbound_count(), 0u);
  ch.write_inbound(std::string("4,x"));
  EXPECT_EQ(ch.read_inbound<int>(), 4);  // emitted before the error: passed on at once
  EXPECT_EQ(errors->count<DecoderError>(), 1u);
  EXPECT_TRUE(ch.is_open());
  ch.write_inbound(std::string("5"));
  EXPECT_EQ(ch.read_inbound<int>(), 5);
}

TEST(MessageToMessageEncoderTest, EmitsEveryOutputInOrder) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("repeat", std::make_shared<RepeatEncoder>());
  ch.write_outbound(2);
  ch.write_outbound(0);
  ch.write_outbound(1);
  EXPECT_EQ(ch.read_outbound<std::string>(), "x2");
  EXPECT_EQ(ch.read_outbound<std::string>(), "x2");
  EXPECT_EQ(ch.read_outbound<std::string>(), "x1");
  EXPECT_EQ(ch.outbound_count(), 0u);
}

TEST(MessageToByteEncoderTest, WritesOneBufferPerMessageAndNothingWhenEmpty) {
  EmbeddedChannel ch;
  auto enc = std::make_shared<U32Encoder>();
  ch.pipeline().add_last("u32", enc);
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_first("errors", errors);
  ch.write_outbound(std::uint32_t{0x01020304});
  EXPECT_GE(enc->capacity_seen, 4u);
  auto buf = ch.read_outbound<ByteBuf>();
  ASSERT_TRUE(buf.has_value());
  EXPECT_EQ(buf->to_string(), std::string("\x01\x02\x03\x04", 4));
  ch.write_outbound(std::uint32_t{0});
  EXPECT_EQ(ch.outbound_count(), 0u);
  ch.write_outbound(std::uint32_t{UINT32_MAX});
  EXPECT_EQ(ch.outbound_count(), 0u);
  EXPECT_EQ(errors->count<EncoderError>(), 1u);
  EXPECT_TRUE(ch.is_open());
}

}  // namespace
}  // namespace weft
