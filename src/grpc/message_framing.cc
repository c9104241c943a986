#include "weft/grpc/message_framing.h"

#include <algorithm>
#include <string>

#include "weft/buffer/byte_buf_allocator.h"

namespace weft::grpc {

namespace {
std::uint32_t prefix_length(const std::uint8_t* prefix) noexcept {
  return (std::uint32_t{prefix[1]} << 24) | (std::uint32_t{prefix[2]} << 16) | (std::uint32_t{prefix[3]} << 8) |
         std::uint32_t{prefix[4]};
}
}  // namespace

ByteBuf frame_message(const ByteBuf& message, ByteBufAllocator& allocator) {
  const std::size_t n = message.readable_bytes();
  ByteBuf framed = allocator.buffer(kMessagePrefixBytes + n);
  framed.write_u8(0);
  framed.write_u32(static_cast<std::uint32_t>(n));
  if (n > 0) {
    std::copy_n(message.read_ptr(), n, framed.write_ptr());
    framed.advance_writer(n);
  }
  return framed;
}

void MessageDeframer::feed(ByteBuf chunk) {
  if (error_ || !chunk.is_readable()) return;
  if (chunk_ && chunk_->is_readable()) {
    // next() was not called until empty: the new bytes follow what is left of the old chunk, in one
    // buffer (one copy). pending_ keeps holding only the start of the message being gathered, which
    // both pieces follow.
    ByteBuf& rest = *chunk_;
    ByteBuf merged = default_allocator().buffer(rest.readable_bytes() + chunk.readable_bytes());
    std::copy_n(rest.read_ptr(), rest.readable_bytes(), merged.write_ptr());
    merged.advance_writer(rest.readable_bytes());
    std::copy_n(chunk.read_ptr(), chunk.readable_bytes(), merged.write_ptr());
    merged.advance_writer(chunk.readable_bytes());
    chunk_ = std::move(merged);
    return;
  }
  chunk_ = std::move(chunk);
}

bool MessageDeframer::check_prefix(const std::uint8_t* prefix) {
  const std::uint32_t length = prefix_length(prefix);
  if (prefix[0] != 0 && !(prefix[0] == 1 && pass_compressed_)) {
    if (prefix[0] != 1) {
      error_ = Status{StatusCode::internal, "invalid compressed flag " + std::to_string(prefix[0])};
    } else if (compression_negotiated_) {
      error_ = Status{StatusCode::unimplemented, "message compression is not supported"};
    } else {
      error_ = Status{StatusCode::internal, "a compressed message without grpc-encoding"};
    }
    return false;
  }
  if (length > max_message_bytes_) {
    error_ = Status{StatusCode::resource_exhausted, "received message larger than max (" + std::to_string(length) +
                                                        " vs. " + std::to_string(max_message_bytes_) + ")"};
    return false;
  }
  return true;
}

std::optional<ByteBuf> MessageDeframer::next() {
  if (error_) return std::nullopt;
  // Gather into pending_ while a message is cut across chunks.
  if (pending_.is_readable()) {
    if (!chunk_) return std::nullopt;
    ByteBuf& chunk = *chunk_;
    if (pending_.readable_bytes() < kMessagePrefixBytes) {
      const std::size_t take = std::min(kMessagePrefixBytes - pending_.readable_bytes(), chunk.readable_bytes());
      pending_.ensure_writable(take);
      std::copy_n(chunk.read_ptr(), take, pending_.write_ptr());
      pending_.advance_writer(take);
      chunk.skip_bytes(take);
      if (pending_.readable_bytes() < kMessagePrefixBytes) return std::nullopt;
      if (!check_prefix(pending_.read_ptr())) return std::nullopt;
    }
    const std::size_t total = kMessagePrefixBytes + prefix_length(pending_.read_ptr());
    const std::size_t take = std::min(total - pending_.readable_bytes(), chunk.readable_bytes());
    pending_.ensure_writable(take);
    std::copy_n(chunk.read_ptr(), take, pending_.write_ptr());
    pending_.advance_writer(take);
    chunk.skip_bytes(take);
    if (pending_.readable_bytes() < total) return std::nullopt;
    ByteBuf message = std::move(pending_);
    pending_ = ByteBuf();
    last_compressed_ = message.read_ptr()[0] != 0;
    message.skip_bytes(kMessagePrefixBytes);
    return message;
  }
  if (!chunk_ || !chunk_->is_readable()) return std::nullopt;
  ByteBuf& chunk = *chunk_;
  if (chunk.readable_bytes() >= kMessagePrefixBytes) {
    if (!check_prefix(chunk.read_ptr())) return std::nullopt;
    const std::size_t length = prefix_length(chunk.read_ptr());
    if (chunk.readable_bytes() >= kMessagePrefixBytes + length) {
      last_compressed_ = chunk.read_ptr()[0] != 0;
      chunk.skip_bytes(kMessagePrefixBytes);
      return chunk.read_slice(length);  // whole in this chunk: no copy
    }
  }
  // The start of a message cut across chunks: gather it (the prefix, at least, is checked once whole).
  const std::size_t have = chunk.readable_bytes();
  std::size_t reserve = have;
  if (have >= kMessagePrefixBytes) reserve = kMessagePrefixBytes + prefix_length(chunk.read_ptr());
  pending_ = default_allocator().buffer(reserve);
  std::copy_n(chunk.read_ptr(), have, pending_.write_ptr());
  pending_.advance_writer(have);
  chunk.skip_bytes(have);
  return std::nullopt;
}

bool MessageDeframer::has_partial() const noexcept {
  return pending_.is_readable() || (chunk_ && chunk_->is_readable());
}

bool is_one_framed_message(const ByteBuf& framed) noexcept {
  const std::size_t n = framed.readable_bytes();
  if (n < kMessagePrefixBytes) return false;
  const std::uint8_t* p = framed.read_ptr();
  const std::size_t length = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) | (std::size_t{p[3]} << 8) | p[4];
  return p[0] == 0 && length == n - kMessagePrefixBytes;
}

}  // namespace weft::grpc
