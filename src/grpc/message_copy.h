#pragma once
// How a gRPC message leaves, on the server and on the client: framed by frame_for_send() into one
// outbound unit (http2::PrefixedStreamData, http2::ClientStream::write(prefix, chunk)). Below
// kCopyBelowBytes the message is copied behind its 5-byte prefix (one buffer); from it the message
// leaves by reference after a prefix of its own (the HTTP/2 codecs frame large chunks without
// copying them). Either way the two parts are queued together: a call that ends (a deadline, a
// protocol error, the request's end) ends after the whole message, never between its parts.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/message_framing.h"

namespace weft::grpc::detail {

inline constexpr std::size_t kCopyBelowBytes = 8 * 1024;

// A message framed to send: `prefix` (the whole framed message when it was copied) then `body`
// (empty when copied).
struct FramedMessage {
  ByteBuf prefix;
  ByteBuf body;
};

// `message` framed (compressed flag 0); the prefix, or the copy, from `allocator`.
inline FramedMessage frame_for_send(ByteBuf message, ByteBufAllocator& allocator) {
  const std::size_t n = message.readable_bytes();
  if (n < kCopyBelowBytes) return FramedMessage{frame_message(message, allocator), ByteBuf()};
  ByteBuf prefix = allocator.buffer(kMessagePrefixBytes);
  prefix.write_u8(0);
  prefix.write_u32(static_cast<std::uint32_t>(n));
  return FramedMessage{std::move(prefix), std::move(message)};
}

}  // namespace weft::grpc::detail
