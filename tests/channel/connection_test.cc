// weft::Connection (a coroutine over a channel) in an EmbeddedChannel: what needs no socket.

#include "weft/channel/connection.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "weft/channel/embedded_channel.h"

namespace weft {
namespace {

// A coroutine that answers inside a read batch and returns: its flush would wait for the batch's
// end, which a closed connection never reaches; close() flushes at once, so the answer leaves.
TEST(ConnectionTest, ACoroutineThatReturnsInsideAReadBatchHasItsWritesFlushedBeforeTheClose) {
  auto channel = std::make_shared<EmbeddedChannel>();  // a Connection holds its channel
  EmbeddedChannel& ch = *channel;
  serve<std::string>(ch, [](Connection<std::string>& c) -> Task<> {
    std::string message = co_await c.read();
    co_await c.write(std::move(message));
    c.flush();
  });
  ch.write_inbound(std::string("hello"));
  const std::optional<std::string> out = ch.read_outbound<std::string>();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, "hello");
  EXPECT_FALSE(ch.is_open());
}

}  // namespace
}  // namespace weft
