#pragma once
/// @file
/// gRPC's length-prefixed messages (PROTOCOL-HTTP2.md, "Length-Prefixed-Message"): one byte
/// compressed flag, four bytes big-endian length, then the message. In a request body they span
/// DATA frames freely and several may share one frame; MessageDeframer takes the body's chunks as
/// they come and gives the messages back whole.

#include <cstddef>
#include <optional>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

/// The bytes before each message: flag and length.
inline constexpr std::size_t kMessagePrefixBytes = 5;
/// The default bound on a received message (grpc++'s and grpc-java's: 4 MiB).
inline constexpr std::size_t kDefaultMaxMessageBytes = 4 * 1024 * 1024;

/// Thread-safe (pure). `message` with its prefix (compressed flag 0), in one new buffer from
/// `allocator` (ServerCall's writes use their channel's: pooled on epoll and io_uring).
ByteBuf frame_message(const ByteBuf& message, ByteBufAllocator& allocator = default_allocator());
/// Thread-safe (pure). Whether `framed` is exactly one uncompressed length-prefixed message (what
/// frame_message() makes): its prefix's flag 0 and length the bytes after it.
bool is_one_framed_message(const ByteBuf& framed) noexcept;

/// Splits a request body into messages. Not thread-safe (one per call, on its loop).
class MessageDeframer {
 public:
  /// Thread-safe (constructs). `max_message_bytes`: a message announced larger fails with
  /// RESOURCE_EXHAUSTED (before its bytes are held). `compression_negotiated`: whether the call
  /// declared a grpc-encoding other than identity (this deframer does not decompress: a compressed
  /// message then fails UNIMPLEMENTED; without one it fails INTERNAL, as the spec says).
  /// `pass_compressed`: compressed messages (flag 1) are given out as they are, and
  /// last_compressed() says so (DecompressingDeframer decompresses them, compression.h).
  explicit MessageDeframer(std::size_t max_message_bytes = kDefaultMaxMessageBytes,
                           bool compression_negotiated = false, bool pass_compressed = false) noexcept
      : max_message_bytes_(max_message_bytes),
        compression_negotiated_(compression_negotiated),
        pass_compressed_(pass_compressed) {}

  /// Owner only. Takes a chunk of the body (whole messages in it are sliced out, not copied; a message cut
  /// across chunks is gathered by one copy).
  void feed(ByteBuf chunk);
  /// Owner only. The next whole message, if one is held. Once error() is set, nothing more.
  std::optional<ByteBuf> next();
  /// Owner only. The failure found (a message too large, a compressed flag), if any.
  const std::optional<Status>& error() const noexcept { return error_; }
  /// Owner only. Whether bytes of an unfinished message are held (at the body's end: a truncated message).
  bool has_partial() const noexcept;
  /// Owner only. Whether the message next() gave last had compressed flag 1 (only with pass_compressed).
  bool last_compressed() const noexcept { return last_compressed_; }

 private:
  bool check_prefix(const std::uint8_t* prefix);  // false (and error_) when the message is refused

  std::size_t max_message_bytes_;
  bool compression_negotiated_;
  bool pass_compressed_;
  bool last_compressed_ = false;
  ByteBuf pending_;  // bytes of the message being gathered (prefix included)
  std::optional<ByteBuf> chunk_;  // the chunk being split
  std::optional<Status> error_;
};

}  // namespace weft::grpc
