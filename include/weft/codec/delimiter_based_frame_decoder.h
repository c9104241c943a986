#pragma once
/// @file
/// DelimiterBasedFrameDecoder: splits a byte stream at any of one or more delimiters (the earliest
/// match wins; among matches at the same place, the longer delimiter).
///
///   auto d = std::make_shared<weft::DelimiterBasedFrameDecoder>(4096, std::vector<std::string>{"\0"s});
///
/// Emits each frame as a ByteBuf slice (no copy), without its delimiter unless strip_delimiter is
/// false. A frame longer than max_frame_length is discarded and a TooLongFrameError naming
/// "max_frame_length" is fired (at once with fail_fast, else when its delimiter arrives). Memory stays
/// within max_frame_length + the longest delimiter plus one read. A partial frame at end of input fires
/// TruncatedFrameError. Loop thread only.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "weft/codec/byte_to_message_decoder.h"

namespace weft {

/// Splits a byte stream at any of one or more delimiters (see the file's description). Loop thread only.
class DelimiterBasedFrameDecoder : public ByteToMessageDecoder<ByteBuf> {
 public:
  /// Throws std::invalid_argument if max_frame_length is 0, no delimiter is given or one is empty.
  DelimiterBasedFrameDecoder(std::size_t max_frame_length, std::vector<std::string> delimiters,
                             bool strip_delimiter = true, bool fail_fast = false);

 protected:
  std::optional<ByteBuf> decode(Context& ctx, ByteBuf& in) override;

 private:
  std::size_t max_frame_length_;
  std::vector<std::string> delimiters_;
  std::size_t longest_delimiter_ = 0;
  bool strip_delimiter_;
  bool fail_fast_;
  bool discarding_ = false;
  std::size_t too_long_length_ = 0;
  std::size_t scanned_ = 0;  // readable bytes already searched: no delimiter starts in them
};

}  // namespace weft
