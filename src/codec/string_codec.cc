#include "weft/codec/string_codec.h"

namespace weft {

void StringDecoder::decode(Context&, ByteBuf&& message, Output<std::string>& out) { out(message.to_string()); }

void StringEncoder::encode(Context& ctx, std::string&& message, Output<ByteBuf>& out) {
  ByteBuf buf = ctx.allocator().buffer(message.size());
  buf.write_bytes(message);
  out(std::move(buf));
}

}  // namespace weft
