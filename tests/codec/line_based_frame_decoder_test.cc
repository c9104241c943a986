#include "weft/codec/line_based_frame_decoder.h"

#include <gtest/gtest.h>

#include "codec/decoder_harness.h"

namespace weft {
namespace {

using test::all_splits;
using test::decode_chunks;

auto line_decoder(std::size_t max, bool strip = true, bool fail_fast = false) {
  return [=] { return std::make_shared<LineBasedFrameDecoder>(max, strip, fail_fast); };
}

using Frames = std::vector<std::string>;

TEST(LineBasedFrameDecoderTest, SplitAtEveryByteBoundary) {
  const std::string input = "first\r\nsecond\n\nthird\r\n";
  for (const auto& chunks : all_splits(input)) {
    auto r = decode_chunks(line_decoder(16), chunks);
    EXPECT_EQ(r.frames, (Frames{"first", "second", "", "third"}));
    EXPECT_TRUE(r.errors->errors.empty());
  }
}

TEST(LineBasedFrameDecoderTest, KeepsDelimiterWhenAsked) {
  auto r = decode_chunks(line_decoder(16, false), {"a\r\nb\n"});
  EXPECT_EQ(r.frames, (Frames{"a\r\n", "b\n"}));
}

TEST(LineBasedFrameDecoderTest, ManyFramesInOneRead) {
  std::string input;
  Frames expected;
  for (int i = 0; i < 1000; ++i) {
    input += "line " + std::to_string(i) + "\n";
    expected.push_back("line " + std::to_string(i));
  }
  auto r = decode_chunks(line_decoder(64), {input});
  EXPECT_EQ(r.frames, expected);
}

TEST(LineBasedFrameDecoderTest, BareCarriageReturnIsPartOfTheLine) {
  auto r = decode_chunks(line_decoder(16), {"a\rb\n"});
  EXPECT_EQ(r.frames, (Frames{"a\rb"}));
}

TEST(LineBasedFrameDecoderTest, LineOfExactlyMaxLengthPassesInEverySplit) {
  const std::string input = "abcd\r\nxy\n";
  for (const auto& chunks : all_splits(input)) {
    auto r = decode_chunks(line_decoder(4), chunks);
    EXPECT_EQ(r.frames, (Frames{"abcd", "xy"}));
    EXPECT_TRUE(r.errors->errors.empty()) << r.errors->first_what();
  }
}

TEST(LineBasedFrameDecoderTest, OversizeLineIsDiscardedAndReportedOnceInEverySplit) {
  const std::string input = "ok\n0123456789abcdef\r\nnext\n";
  for (bool fail_fast : {false, true}) {
    for (const auto& chunks : all_splits(input)) {
      auto r = decode_chunks(line_decoder(8, true, fail_fast), chunks);
      EXPECT_EQ(r.frames, (Frames{"ok", "next"}));
      ASSERT_EQ(r.errors->count<TooLongFrameError>(), 1u) << "fail_fast " << fail_fast;
      EXPECT_NE(r.errors->first_what().find("max_length"), std::string::npos) << r.errors->first_what();
    }
  }
}

TEST(LineBasedFrameDecoderTest, FailFastReportsBeforeTheDelimiterArrives) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<LineBasedFrameDecoder>(8, true, true);
  ch.pipeline().add_last("decoder", decoder);
  auto errors = std::make_shared<test::ErrorRecorder>();
  ch.pipeline().add_last("errors", errors);
  ch.write_inbound(ByteBuf::copy_of("0123456789"));
  EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);
  ch.write_inbound(ByteBuf::copy_of("more\nok\n"));
  EXPECT_EQ(errors->count<TooLongFrameError>(), 1u);
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "ok");
}

TEST(LineBasedFrameDecoderTest, MemoryStaysBoundedWhileDiscarding) {
  EmbeddedChannel ch;
  auto decoder = std::make_shared<LineBasedFrameDecoder>(100);
  ch.pipeline().add_last("decoder", decoder);
  ch.pipeline().add_last("errors", std::make_shared<test::ErrorRecorder>());
  const std::string chunk(1000, 'x');
  for (int i = 0; i < 1000; ++i) {
    ch.write_inbound(ByteBuf::copy_of(chunk));
    ASSERT_LE(decoder->buffered_bytes(), 101u);
  }
  ch.write_inbound(ByteBuf::copy_of("\nfine\n"));
  EXPECT_EQ(ch.read_inbound<ByteBuf>()->to_string(), "fine");
  auto* rec = ch.pipeline().get_as<test::ErrorRecorder>("errors");
  ASSERT_EQ(rec->count<TooLongFrameError>(), 1u);
  try {
    std::rethrow_exception(rec->errors.front());
  } catch (const TooLongFrameError& e) {
    EXPECT_EQ(e.limit(), 100u);
    EXPECT_EQ(e.length(), 1000u * 1000u);
    EXPECT_EQ(e.limit_name(), "max_length");
  }
}

TEST(LineBasedFrameDecoderTest, EndOfInputMidLineIsReported) {
  for (const auto& chunks : all_splits("a\nbc")) {
    auto r = decode_chunks(line_decoder(16), chunks, /*close=*/true);
    EXPECT_EQ(r.frames, (Frames{"a"}));
    ASSERT_EQ(r.errors->count<TruncatedFrameError>(), 1u);
  }
  auto clean = decode_chunks(line_decoder(16), {"a\n"}, true);
  EXPECT_TRUE(clean.errors->errors.empty());
}

TEST(LineBasedFrameDecoderTest, FrameArrivingWholeIsASliceOfTheReadBuffer) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("decoder", std::make_shared<LineBasedFrameDecoder>(64));
  ByteBuf in = ByteBuf::copy_of("hello\nworld\n");
  const std::uint8_t* base = in.data();
  ch.write_inbound(std::move(in));
  auto hello = ch.read_inbound<ByteBuf>();
  auto world = ch.read_inbound<ByteBuf>();
  ASSERT_TRUE(hello && world);
  EXPECT_EQ(hello->read_ptr(), base);
  EXPECT_EQ(world->read_ptr(), base + 6);
  EXPECT_TRUE(hello->shares_storage_with(*world));
}

}  // namespace
}  // namespace weft
