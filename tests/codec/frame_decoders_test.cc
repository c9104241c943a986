// Delimiter-based, fixed-length and length-field-based decoders, the prepender and the string codec.

#include <gtest/gtest.h>

#include "codec/decoder_harness.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/codec/delimiter_based_frame_decoder.h"
#include "weft/codec/fixed_length_frame_decoder.h"
#include "weft/codec/length_field_based_frame_decoder.h"
#include "weft/codec/string_codec.h"

namespace weft {
namespace {

using test::all_splits;
using test::decode_chunks;
using Frames = std::vector<std::string>;
using namespace std::string_literals;

// ---- delimiter-based

auto delim(std::size_t max, std::vector<std::string> d, bool strip = true, bool fail_fast = false) {
  return [=] { return std::make_shared<DelimiterBasedFrameDecoder>(max, d, strip, fail_fast); };
}

TEST(DelimiterBasedFrameDecoderTest, SplitAtEveryByteBoundary) {
  for (const auto& chunks : all_splits("ab||cd|efg||||")) {
    auto r = decode_chunks(delim(8, {"||"}), chunks);
    EXPECT_EQ(r.frames, (Frames{"ab", "cd|efg", ""}));
    EXPECT_TRUE(r.errors->errors.empty());
  }
}

TEST(DelimiterBasedFrameDecoderTest, EarliestDelimiterWinsLongestAtSamePlace) {
  auto r = decode_chunks(delim(16, {"\n", "\r\n", "\0"s}), {"a\r\nb\0c\n"s});
  EXPECT_EQ(r.frames, (Frames{"a", "b", "c"}));
  auto kept = decode_chunks(delim(16, {"\n", "\r\n"}, false), {"a\r\n"});
  EXPECT_EQ(kept.frames, (Frames{"a\r\n"}));
}

TEST(DelimiterBasedFrameDecoderTest, OversizeFrameDiscardedInEverySplit) {
  for (bool fail_fast : {false, true}) {
    for (const auto& chunks : all_splits("x;0123456789;y;")) {
      auto r = decode_chunks(delim(4, {";"}, true, fail_fast), chunks);
      EXPECT_EQ(r.frames, (Frames{"x", "y"}));
      ASSERT_EQ(r.errors->count<TooLongFrameError>(), 1u);
      EXPECT_NE(r.errors->first_what().find("max_frame_length"), std::string::npos);
    }
  }
}

TEST(DelimiterBasedFrameDecoderTest, FailFastDecidesWhenTheErrorFires) {
  for (bool fail_fast : {true, false}) {
    EmbeddedChannel ch;
    ch.pipeline().add_last("decoder", std::make_shared<DelimiterBasedFrameDecoder>(
                                          4, std::vector<std::string>{";"}, true, fail_fast));
    auto errors = std::make_shared<test::ErrorRecorder>();
    ch.pipeline().add_last("errors", errors);
    ch.write_inbound(ByteBuf::copy_of("0123456789"));
    EXPECT_EQ(errors->count<TooLongFrameError>(), fail_fast ? 1u : 0u);  // no delimiter yet
    ch.write_inbound(ByteBuf::copy_of("more;ok;"));
    EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);
    EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "ok");
    EXPECT_EQ(ch.inbound_count(), 0u);
  }
}

TEST(DelimiterBasedFrameDecoderTest, MemoryStaysBoundedAndEndOfInputIsReported) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<DelimiterBasedFrameDecoder>(50, std::vector<std::string>{"END"});
  ch.pipeline().add_last("decoder", decoder);
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  for (int i = 0; i < 100; ++i) {
    ch.write_inbound(ByteBuf::copy_of(std::string(500, 'z')));
    ASSERT_LE(decoder->buffered_bytes(), 52u);
  }
  ch.write_inbound(ByteBuf::copy_of("ENDpartial"));
  EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);
  ch.finish();
  EXPECT_EQ(errors->count<TruncatedFrameError>(), 1u);
  EXPECT_EQ(ch.inbound_count(), 0u);
}

// The decoder with decode() reachable, to feed it one cumulation buffer by hand.
struct ExposedDelimiterDecoder : DelimiterBasedFrameDecoder {
  using DelimiterBasedFrameDecoder::DelimiterBasedFrameDecoder;
  using DelimiterBasedFrameDecoder::decode;
};

