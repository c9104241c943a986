#include "weft/codec/delimiter_based_frame_decoder.h"

#include <algorithm>
#include <stdexcept>

namespace weft {

DelimiterBasedFrameDecoder::DelimiterBasedFrameDecoder(std::size_t max_frame_length,
                                                       std::vector<std::string> delimiters, bool strip_delimiter,
                                                       bool fail_fast)
    : max_frame_length_(max_frame_length),
      delimiters_(std::move(delimiters)),
      strip_delimiter_(strip_delimiter),
      fail_fast_(fail_fast) {
  if (max_frame_length_ == 0) {
    throw std::invalid_argument("DelimiterBasedFrameDecoder: max_frame_length must be positive");
  }
  if (delimiters_.empty()) throw std::invalid_argument("DelimiterBasedFrameDecoder: no delimiter given");
  for (const auto& d : delimiters_) {
    if (d.empty()) throw std::invalid_argument("DelimiterBasedFrameDecoder: empty delimiter");
    longest_delimiter_ = std::max(longest_delimiter_, d.size());
  }
}

std::optional<ByteBuf> DelimiterBasedFrameDecoder::decode(Context&, ByteBuf& in) {
  // The earliest delimiter wins; at the same position, the longest. No delimiter starts in the
  // first scanned_ readable bytes (searched by earlier calls), so the search resumes after them.
  const std::size_t from = in.reader_index() + scanned_;
  std::ptrdiff_t best = -1;
  std::size_t best_length = 0;
  for (const auto& d : delimiters_) {
    const std::ptrdiff_t i = in.index_of(std::string_view(d), from, in.writer_index());
    if (i < 0) continue;
    if (best < 0 || i < best || (i == best && d.size() > best_length)) {
      best = i;
      best_length = d.size();
    }
  }
  if (best >= 0) {
    scanned_ = 0;  // every branch below consumes through the delimiter
    const std::size_t frame_length = static_cast<std::size_t>(best) - in.reader_index();
    if (discarding_) {
      // The rest of a frame that was too long: drop it with its delimiter.
      in.skip_bytes(frame_length + best_length);
      const std::size_t too_long = too_long_length_ + frame_length;
      discarding_ = false;
      too_long_length_ = 0;
      if (!fail_fast_) throw TooLongFrameError("max_frame_length", max_frame_length_, too_long);
      return std::nullopt;
    }
    if (frame_length > max_frame_length_) {
      in.skip_bytes(frame_length + best_length);
      throw TooLongFrameError("max_frame_length", max_frame_length_, frame_length);
    }
    if (strip_delimiter_) {
      ByteBuf frame = in.read_slice(frame_length);
      in.skip_bytes(best_length);
      return frame;
    }
    return in.read_slice(frame_length + best_length);
  }
  // No delimiter yet. The last longest_delimiter_ - 1 bytes may start one: they are kept.
  const std::size_t keep = std::min(in.readable_bytes(), longest_delimiter_ - 1);
  if (!discarding_) {
    if (in.readable_bytes() - keep > max_frame_length_) {
      const std::size_t skip = in.readable_bytes() - keep;
      too_long_length_ = skip;
      in.skip_bytes(skip);
      discarding_ = true;
      scanned_ = 0;
      if (fail_fast_) throw TooLongFrameError("max_frame_length", max_frame_length_, too_long_length_ + 1, true);
      return std::nullopt;
    }
    scanned_ = in.readable_bytes() - keep;  // a delimiter may only start in the kept tail
    return std::nullopt;
  }
  const std::size_t skip = in.readable_bytes() - keep;
  too_long_length_ += skip;
  in.skip_bytes(skip);
  scanned_ = 0;
  return std::nullopt;
}

}  // namespace weft
