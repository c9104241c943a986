#include "weft/codec/fixed_length_frame_decoder.h"

#include <stdexcept>

namespace weft {

FixedLengthFrameDecoder::FixedLengthFrameDecoder(std::size_t frame_length) : frame_length_(frame_length) {
  if (frame_length == 0) throw std::invalid_argument("FixedLengthFrameDecoder: frame_length must be positive");
}

std::optional<ByteBuf> FixedLengthFrameDecoder::decode(Context&, ByteBuf& in) {
  if (in.readable_bytes() < frame_length_) return std::nullopt;
  return in.read_slice(frame_length_);
}

}  // namespace weft
