#include "weft/channel/channel_config.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace weft {

void ChannelConfig::validate() const {
  auto fail = [](std::string_view what) { throw std::invalid_argument(fmt::format("channel option: {}", what)); };
  if (backlog <= 0) fail("backlog must be positive");
  if (send_buffer_size < 0 || receive_buffer_size < 0) fail("socket buffer sizes must be >= 0");
  if (send_timeout < Duration::zero()) fail("send_timeout must be >= 0");
  if (connect_timeout <= Duration::zero()) fail("connect_timeout must be positive");
  if (write_buffer_low_water_mark > write_buffer_high_water_mark) {
    fail(fmt::format("write_buffer_low_water_mark ({}) exceeds write_buffer_high_water_mark ({})",
                     write_buffer_low_water_mark, write_buffer_high_water_mark));
  }
  if (max_messages_per_read <= 0) fail("max_messages_per_read must be positive");
  if (read_buffer_min == 0 || read_buffer_min > read_buffer_initial || read_buffer_initial > read_buffer_max) {
    fail("read buffer sizes must satisfy 0 < read_buffer_min <= read_buffer_initial <= read_buffer_max");
  }
  if (write_spin_count <= 0) fail("write_spin_count must be positive");
}

AdaptiveReadSizer::AdaptiveReadSizer(std::size_t min, std::size_t initial, std::size_t max) noexcept
    : min_(min), max_(max), size_(std::clamp(initial, min, max)) {}

void AdaptiveReadSizer::record(std::size_t bytes_read) noexcept {
  if (bytes_read >= size_) {
    size_ = std::min(size_ * 2, max_);
    shrink_pending_ = false;
  } else if (bytes_read <= size_ / 2 && size_ > min_) {
    if (shrink_pending_) {
      size_ = std::max(size_ / 2, min_);
      shrink_pending_ = false;
    } else {
      shrink_pending_ = true;
    }
  } else {
    shrink_pending_ = false;
  }
}

}  // namespace weft
