#pragma once
// How the client's most recent streams ended, so that a frame arriving on a stream that is no
// longer open gets the answer RFC 9113 5.1 asks for. (Written from the server's side; in the
// client's session "the client" is this end and "the server" its peer: the same answers hold.)
// - after the client's own RST_STREAM: a stream error STREAM_CLOSED;
// - after END_STREAM both ways: a connection error STREAM_CLOSED;
// - after the server's RST_STREAM: ignored (the client may have sent it before our reset arrived);
// - on an id below the newest that the client never used (5.1.1): a connection error PROTOCOL_ERROR.
// Only the last kKept ids the client opened are remembered (memory stays fixed); for an older id the
// answer is unknown and the frame is ignored, as nghttp2 does: a false connection error would be
// worse than a frame let through.
//
// Client stream ids grow, so the record is sorted by id: a lookup is a binary search.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace weft::http2::detail {

enum class StreamFate : std::uint8_t {
  open,            // still open (found in the session's map)
  ended,           // END_STREAM sent and received
  reset_by_peer,   // the client's RST_STREAM
  reset_by_us,     // our RST_STREAM (refused, malformed, or not processed after GOAWAY)
  never_opened,    // an id below the newest the client used, never used itself
};

class RecentStreams {
 public:
  static constexpr std::size_t kKept = 64;

  // The client used `id` (greater than every id recorded so far).
  void opened(std::int32_t id, StreamFate fate = StreamFate::open) noexcept {
    if (count_ == kKept) {
      forgotten_up_to_ = at(0).id;
      first_ = (first_ + 1) % kKept;
      --count_;
    }
    entries_[(first_ + count_) % kKept] = {id, fate};
    ++count_;
  }

  // A recorded stream ended (a no-op when it is no longer recorded).
  void ended(std::int32_t id, StreamFate fate) noexcept {
    if (Entry* e = locate(id)) e->fate = fate;
  }

  // How a stream with `id` (not idle, not open) ended; nullopt when it is too old to be known.
  std::optional<StreamFate> fate(std::int32_t id) const noexcept {
    if (id <= forgotten_up_to_) return std::nullopt;
    if (const Entry* e = const_cast<RecentStreams*>(this)->locate(id)) return e->fate;
    return StreamFate::never_opened;
  }

 private:
  struct Entry {
    std::int32_t id = 0;
    StreamFate fate = StreamFate::open;
  };

  const Entry& at(std::size_t i) const noexcept { return entries_[(first_ + i) % kKept]; }
  Entry* locate(std::int32_t id) noexcept {
    std::size_t lo = 0, hi = count_;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (at(mid).id < id) lo = mid + 1;
      else hi = mid;
    }
    if (lo == count_ || at(lo).id != id) return nullptr;
    return &entries_[(first_ + lo) % kKept];
  }

  std::array<Entry, kKept> entries_{};
  std::size_t first_ = 0;
  std::size_t count_ = 0;
  std::int32_t forgotten_up_to_ = 0;  // the newest id no longer recorded
};

}  // namespace weft::http2::detail