// A frame arriving in small reads is searched once, not from its start at every read (that made a
// 64 KiB frame in 1-byte reads cost 300 times the line decoder). Observed directly: bytes that were
// searched already are not searched again, so a delimiter written into them afterwards goes unseen,
// while one at the tail, where a delimiter may still be starting, is found.
TEST(DelimiterBasedFrameDecoderTest, BytesAlreadySearchedAreNotSearchedAgain) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<ExposedDelimiterDecoder>(1024, std::vector<std::string>{"END"});
  ch.pipeline().add_last("decoder", decoder);
  Context& ctx = *ch.pipeline().context("decoder");
  ByteBuf in = default_allocator().buffer(64);
  in.write_bytes("aaaaaaaaaa");
  EXPECT_FALSE(decoder->decode(ctx, in).has_value());  // searched; the last 2 bytes may start "END"
  in.set_bytes(0, "END", 3);                             // inside what was searched
  EXPECT_FALSE(decoder->decode(ctx, in).has_value()) << "the searched bytes were searched again";
  in.write_bytes("xEN");
  EXPECT_FALSE(decoder->decode(ctx, in).has_value());
  in.write_bytes("D");
  auto frame = decoder->decode(ctx, in);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->to_string(), "ENDaaaaaaax");
  // After a frame the search starts afresh at the new reader index.
  in.write_bytes("bbEND");
  frame = decoder->decode(ctx, in);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->to_string(), "bb");
}

// ---- fixed length

TEST(FixedLengthFrameDecoderTest, SplitAtEveryByteBoundaryAndManyInOneRead) {
  for (const auto& chunks : all_splits("abcdefghijkl")) {
    auto r = decode_chunks([] { return std::make_shared<FixedLengthFrameDecoder>(3); }, chunks);
    EXPECT_EQ(r.frames, (Frames{"abc", "def", "ghi", "jkl"}));
  }
  auto r = decode_chunks([] { return std::make_shared<FixedLengthFrameDecoder>(3); }, {"abcdefgh"}, true);
  EXPECT_EQ(r.frames, (Frames{"abc", "def"}));
  EXPECT_EQ(r.errors->count<TruncatedFrameError>(), 1u);
  EXPECT_THROW(FixedLengthFrameDecoder(0), std::invalid_argument);
}

// ---- length field

using LF = LengthFieldBasedFrameDecoder;

std::string be(std::uint64_t v, int n) {
  std::string s;
  for (int i = n - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}
std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

auto lf(LF::Options o) {
  return [o] { return std::make_shared<LF>(o); };
}

TEST(LengthFieldBasedFrameDecoderTest, EveryFieldSizeAndByteOrderInEverySplit) {
  for (int n : {1, 2, 3, 4, 8}) {
    for (bool big : {true, false}) {
      std::string input;
      for (std::string p : {"hello", "", "world!"}) input += (big ? be(p.size(), n) : le(p.size(), n)) + p;
      LF::Options o{.max_frame_length = 64,
                    .length_field_length = static_cast<std::size_t>(n),
                    .initial_bytes_to_strip = static_cast<std::size_t>(n),
                    .byte_order = big ? ByteOrder::big_endian : ByteOrder::little_endian};
      for (const auto& chunks : all_splits(input)) {
        auto r = decode_chunks(lf(o), chunks);
        EXPECT_EQ(r.frames, (Frames{"hello", "", "world!"})) << "field " << n << " big " << big;
        EXPECT_TRUE(r.errors->errors.empty());
      }
    }
  }
}

TEST(LengthFieldBasedFrameDecoderTest, OffsetAdjustmentAndStrip) {
  // [magic:2][len:2 = whole frame length][body]; keep the magic, strip nothing.
  const std::string frame = "MG" + be(7, 2) + "abc";
  auto r = decode_chunks(lf({.max_frame_length = 64, .length_field_offset = 2, .length_field_length = 2,
                             .length_adjustment = -4}),
                         {frame + frame});
  EXPECT_EQ(r.frames, (Frames{frame, frame}));
  // [len:1][type:1][body]: the length counts the body only; strip the length, keep the type.
  auto r2 = decode_chunks(lf({.max_frame_length = 64, .length_field_length = 1, .length_adjustment = 1,
                              .initial_bytes_to_strip = 1}),
                          {be(3, 1) + "Tabc"});
  EXPECT_EQ(r2.frames, (Frames{"Tabc"}));
}

TEST(LengthFieldBasedFrameDecoderTest, OversizeFrameIsSkippedInEverySplit) {
  const std::string input = be(2, 2) + "ok" + be(40, 2) + std::string(40, 'X') + be(3, 2) + "end";
  for (bool fail_fast : {false, true}) {
    for (const auto& chunks : all_splits(input)) {
      auto r = decode_chunks(lf({.max_frame_length = 16, .length_field_length = 2, .initial_bytes_to_strip = 2,
                                 .fail_fast = fail_fast}),
                             chunks);
      EXPECT_EQ(r.frames, (Frames{"ok", "end"}));
      ASSERT_EQ(r.errors->count<TooLongFrameError>(), 1u);
      EXPECT_NE(r.errors->first_what().find("max_frame_length"), std::string::npos);
    }
  }
}

TEST(LengthFieldBasedFrameDecoderTest, HugeDeclaredLengthNeverGrowsMemory) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<LF>(LF::Options{.max_frame_length = 1024, .length_field_length = 8});
  ch.pipeline().add_last("decoder", decoder);
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  ch.write_inbound(ByteBuf::copy_of(be(std::uint64_t{1} << 40, 8)));
  EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);  // fail fast: reported at once
  for (int i = 0; i < 100; ++i) {
    ch.write_inbound(ByteBuf::copy_of(std::string(4096, 'x')));
    ASSERT_EQ(decoder->buffered_bytes(), 0u);
  }
  ch.write_inbound(ByteBuf::copy_of(be(std::uint64_t{1} << 63, 8)));  // negative as a signed length
  EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);
}

