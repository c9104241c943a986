#pragma once
/// @file
/// The write queue of a channel (Netty's ChannelOutboundBuffer): buffers written but not yet sent,
/// split into the flushed part (handed to the transport) and the part written since the last flush.
/// It counts pending bytes against the high/low water marks that drive the channel's writability.
///
/// Layout: a ring of ByteBufs; [0, flushed_) are flushed, [flushed_, size) unflushed. The first
/// two slots are inline (a server usually has one buffer queued at a time, and a heap ring would be
/// one more cache line per write on a cold connection).
///
/// A FileRegion (for a transport that sends files itself, with sendfile or splice) takes a slot of the ring
/// as an empty ByteBuf, its marker -- a queued ByteBuf is never empty -- and sits in a ring of its
/// own, allocated with the first file: the ByteBuf path keeps its layout and its cost.
/// collect_iovecs() stops at a marker; the transport then sends flushed_file() and reports it with
/// remove_file_bytes(). A file's remaining bytes count toward the water marks.
/// Loop thread only.

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/channel/file_region.h"
#include "weft/core/inline_ring.h"

namespace weft {

/// The write queue of a channel (see the file's description). Loop thread only.
class OutboundBuffer {
 public:
  /// An empty, writable queue with the given water marks (bytes).
  OutboundBuffer(std::size_t low_water_mark, std::size_t high_water_mark) noexcept
      : low_(low_water_mark), high_(high_water_mark) {}

  /// Queues `buf`. Returns true when this made the channel cross the high water mark.
  bool add(ByteBuf buf);
  /// Queues `file` (a transport that sends files asks for it). Returns true when this made the
  /// channel cross the high water mark. An empty region queues nothing.
  bool add_file(FileRegion file);
  /// Marks everything queued so far as flushed.
  void add_flush() noexcept { flushed_ = ring_.size(); }
  /// How many entries (buffers, file markers) are flushed and not yet sent.
  std::size_t flushed_entries() const noexcept { return flushed_; }
  /// Fills up to `max_iov` entries with flushed bytes (at most `max_bytes`), stopping at a file.
  /// Returns the count: 0 while has_flushed() means the front is a file (flushed_file()).
  int collect_iovecs(iovec* iov, int max_iov, std::size_t max_bytes) const noexcept;
  /// Appends a reference (duplicate()) to each of the first `count` flushed buffers to `out`: for a
  /// transport whose kernel reads them after collect_iovecs' caller returned (io_uring).
  void retain_flushed(std::size_t count, std::vector<ByteBuf>& out) const;
  /// Removes `n` sent bytes from the front of the flushed part (at most what collect_iovecs() gave:
  /// it does not cross a file). Returns true when this made the channel fall below the low water mark.
  bool remove_bytes(std::size_t n) noexcept;
  /// Counts `n` bytes held elsewhere for this channel (a handler's, not queued here) toward the
  /// water marks. Returns true when this made the channel cross the high water mark.
  bool add_held_bytes(std::size_t n) noexcept;
  /// Takes `n` held bytes back out of the count. Returns true when this made the channel fall
  /// below the low water mark.
  bool remove_held_bytes(std::size_t n) noexcept;
  /// The file at the front of the flushed part, or null when the front is bytes (or nothing).
  FileRegion* flushed_file() noexcept {
    return flushed_ > 0 && ring_[0].readable_bytes() == 0 ? &(*files_)[0] : nullptr;
  }
  /// Removes `n` sent bytes of flushed_file() (n <= its length); the file leaves the queue, and
  /// lets go of its descriptor, once all of it is sent. Returns true when this made the channel
  /// fall below the low water mark.
  bool remove_file_bytes(std::size_t n) noexcept;
  /// Drops every queued buffer and file (on close).
  void clear() noexcept;

  /// Whether any queued buffer is flushed.
  bool has_flushed() const noexcept { return flushed_ > 0; }
  /// Whether nothing is queued.
  bool empty() const noexcept { return ring_.empty(); }
  /// Bytes queued, flushed or not: what the water marks are compared with.
  std::size_t pending_bytes() const noexcept { return pending_bytes_; }
  /// Bytes in the flushed part.
  std::size_t flushed_bytes() const noexcept;
  /// False from crossing the high water mark until falling below the low one.
  bool is_writable() const noexcept { return writable_; }
  /// Bytes that can still be queued before the channel turns unwritable.
  std::size_t bytes_before_unwritable() const noexcept {
    return pending_bytes_ >= high_ ? 0 : high_ - pending_bytes_;
  }
  /// Sets the water marks (bytes); takes effect at the next add() or remove_bytes().
  void set_water_marks(std::size_t low, std::size_t high) noexcept {
    low_ = low;
    high_ = high;
  }

 private:
  // The counters first: with the ring's header and first slot they fill two cache lines.
  std::size_t flushed_ = 0;
  std::size_t pending_bytes_ = 0;
  std::size_t low_, high_;
  bool writable_ = true;
  InlineRing<ByteBuf, 2> ring_;
  std::unique_ptr<InlineRing<FileRegion, 2>> files_;  // made with the first file; one per marker, in order
};

}  // namespace weft
