#pragma once
/// @file
/// String codec: StringDecoder turns each inbound ByteBuf (a frame: put a frame decoder before it)
/// into a std::string holding its bytes; StringEncoder turns each outbound std::string into a ByteBuf.
/// Bytes are passed through unchanged (UTF-8 in, UTF-8 out). Loop thread only.

#include <string>

#include "weft/buffer/byte_buf.h"
#include "weft/codec/message_to_message_codec.h"

namespace weft {

/// Turns each inbound ByteBuf into a std::string holding its bytes. Sharable.
class StringDecoder final : public MessageToMessageDecoder<ByteBuf, std::string> {
 public:
  bool is_sharable() const noexcept override { return true; }  ///< no per-channel state

 protected:
  void decode(Context& ctx, ByteBuf&& message, Output<std::string>& out) override;
};

/// Turns each outbound std::string into a ByteBuf holding its bytes. Sharable.
class StringEncoder final : public MessageToMessageEncoder<std::string, ByteBuf> {
 public:
  bool is_sharable() const noexcept override { return true; }  ///< no per-channel state

 protected:
  void encode(Context& ctx, std::string&& message, Output<ByteBuf>& out) override;
};

}  // namespace weft
