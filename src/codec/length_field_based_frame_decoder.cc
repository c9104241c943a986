#include "weft/codec/length_field_based_frame_decoder.h"

#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "weft/buffer/byte_buf_allocator.h"

namespace weft {
namespace {

__extension__ typedef __int128 Int128;  // frame arithmetic that cannot overflow

void check_field_length(const char* who, std::size_t n) {
  if (n != 1 && n != 2 && n != 3 && n != 4 && n != 8) {
    throw std::invalid_argument(fmt::format("{}: length_field_length must be 1, 2, 3, 4 or 8 (got {})", who, n));
  }
}

}  // namespace

LengthFieldBasedFrameDecoder::LengthFieldBasedFrameDecoder(Options options)
    : options_(options), length_field_end_(options.length_field_offset + options.length_field_length) {
  check_field_length("LengthFieldBasedFrameDecoder", options_.length_field_length);
  if (options_.max_frame_length == 0) {
    throw std::invalid_argument("LengthFieldBasedFrameDecoder: max_frame_length must be positive");
  }
  if (options_.length_field_offset > options_.max_frame_length - std::min(options_.max_frame_length,
                                                                          options_.length_field_length)) {
    throw std::invalid_argument(fmt::format(
        "LengthFieldBasedFrameDecoder: max_frame_length ({}) must be at least length_field_offset ({}) + "
        "length_field_length ({})",
        options_.max_frame_length, options_.length_field_offset, options_.length_field_length));
  }
}

std::uint64_t LengthFieldBasedFrameDecoder::read_length_field(const ByteBuf& in, std::size_t index) const {
  const bool big = options_.byte_order == ByteOrder::big_endian;
  switch (options_.length_field_length) {
    case 1:
      return in.get_u8(index);
    case 2:
      return big ? in.get_u16(index) : in.get_u16_le(index);
    case 3: {
      const std::uint32_t b0 = in.get_u8(index), b1 = in.get_u8(index + 1), b2 = in.get_u8(index + 2);
      return big ? (b0 << 16) | (b1 << 8) | b2 : (b2 << 16) | (b1 << 8) | b0;
    }
    case 4:
      return big ? in.get_u32(index) : in.get_u32_le(index);
    default:
      return big ? in.get_u64(index) : in.get_u64_le(index);
  }
}

void LengthFieldBasedFrameDecoder::fail_too_long(std::size_t frame_length) const {
  throw TooLongFrameError("max_frame_length", options_.max_frame_length, frame_length);
}

void LengthFieldBasedFrameDecoder::discard(ByteBuf& in) {
  const std::size_t n = std::min(bytes_to_discard_, in.readable_bytes());
  in.skip_bytes(n);
  bytes_to_discard_ -= n;
  if (bytes_to_discard_ == 0) {
    discarding_ = false;
    const std::size_t length = too_long_frame_length_;
    too_long_frame_length_ = 0;
    if (!options_.fail_fast) fail_too_long(length);  // fail_fast reported it when the length was read
  }
}

std::optional<ByteBuf> LengthFieldBasedFrameDecoder::decode(Context&, ByteBuf& in) {
  if (discarding_) {
    discard(in);
    return std::nullopt;
  }
  if (in.readable_bytes() < length_field_end_) return std::nullopt;

  const std::uint64_t raw = read_length_field(in, in.reader_index() + options_.length_field_offset);
  if (raw > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    in.skip_bytes(length_field_end_);
    throw CorruptedFrameError(fmt::format("negative length field: {}", static_cast<std::int64_t>(raw)));
  }
  // frame = header up to the end of the length field + value + adjustment, in 128-bit to be safe.
  const Int128 frame = static_cast<Int128>(raw) + options_.length_adjustment +
                         static_cast<Int128>(length_field_end_);
  if (frame < static_cast<Int128>(length_field_end_)) {
    in.skip_bytes(length_field_end_);
    throw CorruptedFrameError(fmt::format("frame length {} is less than the header ({} bytes)",
                                          static_cast<long long>(frame), length_field_end_));
  }
  if (frame > static_cast<Int128>(options_.max_frame_length)) {
    const std::size_t frame_length = frame > static_cast<Int128>(std::numeric_limits<std::size_t>::max())
                                         ? std::numeric_limits<std::size_t>::max()
                                         : static_cast<std::size_t>(frame);
    too_long_frame_length_ = frame_length;
    bytes_to_discard_ = frame_length;
    discarding_ = true;
    discard(in);  // throws when the whole frame was buffered and fail_fast is off
    if (options_.fail_fast) fail_too_long(frame_length);
    return std::nullopt;
  }
  const std::size_t frame_length = static_cast<std::size_t>(frame);
  if (in.readable_bytes() < frame_length) return std::nullopt;
  if (options_.initial_bytes_to_strip > frame_length) {
    in.skip_bytes(frame_length);
    throw CorruptedFrameError(fmt::format("frame length {} is less than initial_bytes_to_strip {}", frame_length,
                                          options_.initial_bytes_to_strip));
  }
  in.skip_bytes(options_.initial_bytes_to_strip);
  return in.read_slice(frame_length - options_.initial_bytes_to_strip);
}

LengthFieldPrepender::LengthFieldPrepender(Options options) : options_(options) {
  check_field_length("LengthFieldPrepender", options_.length_field_length);
}

void LengthFieldPrepender::encode(Context& ctx, ByteBuf&& message, Output<ByteBuf>& out) {
  const std::size_t n = options_.length_field_length;
  Int128 value = static_cast<Int128>(message.readable_bytes()) + options_.length_adjustment;
  if (options_.length_includes_length_field) value += static_cast<Int128>(n);
  if (value < 0) {
    throw EncoderError(fmt::format("LengthFieldPrepender: adjusted length {} is negative", static_cast<long long>(value)));
  }
  if (n < 8 && value >= (static_cast<Int128>(1) << (8 * n))) {
    throw EncoderError(fmt::format("LengthFieldPrepender: length {} does not fit in {} byte(s)",
                                   static_cast<long long>(value), n));
  }
  const std::uint64_t v = static_cast<std::uint64_t>(value);
  const bool big = options_.byte_order == ByteOrder::big_endian;
  ByteBuf header = ctx.allocator().buffer(8);
  switch (n) {
    case 1:
      header.write_u8(static_cast<std::uint8_t>(v));
      break;
    case 2:
      big ? header.write_u16(static_cast<std::uint16_t>(v)) : header.write_u16_le(static_cast<std::uint16_t>(v));
      break;
    case 3:
      if (big) {
        header.write_u8(static_cast<std::uint8_t>(v >> 16));
        header.write_u16(static_cast<std::uint16_t>(v));
      } else {
        header.write_u16_le(static_cast<std::uint16_t>(v));
        header.write_u8(static_cast<std::uint8_t>(v >> 16));
      }
      break;
    case 4:
      big ? header.write_u32(static_cast<std::uint32_t>(v)) : header.write_u32_le(static_cast<std::uint32_t>(v));
      break;
    default:
      big ? header.write_u64(v) : header.write_u64_le(v);
      break;
  }
  out(std::move(header));
  out(std::move(message));
}

}  // namespace weft