TEST(LengthFieldBasedFrameDecoderTest, CorruptLengthsAreTypedErrors) {
  // negative 8-byte length
  auto neg = decode_chunks(lf({.max_frame_length = 64, .length_field_length = 8}), {be(~std::uint64_t{0}, 8)});
  EXPECT_EQ(neg.errors->count<CorruptedFrameError>(), 1u);
  // adjustment making the frame shorter than its header
  auto shorter = decode_chunks(lf({.max_frame_length = 64, .length_field_length = 2, .length_adjustment = -10}),
                               {be(1, 2) + "a"});
  EXPECT_EQ(shorter.errors->count<CorruptedFrameError>(), 1u);
  // strip more than the frame
  auto strip = decode_chunks(lf({.max_frame_length = 64, .length_field_length = 1, .initial_bytes_to_strip = 9}),
                             {be(2, 1) + "ab"});
  EXPECT_EQ(strip.errors->count<CorruptedFrameError>(), 1u);
  EXPECT_THROW(LF({.length_field_length = 5}), std::invalid_argument);
}

TEST(LengthFieldBasedFrameDecoderTest, EndOfInputMidFrame) {
  auto r = decode_chunks(lf({.max_frame_length = 64, .length_field_length = 2, .initial_bytes_to_strip = 2}),
                         {be(1, 2) + "a" + be(5, 2) + "ab"}, true);
  EXPECT_EQ(r.frames, (Frames{"a"}));
  ASSERT_EQ(r.errors->count<TruncatedFrameError>(), 1u);
}

TEST(LengthFieldPrependerTest, RoundTripsThroughTheDecoder) {
  for (std::size_t n : {1, 2, 3, 4, 8}) {
    for (bool big : {true, false}) {
      EmbeddedChannel ch;
      const ByteOrder order = big ? ByteOrder::big_endian : ByteOrder::little_endian;
      ch.pipeline().add_last("prepender", std::make_shared<LengthFieldPrepender>(
                                              LengthFieldPrepender::Options{.length_field_length = n, .byte_order = order}));
      ch.write_outbound(ByteBuf::copy_of("payload"));
      std::string wire;
      while (auto b = ch.read_outbound<ByteBuf>()) wire += b->to_string();
      EXPECT_EQ(wire, (big ? be(7, static_cast<int>(n)) : le(7, static_cast<int>(n))) + "payload");
      auto r = decode_chunks(lf({.max_frame_length = 64, .length_field_length = n, .initial_bytes_to_strip = n,
                                 .byte_order = order}),
                             {wire});
      EXPECT_EQ(r.frames, (Frames{"payload"}));
    }
  }
}

TEST(LengthFieldPrependerTest, PayloadIsNotCopiedAndOverflowIsAnError) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("prepender", std::make_shared<LengthFieldPrepender>(LengthFieldPrepender::Options{
                                          .length_field_length = 1, .length_includes_length_field = true}));
  ByteBuf payload = ByteBuf::copy_of("abc");
  const std::uint8_t* base = payload.read_ptr();
  ch.write_outbound(std::move(payload));
  EXPECT_EQ(ch.read_outbound<ByteBuf>()->to_string(), "\x04");
  EXPECT_EQ(ch.read_outbound<ByteBuf>()->read_ptr(), base);
  ch.write_outbound(ByteBuf::copy_of(std::string(300, 'x')));
  EXPECT_EQ(ch.outbound_count(), 0u);
  EXPECT_THROW(ch.check_exception(), EncoderError);
}

TEST(StringCodecTest, DecodesAndEncodes) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<StringDecoder>());
  ch.pipeline().add_last("encoder", std::make_shared<StringEncoder>());
  ch.write_inbound(ByteBuf::copy_of("h\xc3\xa9llo"));
  EXPECT_EQ(ch.read_inbound<std::string>(), "h\xc3\xa9llo");
  ch.write_outbound(std::string("bye"));
  EXPECT_EQ(ch.read_outbound<ByteBuf>()->to_string(), "bye");
}

}  // namespace
}  // namespace weft
