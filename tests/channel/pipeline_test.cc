#include "weft/channel/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"
#include "weft/core/error.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ByteBuf -> std::string
class ToString final : public InboundHandler<ByteBuf, std::string> {
 public:
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.fire_read(buf.to_string()); }
};

// std::string -> int (length)
class ToLength final : public InboundHandler<std::string, int> {
 public:
  void channel_read(Context& ctx, std::string&& s) override { ctx.fire_read(static_cast<int>(s.size())); }
};

// Outbound std::string -> ByteBuf
class StringEncoder final : public OutboundHandler<std::string, ByteBuf> {
 public:
  void write(Context& ctx, std::string&& s) override { ctx.write(ByteBuf::copy_of(s)); }
};

// Records the events it sees and forwards them.
class Recorder final : public Handler {
 public:
  explicit Recorder(std::vector<std::string>& log, std::string tag) : log_(log), tag_(std::move(tag)) {}
  void channel_active(Context& ctx) override {
    log_.push_back(tag_ + ":active");
    ctx.fire_channel_active();
  }
  void channel_inactive(Context& ctx) override {
    log_.push_back(tag_ + ":inactive");
    ctx.fire_channel_inactive();
  }
  void channel_read_complete(Context& ctx) override {
    log_.push_back(tag_ + ":read_complete");
    ctx.fire_read_complete();
  }
  void user_event(Context& ctx, const std::any& e) override {
    log_.push_back(tag_ + ":event");
    ctx.fire_user_event(e);
  }
  void handler_added(Context&) override { log_.push_back(tag_ + ":added"); }
  void handler_removed(Context&) override { log_.push_back(tag_ + ":removed"); }
  void flush(Context& ctx) override {
    log_.push_back(tag_ + ":flush");
    ctx.flush();
  }
  void close(Context& ctx, Promise<void> p) override {
    log_.push_back(tag_ + ":close");
    ctx.close(std::move(p));
  }

 private:
  std::vector<std::string>& log_;
  std::string tag_;
};

TEST(PipelineTest, MessagesFlowThroughTypedHandlersInOrder) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("to_string", std::make_shared<ToString>());
  ch.pipeline().add_last("to_length", std::make_shared<ToLength>());
  EXPECT_TRUE(ch.write_inbound(ByteBuf::copy_of("hello")));
  EXPECT_EQ(ch.read_inbound<int>(), 5);
  EXPECT_FALSE(ch.read_inbound<int>().has_value());
}

TEST(PipelineTest, AddingAMismatchedHandlerFailsWithBothTypeNames) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("to_string", std::make_shared<ToString>());
  // In front of to_string, ToLength would feed it int where it takes ByteBuf.
  EXPECT_THROW(ch.pipeline().add_first("to_length", std::make_shared<ToLength>()), PipelineTypeError);
  ch.pipeline().add_last("to_length", std::make_shared<ToLength>());
  try {
    ch.pipeline().add_last("second_to_string", std::make_shared<ToString>());
    FAIL() << "expected PipelineTypeError";
  } catch (const PipelineTypeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("second_to_string"));
    EXPECT_THAT(e.what(), HasSubstr("to_length"));
    EXPECT_THAT(e.what(), HasSubstr("weft::ByteBuf"));
    EXPECT_THAT(e.what(), HasSubstr("int"));
  }
  EXPECT_THAT(ch.pipeline().names(), ElementsAre("to_string", "to_length"));  // unchanged
}

TEST(PipelineTest, OutboundTypeMismatchIsReportedWhenAdded) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("encoder", std::make_shared<StringEncoder>());
  // A second string encoder after the first: it writes ByteBuf, the first takes std::string.
  EXPECT_THROW(ch.pipeline().add_last("encoder2", std::make_shared<StringEncoder>()), PipelineTypeError);
  EXPECT_THAT(ch.pipeline().names(), ElementsAre("encoder"));
}

TEST(PipelineTest, WrongMessageTypeAtRuntimeBecomesAnExceptionEvent) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("to_length", std::make_shared<ToLength>());
  ch.write_inbound(42);  // an int where std::string is taken
  try {
    ch.check_exception();
    FAIL() << "expected PipelineTypeError";
  } catch (const PipelineTypeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("to_length"));
  }
}

TEST(PipelineTest, EncoderTurnsWritesIntoBytes) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("encoder", std::make_shared<StringEncoder>());
  EXPECT_TRUE(ch.write_outbound(std::string("abc")));
  auto out = ch.read_outbound<ByteBuf>();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->to_string(), "abc");
}

TEST(PipelineTest, DuplicateAndUnknownNamesAreRejected) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("a", std::make_shared<ToString>());
  EXPECT_THROW(ch.pipeline().add_last("a", std::make_shared<ToString>()), std::invalid_argument);
  EXPECT_THROW(ch.pipeline().add_before("missing", "b", std::make_shared<ToString>()), std::invalid_argument);
  EXPECT_THROW(ch.pipeline().remove("missing"), std::invalid_argument);
}

