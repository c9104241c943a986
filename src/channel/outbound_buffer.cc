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

bool OutboundBuffer::add_file(FileRegion file) {
  const std::size_t n = static_cast<std::size_t>(file.length());
  if (n == 0) return false;
  if (files_ == nullptr) files_ = std::make_unique<InlineRing<FileRegion, 2>>();
  files_->push_back(std::move(file));
  ring_.push_back(ByteBuf());  // the file's marker, in order with the bytes around it
  return add_held_bytes(n);
}

int OutboundBuffer::collect_iovecs(iovec* iov, int max_iov, std::size_t max_bytes) const noexcept {
  int count = 0;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < flushed_ && count < max_iov && bytes < max_bytes; ++i) {
    const ByteBuf& b = ring_[i];
    if (b.readable_bytes() == 0) break;  // a file's marker: the transport sends the file itself
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

bool OutboundBuffer::remove_file_bytes(std::size_t n) noexcept {
  FileRegion& file = (*files_)[0];
  file.advance(n);
  if (file.length() == 0) {
    files_->drop_front();  // lets go of the descriptor
    ring_.drop_front();
    --flushed_;
  }
  return remove_held_bytes(n);
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
  if (files_ != nullptr) files_->clear();
  flushed_ = pending_bytes_ = 0;
  writable_ = true;
}

std::size_t OutboundBuffer::flushed_bytes() const noexcept {
  std::size_t total = 0;
  std::size_t file = 0;
  for (std::size_t i = 0; i < flushed_; ++i) {
    const std::size_t n = ring_[i].readable_bytes();
    total += n != 0 ? n : static_cast<std::size_t>((*files_)[file++].length());
  }
  return total;
}

}  // namespace weft
