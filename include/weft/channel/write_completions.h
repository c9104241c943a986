#pragma once
/// @file
/// WriteCompletions: the promises of writes that asked to learn when their bytes reached the socket
/// (Channel::write(message, done)), in write order. Netty's ChannelPromise on the outbound buffer,
/// kept beside the write queue so that a write without one costs nothing.
///
/// Each entry is anchored at a byte position: the count of bytes written to the socket once every
/// byte queued when it was added has gone. While a handler holds written bytes back (counted with
/// Channel::hold_write_bytes, e.g. TLS during its handshake) those bytes are not in the queue yet:
/// an entry added then waits, unanchored, until the handler has passed every held byte on.
///
/// Loop thread only. Allocates only when used (the first entry).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "weft/core/future.h"

namespace weft {

/// The completions of writes waiting for their bytes to be written (see the file's description).
/// Loop thread only.
class WriteCompletions {
 public:
  /// Whether no completion waits.
  bool empty() const noexcept { return entries_.empty(); }
  /// Adds `done`, to complete once the `queued_bytes` now in the write queue have been written; when
  /// `bytes_held` (a handler holds bytes back), once those too have been queued and written.
  void add(Promise<void> done, std::size_t queued_bytes, bool bytes_held);
  /// `n` bytes left the write queue for the socket.
  void on_written(std::size_t n) noexcept { written_ += n; }
  /// Every held byte has been passed on: the waiting entries complete once the `queued_bytes` now
  /// in the write queue have been written.
  void on_held_bytes_released(std::size_t queued_bytes) noexcept;
  /// Moves the entries whose bytes have all been written, oldest first, to `out`.
  void take_written(std::vector<Promise<void>>& out);
  /// Moves every entry, oldest first, to `out` (the channel closed: they fail).
  void take_all(std::vector<Promise<void>>& out);

 private:
  static constexpr std::uint64_t kUnanchored = std::numeric_limits<std::uint64_t>::max();
  struct Entry {
    std::uint64_t written_at;  // complete once written_ reaches it; kUnanchored: held bytes first
    Promise<void> done;
  };
  std::uint64_t written_ = 0;  // bytes written since this object was made
  std::deque<Entry> entries_;
};

}  // namespace weft
