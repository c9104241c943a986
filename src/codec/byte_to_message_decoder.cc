#include "weft/codec/byte_to_message_decoder.h"

#include "weft/buffer/byte_buf_allocator.h"

namespace weft::detail {

void cumulate(ByteBufAllocator& allocator, ByteBuf& into, ByteBuf&& in) {
  if (!into.is_readable()) {
    into = std::move(in);  // the common case: a read that starts with a frame boundary, no copy
    return;
  }
  const std::size_t n = in.readable_bytes();
  if (n == 0) return;
  // Bytes after the writer index are not visible to slices of the buffer, so appending there is
  // safe even while frames emitted earlier still share its storage.
  if (into.writable_bytes() >= n) {
    into.write_bytes(in);
    return;
  }
  if (into.ref_count() == 1 && into.max_writable_bytes() + into.reader_index() >= n) {
    if (into.reader_index() > 0) into.discard_read_bytes();
    into.write_bytes(in);  // grows in place (realloc) when needed
    return;
  }
  // Shared with slices handed out earlier (or at its maximum): copy the readable bytes out.
  ByteBuf merged = allocator.buffer(into.readable_bytes() + n);
  merged.write_bytes(into);
  merged.write_bytes(in);
  into = std::move(merged);
}

void Cumulation::append(ByteBufAllocator& allocator, ByteBuf&& in) { cumulate(allocator, buf_, std::move(in)); }

void Cumulation::compact() noexcept {
  if (!buf_.has_storage()) return;
  if (!buf_.is_readable()) {
    buf_.release();
  } else if (buf_.reader_index() > buf_.capacity() / 2 && buf_.ref_count() == 1) {
    buf_.discard_read_bytes();
  }
}

}  // namespace weft::detail
