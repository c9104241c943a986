// Passing a message along a pipeline must not allocate: counts global operator new calls made on
// this thread while a ByteBuf travels through several handlers.

#include <gtest/gtest.h>

#include "support/allocation_counter.h"
#include "weft/buffer/byte_buf.h"
#include "weft/channel/embedded_channel.h"

namespace weft {
namespace {

class PassThrough final : public InboundHandler<ByteBuf> {
 public:
  void channel_read(Context& ctx, ByteBuf&& buf) override { ctx.fire_read(std::move(buf)); }
};

class Sink final : public InboundHandler<ByteBuf> {
 public:
  std::size_t bytes = 0;
  void channel_read(Context&, ByteBuf&& buf) override { bytes += buf.readable_bytes(); }
};

class WriteBack final : public OutboundHandler<ByteBuf> {
 public:
  void write(Context& ctx, ByteBuf&& buf) override { ctx.write(std::move(buf)); }
};

TEST(NoAllocationTest, ReadingAlongThePipelineDoesNotAllocate) {
  EmbeddedChannel ch;
  for (int i = 0; i < 4; ++i) ch.pipeline().add_last("pass" + std::to_string(i), std::make_shared<PassThrough>());
  ch.pipeline().add_last("out", std::make_shared<WriteBack>());
  auto sink = std::make_shared<Sink>();
  ch.pipeline().add_last("sink", sink);
  ByteBuf buf = ByteBuf::copy_of("payload");
  EXPECT_EQ(test::allocations_of([&] {
              ch.pipeline().fire_read(std::move(buf));
              ch.pipeline().fire_read_complete();
            }),
            0);
  EXPECT_EQ(sink->bytes, 7u);
}

}  // namespace
}  // namespace weft
