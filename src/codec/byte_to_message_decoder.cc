#include "weft/codec/byte_to_message_decoder.h"

#include "weft/buffer/byte_buf_allocator.h"

namespace weft::detail {

void Cumulation::append(ByteBufAllocator& allocator, ByteBuf&& in) {
  if (!buf_.is_readable()) {
    buf_ = std::move(in);  // the common case: a read that starts with a frame boundary, no copy
    return;
  }
  const std::size_t n = in.readable_bytes();
  if (n == 0) return;
  // Bytes after the writer index are not visible to slices of the buffer, so appending there is
  // safe even while frames emitted earlier still share its storage.
  if (buf_.writable_bytes() >= n) {
    buf_.write_bytes(in);
    return;
  }
  if (buf_.ref_count() == 1 && buf_.max_writable_bytes() + buf_.reader_index() >= n) {
    if (buf_.reader_index() > 0) buf_.discard_read_bytes();
    buf_.write_bytes(in);  // grows in place (realloc) when needed
    return;
  }
  // Shared with slices handed out earlier (or at its maximum): copy the readable bytes out.
  ByteBuf merged = allocator.buffer(buf_.readable_bytes() + n);
  merged.write_bytes(buf_);
  merged.write_bytes(in);
  buf_ = std::move(merged);
}

void Cumulation::compact() noexcept {
  if (!buf_.has_storage()) return;
  if (!buf_.is_readable()) {
    buf_.release();
  } else if (buf_.reader_index() > buf_.capacity() / 2 && buf_.ref_count() == 1) {
    buf_.discard_read_bytes();
  }
}

}  // namespace weft::detail
