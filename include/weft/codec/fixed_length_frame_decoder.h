#pragma once
/// @file
/// FixedLengthFrameDecoder: splits a byte stream into frames of frame_length bytes, each a ByteBuf
/// slice of the received bytes (no copy). A partial frame at end of input fires TruncatedFrameError.
/// Loop thread only.

#include <cstddef>
#include <optional>

#include "weft/codec/byte_to_message_decoder.h"

namespace weft {

/// Splits a byte stream into frames of a fixed length (see the file's description). Loop thread only.
class FixedLengthFrameDecoder : public ByteToMessageDecoder<ByteBuf> {
 public:
  /// Throws std::invalid_argument if frame_length is 0.
  explicit FixedLengthFrameDecoder(std::size_t frame_length);

 protected:
  std::optional<ByteBuf> decode(Context& ctx, ByteBuf& in) override;

 private:
  std::size_t frame_length_;
};

}  // namespace weft