TEST(PipelineTest, PositionalAddsAndEventsVisitHandlersInOrder) {
  std::vector<std::string> log;  // outlives the channel, whose handlers log until torn down
  EmbeddedChannel ch;
  ch.pipeline().add_last("b", std::make_shared<Recorder>(log, "b"));
  ch.pipeline().add_first("a", std::make_shared<Recorder>(log, "a"));
  ch.pipeline().add_after("b", "d", std::make_shared<Recorder>(log, "d"));
  ch.pipeline().add_before("d", "c", std::make_shared<Recorder>(log, "c"));
  EXPECT_THAT(ch.pipeline().names(), ElementsAre("a", "b", "c", "d"));
  log.clear();
  ch.pipeline().fire_user_event(std::any(1));
  ch.pipeline().flush();
  EXPECT_THAT(log, ElementsAre("a:event", "b:event", "c:event", "d:event", "d:flush", "c:flush", "b:flush", "a:flush"));
}

TEST(PipelineTest, CloseRunsInactiveAndRemovesHandlers) {
  std::vector<std::string> log;
  {
    EmbeddedChannel ch;
    ch.pipeline().add_last("r", std::make_shared<Recorder>(log, "r"));
    auto closed = ch.close();
    EXPECT_TRUE(closed.is_done());
    EXPECT_FALSE(ch.is_open());
    ch.run_pending();
    EXPECT_THAT(log, ElementsAre("r:added", "r:close", "r:inactive", "r:removed"));
    EXPECT_TRUE(ch.close().is_done());  // idempotent
  }
  EXPECT_EQ(log.size(), 4u);
}

// Removes itself on the first message and passes it on.
class OneShot final : public InboundHandler<std::string> {
 public:
  void channel_read(Context& ctx, std::string&& s) override {
    ctx.pipeline().remove(*this);
    EXPECT_TRUE(ctx.is_removed());
    ctx.fire_read(s + "!");  // the context still forwards after removal
  }
};

TEST(PipelineTest, HandlerCanRemoveItselfInsideItsCallback) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("one_shot", std::make_shared<OneShot>());
  ch.write_inbound(std::string("a"));
  ch.write_inbound(std::string("b"));
  EXPECT_EQ(ch.read_inbound<std::string>(), "a!");
  EXPECT_EQ(ch.read_inbound<std::string>(), "b");
  EXPECT_TRUE(ch.pipeline().names().empty());
}

// Adds a handler after itself inside its callback; the message already goes through it.
class Installer final : public InboundHandler<std::string> {
 public:
  void channel_read(Context& ctx, std::string&& s) override {
    if (ctx.pipeline().get("suffix") == nullptr) ctx.pipeline().add_after(ctx.name(), "suffix", std::make_shared<Suffix>());
    ctx.fire_read(std::move(s));
  }
  class Suffix final : public InboundHandler<std::string> {
   public:
    void channel_read(Context& ctx, std::string&& s) override { ctx.fire_read(s + "+"); }
  };
};

TEST(PipelineTest, HandlerCanAddHandlersInsideItsCallback) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("installer", std::make_shared<Installer>());
  ch.write_inbound(std::string("x"));
  EXPECT_EQ(ch.read_inbound<std::string>(), "x+");
}

TEST(PipelineTest, ReplaceSwapsAHandlerInPlace) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("to_string", std::make_shared<ToString>());
  ch.pipeline().add_last("x", std::make_shared<ToLength>());
  auto old = ch.pipeline().replace("x", "y", std::make_shared<ToLength>());
  EXPECT_NE(old, nullptr);
  EXPECT_THAT(ch.pipeline().names(), ElementsAre("to_string", "y"));
  EXPECT_THROW(ch.pipeline().replace("y", "z", std::make_shared<ToString>()), PipelineTypeError);
  EXPECT_THAT(ch.pipeline().names(), ElementsAre("to_string", "y"));
}

class Thrower final : public InboundHandler<std::string> {
 public:
  void channel_read(Context&, std::string&&) override { throw std::runtime_error("handler failed"); }
};

class ErrorCatcher final : public Handler {
 public:
  std::string seen;
  void exception_caught(Context&, std::exception_ptr e) override {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      seen = ex.what();
    }
  }
};

TEST(PipelineTest, ExceptionFromAHandlerReachesLaterHandlers) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("thrower", std::make_shared<Thrower>());
  auto catcher = std::make_shared<ErrorCatcher>();
  ch.pipeline().add_last("catcher", catcher);
  ch.write_inbound(std::string("x"));
  EXPECT_EQ(catcher->seen, "handler failed");
  EXPECT_NO_THROW(ch.check_exception());  // consumed by the catcher
}

TEST(PipelineTest, UnconsumedExceptionReachesTheTail) {
  EmbeddedChannel ch;
  ch.pipeline().add_last("thrower", std::make_shared<Thrower>());
  ch.write_inbound(std::string("x"));
  EXPECT_THROW(ch.check_exception(), std::runtime_error);
}

}  // namespace
}  // namespace weft
