// A handler with per-channel state is in one pipeline at a time; one marked sharable may be in many.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/codec/http1/router.h"
#include "weft/codec/line_based_frame_decoder.h"
#include "weft/codec/string_codec.h"
#include "weft/core/error.h"
#include "weft/handler/logging_handler.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// What the issue saw: the decoder's cumulation is per channel, so sharing it mixes two clients' bytes.
TEST(Sharable, AStatefulHandlerIsRefusedBySecondPipeline) {
  auto decoder = std::make_shared<LineBasedFrameDecoder>(64);
  EmbeddedChannel a;
  EmbeddedChannel b;
  a.pipeline().add_last("lines", decoder);
  try {
    b.pipeline().add_last("lines", decoder);
    FAIL() << "a decoder with per-channel state was added to a second pipeline";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'lines'"), HasSubstr("LineBasedFrameDecoder"), HasSubstr("sharable")));
  }
  EXPECT_TRUE(b.pipeline().names().empty());

  // The leak the issue showed cannot happen: each channel decodes its own bytes.
  a.write_inbound(ByteBuf::copy_of("secret-of-A"));
  b.pipeline().add_last("lines", std::make_shared<LineBasedFrameDecoder>(64));
  b.write_inbound(ByteBuf::copy_of(" hello from B\n"));
  auto line = b.read_inbound<ByteBuf>();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->to_string(), " hello from B");
}

TEST(Sharable, AStatefulHandlerIsRefusedTwiceInOnePipeline) {
  auto decoder = std::make_shared<LineBasedFrameDecoder>(64);
  EmbeddedChannel ch;
  ch.pipeline().add_last("one", decoder);
  EXPECT_THROW(ch.pipeline().add_last("two", decoder), std::invalid_argument);
  EXPECT_EQ(ch.pipeline().names(), std::vector<std::string>{"one"});
}

TEST(Sharable, ARemovedHandlerMayBeAddedAgain) {
  auto decoder = std::make_shared<LineBasedFrameDecoder>(64);
  EmbeddedChannel a;
  EmbeddedChannel b;
  a.pipeline().add_last("lines", decoder);
  a.pipeline().remove("lines");
  EXPECT_NO_THROW(b.pipeline().add_last("lines", decoder));
}

TEST(Sharable, AHandlerWhoseAddFailedIsFree) {
  auto decoder = std::make_shared<LineBasedFrameDecoder>(64);  // takes ByteBuf
  EmbeddedChannel a;
  a.pipeline().add_last("strings", std::make_shared<StringDecoder>());
  EXPECT_THROW(a.pipeline().add_last("lines", decoder), PipelineTypeError);  // std::string arrives, not ByteBuf
  EmbeddedChannel b;
  EXPECT_NO_THROW(b.pipeline().add_last("lines", decoder));
}

TEST(Sharable, ASharableHandlerServesManyPipelines) {
  auto router = std::make_shared<http::Router>();
  auto logging = std::make_shared<LoggingHandler>("wire");
  EXPECT_TRUE(router->is_sharable());
  EXPECT_TRUE(logging->is_sharable());
  EXPECT_TRUE(std::make_shared<StringDecoder>()->is_sharable());
  EXPECT_FALSE(std::make_shared<LineBasedFrameDecoder>(64)->is_sharable());
  EmbeddedChannel a;
  EmbeddedChannel b;
  for (EmbeddedChannel* ch : {&a, &b}) {
    ch->pipeline().add_last("log", logging);
    ch->pipeline().add_last("router", router);
  }
  EXPECT_NO_THROW(a.pipeline().add_last("log-again", logging));
}

}  // namespace
}  // namespace weft
