#pragma once
/// @file
/// LineBasedFrameDecoder: splits a byte stream at "\n" and "\r\n".
///
///   pipeline.add_last("lines", std::make_shared<weft::LineBasedFrameDecoder>(8192));
///
/// Emits each line as a ByteBuf slice of the received bytes (no copy), without its delimiter unless
/// strip_delimiter is false. A line longer than max_length (delimiter excluded) is discarded and a
/// TooLongFrameError naming "max_length" is fired: at once when fail_fast (as soon as more than
/// max_length bytes arrived without a delimiter), else when the line's delimiter arrives. Memory stays
/// within max_length + 1 bytes plus one read. A partial line at end of input fires TruncatedFrameError.
/// Loop thread only.

#include <cstddef>
#include <optional>

#include "weft/codec/byte_to_message_decoder.h"

namespace weft {

/// Splits a byte stream at "\n" and "\r\n" (see the file's description). Loop thread only.
class LineBasedFrameDecoder : public ByteToMessageDecoder<ByteBuf> {
 public:
  /// Throws std::invalid_argument if max_length is 0.
  explicit LineBasedFrameDecoder(std::size_t max_length, bool strip_delimiter = true, bool fail_fast = false);

  /// The longest line accepted, delimiter excluded.
  std::size_t max_length() const noexcept { return max_length_; }

 protected:
  std::optional<ByteBuf> decode(Context& ctx, ByteBuf& in) override;

 private:
  // Absolute index of the end of line ('\r' of "\r\n", else '\n'), or -1; remembers how far it looked.
  std::ptrdiff_t find_end_of_line(const ByteBuf& in);

  std::size_t max_length_;
  bool strip_delimiter_;
  bool fail_fast_;
  bool discarding_ = false;
  std::size_t discarded_bytes_ = 0;
  std::size_t offset_ = 0;  // bytes after the reader index already searched for '\n'
};

}  // namespace weft
