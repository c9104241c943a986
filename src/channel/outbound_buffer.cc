#include "weft/channel/outbound_buffer.h"

#include <algorithm>

namespace weft {

bool OutboundBuffer::add(ByteBuf buf) {
  std::size_t n = buf.readable_bytes();
  if (n == 0) return false;
  ring_.push_back(std::move(buf));
  pending_bytes_ += n;
  if (writable_ && pending_bytes_ > high_) {
    writable_ = false;
    return true;
  }
  return false;
}

int OutboundBuffer::collect_iovecs(iovec* iov, int max_iov, std::size_t max_bytes) const noexcept {
  int count = 0;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < flushed_ && count < max_iov && bytes < max_bytes; ++i) {
    const ByteBuf& b = ring_[i];
    iov[count].iov_base = const_cast<std::uint8_t*>(b.read_ptr());
    iov[count].iov_len = b.readable_bytes();
    bytes += b.readable_bytes();
    ++count;
  }
  return count;
}

void OutboundBuffer::retain_flushed(std::size_t count, std::vector<ByteBuf>& out) const {
  for (std::size_t i = 0; i < count && i < flushed_; ++i) out.push_back(ring_[i].duplicate());
}

bool OutboundBuffer::remove_bytes(std::size_t n) noexcept {
  pending_bytes_ -= std::min(n, pending_bytes_);
  while (n > 0 && flushed_ > 0) {
    ByteBuf& front = ring_[0];
    std::size_t readable = front.readable_bytes();
    if (n < readable) {
      front.skip_bytes(n);
      break;
    }
    n -= readable;
    ring_.drop_front();
    --flushed_;
  }
  if (!writable_ && pending_bytes_ < low_) {
    writable_ = true;
    return true;
  }
  return false;
}

bool OutboundBuffer::add_held_bytes(std::size_t n) noexcept {
  pending_bytes_ += n;
  if (writable_ && pending_bytes_ > high_) {
    writable_ = false;
    return true;
  }
  return false;
}

bool OutboundBuffer::remove_held_bytes(std::size_t n) noexcept {
  pending_bytes_ -= std::min(n, pending_bytes_);
  if (!writable_ && pending_bytes_ < low_) {
    writable_ = true;
    return true;
  }
  return false;
}

void OutboundBuffer::clear() noexcept {
  ring_.clear();
  flushed_ = pending_bytes_ = 0;
  writable_ = true;
}

std::size_t OutboundBuffer::flushed_bytes() const noexcept {
  std::size_t total = 0;
  for (std::size_t i = 0; i < flushed_; ++i) total += ring_[i].readable_bytes();
  return total;
}

}  // namespace weft
