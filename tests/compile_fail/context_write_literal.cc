// expect: a string literal is not a message
#include <weft/weft.h>

struct Hello final : weft::InboundHandler<weft::ByteBuf> {
  void channel_read(weft::Context& ctx, weft::ByteBuf&&) override { ctx.write("hello"); }
};
