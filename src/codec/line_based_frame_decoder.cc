#include "weft/codec/line_based_frame_decoder.h"

#include <stdexcept>

namespace weft {

LineBasedFrameDecoder::LineBasedFrameDecoder(std::size_t max_length, bool strip_delimiter, bool fail_fast)
    : max_length_(max_length), strip_delimiter_(strip_delimiter), fail_fast_(fail_fast) {
  if (max_length == 0) throw std::invalid_argument("LineBasedFrameDecoder: max_length must be positive");
}

std::ptrdiff_t LineBasedFrameDecoder::find_end_of_line(const ByteBuf& in) {
  const std::size_t from = in.reader_index() + offset_;
  std::ptrdiff_t i = in.index_of(static_cast<std::uint8_t>('\n'), from, in.writer_index());
  if (i < 0) {
    offset_ = in.readable_bytes();
    return -1;
  }
  offset_ = 0;
  if (static_cast<std::size_t>(i) > in.reader_index() && in.get_u8(static_cast<std::size_t>(i) - 1) == '\r') --i;
  return i;
}

std::optional<ByteBuf> LineBasedFrameDecoder::decode(Context&, ByteBuf& in) {
  const std::ptrdiff_t eol = find_end_of_line(in);
  if (!discarding_) {
    if (eol >= 0) {
      const std::size_t end = static_cast<std::size_t>(eol);
      const std::size_t length = end - in.reader_index();
      const std::size_t delimiter = in.get_u8(end) == '\r' ? 2 : 1;
      if (length > max_length_) {
        in.set_reader_index(end + delimiter);
        throw TooLongFrameError("max_length", max_length_, length);
      }
      if (strip_delimiter_) {
        ByteBuf frame = in.read_slice(length);
        in.skip_bytes(delimiter);
        return frame;
      }
      return in.read_slice(length + delimiter);
    }
    // No end of line yet. A trailing '\r' may be the start of "\r\n": it does not count.
    std::size_t length = in.readable_bytes();
    const bool trailing_cr = in.get_u8(in.writer_index() - 1) == '\r';
    if (length - (trailing_cr ? 1 : 0) > max_length_) {
      discarded_bytes_ = length;
      in.skip_bytes(length);
      discarding_ = true;
      offset_ = 0;
      if (fail_fast_) throw TooLongFrameError("max_length", max_length_, discarded_bytes_ + 1, true);
    }
    return std::nullopt;
  }
  if (eol >= 0) {
    const std::size_t end = static_cast<std::size_t>(eol);
    const std::size_t length = discarded_bytes_ + end - in.reader_index();
    const std::size_t delimiter = in.get_u8(end) == '\r' ? 2 : 1;
    in.set_reader_index(end + delimiter);
    discarded_bytes_ = 0;
    discarding_ = false;
    if (!fail_fast_) throw TooLongFrameError("max_length", max_length_, length);
    return std::nullopt;
  }
  // Keep a trailing '\r' so that a "\r\n" split across reads is still recognised.
  std::size_t skip = in.readable_bytes();
  if (in.get_u8(in.writer_index() - 1) == '\r') --skip;
  discarded_bytes_ += skip;
  in.skip_bytes(skip);
  offset_ = in.readable_bytes();
  return std::nullopt;
}

}  // namespace weft
