#include "weft/codec/byte_to_message_decoder.h"

#include <gtest/gtest.h>

#include "codec/decoder_harness.h"
#include "weft/channel/events.h"
#include "weft/codec/fixed_length_frame_decoder.h"
#include "weft/codec/line_based_frame_decoder.h"

namespace weft {
namespace {

// Decodes a u8 length followed by that many bytes into a std::string.
class PascalStringDecoder final : public ByteToMessageDecoder<std::string> {
 protected:
  std::optional<std::string> decode(Context&, ByteBuf& in) override {
    if (in.readable_bytes() < 1) return std::nullopt;
    const std::size_t n = in.get_u8(in.reader_index());
    if (in.readable_bytes() < n + 1) return std::nullopt;
    in.skip_bytes(1);
    std::string s(n, '\0');
    in.read_bytes(s.data(), n);
    return s;
  }
};

// Removes the decoder named "decoder" when it sees "SWITCH", then passes ByteBufs through as text.
class Switcher final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& buf) override {
    if (!switched_ && buf.view() == "SWITCH") {
      switched_ = true;
      ctx.pipeline().remove("decoder");
      return;
    }
    ctx.fire_read(std::move(buf));
  }

 private:
  bool switched_ = false;
};

TEST(ByteToMessageDecoderTest, DecodesTypedMessagesAcrossReads) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<PascalStringDecoder>());
  ch.write_inbound(ByteBuf::copy_of("\x03" "ab"));
  EXPECT_EQ(ch.inbound_count(), 0u);
  ch.write_inbound(ByteBuf::copy_of("c\x01x\x00"));
  EXPECT_EQ(ch.read_inbound<std::string>(), "abc");
  EXPECT_EQ(ch.read_inbound<std::string>(), "x");
}

TEST(ByteToMessageDecoderTest, RemovedMidStreamPassesLeftoverBytesOn) {
  for (const auto& chunks : test::all_splits("a\nSWITCH\nraw bytes\nmore")) {
    EmbeddedChannel ch;
    ch.pipeline().add_last("decoder", std::make_shared<LineBasedFrameDecoder>(64));
    ch.pipeline().add_last("switch", std::make_shared<Switcher>());
    for (const auto& c : chunks) ch.write_inbound(ByteBuf::copy_of(c));
    EXPECT_EQ(ch.pipeline().names(), (std::vector<std::string>{"switch"}));
    ASSERT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "a");
    std::string rest;
    while (auto b = ch.read_inbound<ByteBuf>()) rest += b->to_string();
    EXPECT_EQ(rest, "raw bytes\nmore");
  }
}

TEST(ByteToMessageDecoderTest, RemovedFromOutsideLosesNoByte) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<FixedLengthFrameDecoder>(4));
  ch.write_inbound(ByteBuf::copy_of("abcdef"));
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "abcd");
  ch.pipeline().remove("decoder");
  ch.run_pending();
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "ef");
}

TEST(ByteToMessageDecoderTest, InputShutdownRunsEndOfInput) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<FixedLengthFrameDecoder>(4));
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  ch.write_inbound(ByteBuf::copy_of("abcdef"));
  ch.pipeline().fire_user_event(ChannelInputShutdownEvent{});
  EXPECT_EQ(errors->count<TruncatedFrameError>(), 1u);
  ch.finish();
  EXPECT_EQ(errors->count<TruncatedFrameError>(), 1u);  // reported once
}

TEST(ByteToMessageDecoderTest, LeftoverIsCopiedOnlyWhenAFrameIsSplit) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<FixedLengthFrameDecoder>(4);
  ch.pipeline().add_last("decoder", decoder);
  ByteBuf first = ByteBuf::copy_of("abcdef");
  ch.write_inbound(std::move(first));
  EXPECT_EQ(decoder->buffered_bytes(), 2u);
  ByteBuf second = ByteBuf::copy_of("gh");
  ch.write_inbound(std::move(second));
  EXPECT_EQ(decoder->buffered_bytes(), 0u);
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "abcd");
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "efgh");
  // Buffer fully consumed: the next whole frame is a slice of its own read buffer.
  ByteBuf third = ByteBuf::copy_of("ijkl");
  const std::uint8_t* base = third.data();
  ch.write_inbound(std::move(third));
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->read_ptr(), base);
}

TEST(ByteToMessageDecoderTest, HeldFramesStayIntactWhileMoreBytesArrive) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<LineBasedFrameDecoder>(1 << 20));
  ch.write_inbound(ByteBuf::copy_of("one\ntw"));
  auto one = ch.read_inbound<ByteBuf>();
  for (int i = 0; i < 100; ++i) ch.write_inbound(ByteBuf::copy_of(std::string(100, 'o')));
  ch.write_inbound(ByteBuf::copy_of("\n"));
  EXPECT_EQ(one->to_string(), "one");
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "tw" + std::string(10000, 'o'));
}

}  // namespace
}  // namespace weft
