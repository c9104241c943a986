#include "weft/channel/write_completions.h"

namespace weft {

void WriteCompletions::add(Promise<void> done, std::size_t queued_bytes, bool bytes_held) {
  entries_.push_back(Entry{bytes_held ? kUnanchored : written_ + queued_bytes, std::move(done)});
}

void WriteCompletions::on_held_bytes_released(std::size_t queued_bytes) noexcept {
  for (Entry& entry : entries_) {
    if (entry.written_at == kUnanchored) entry.written_at = written_ + queued_bytes;
  }
}

void WriteCompletions::take_written(std::vector<Promise<void>>& out) {
  while (!entries_.empty() && entries_.front().written_at <= written_) {
    out.push_back(std::move(entries_.front().done));
    entries_.pop_front();
  }
}

void WriteCompletions::take_all(std::vector<Promise<void>>& out) {
  for (Entry& entry : entries_) out.push_back(std::move(entry.done));
  entries_.clear();
}

}  // namespace weft
