#pragma once
// The write queue of a channel (Netty's ChannelOutboundBuffer): buffers written but not yet sent,
// split into the flushed part (handed to the transport) and the part written since the last flush.
// It counts pending bytes against the high/low water marks that drive the channel's writability.
//
// Layout: a ring of ByteBufs; [0, flushed_) are flushed, [flushed_, size_) unflushed. The first
// two slots are inline (a server usually has one buffer queued at a time, and a heap ring would be
// one more cache line per write on a cold connection); past them the ring moves to the heap.
// Loop thread only.

#include <sys/uio.h>

#include <cstddef>
#include <vector>

#include "weft/buffer/byte_buf.h"

namespace weft {

class OutboundBuffer {
 public:
  OutboundBuffer(std::size_t low_water_mark, std::size_t high_water_mark) noexcept
      : low_(low_water_mark), high_(high_water_mark) {}
  OutboundBuffer(const OutboundBuffer&) = delete;  // slots_ may point into this object
  OutboundBuffer& operator=(const OutboundBuffer&) = delete;

  // Queues `buf`. Returns true when this made the channel cross the high water mark.
  bool add(ByteBuf buf);
  // Marks everything queued so far as flushed.
  void add_flush() noexcept { flushed_ = size_; }
  // Fills up to `max_iov` entries with flushed bytes (at most `max_bytes`). Returns the count.
  int collect_iovecs(iovec* iov, int max_iov, std::size_t max_bytes) const noexcept;
  // Appends a reference (duplicate()) to each of the first `count` flushed buffers to `out`: for a
  // transport whose kernel reads them after collect_iovecs' caller returned (io_uring).
  void retain_flushed(std::size_t count, std::vector<ByteBuf>& out) const;
  // Removes `n` sent bytes from the front of the flushed part. Returns true when this made the
  // channel fall below the low water mark.
  bool remove_bytes(std::size_t n) noexcept;
  // Drops every queued buffer (on close).
  void clear() noexcept;

  bool has_flushed() const noexcept { return flushed_ > 0; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t pending_bytes() const noexcept { return pending_bytes_; }
  std::size_t flushed_bytes() const noexcept;
  bool is_writable() const noexcept { return writable_; }
  // Bytes that can still be queued before the channel turns unwritable.
  std::size_t bytes_before_unwritable() const noexcept {
    return pending_bytes_ >= high_ ? 0 : high_ - pending_bytes_;
  }
  void set_water_marks(std::size_t low, std::size_t high) noexcept {
    low_ = low;
    high_ = high;
  }

 private:
  static constexpr std::size_t kInline = 2;
  ByteBuf& at(std::size_t i) noexcept { return slots_[(head_ + i) & (capacity_ - 1)]; }
  const ByteBuf& at(std::size_t i) const noexcept { return slots_[(head_ + i) & (capacity_ - 1)]; }
  void grow();

  ByteBuf* slots_ = inline_;
  std::size_t capacity_ = kInline;  // a power of two; the heap ring is reused, so steady state does not allocate
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t flushed_ = 0;
  std::size_t pending_bytes_ = 0;
  std::size_t low_, high_;
  bool writable_ = true;
  ByteBuf inline_[kInline];
  std::vector<ByteBuf> heap_;
};

}  // namespace weft
