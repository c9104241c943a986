#pragma once
/// @file
/// gRPC message compression (grpc/doc/compression.md, PROTOCOL-HTTP2.md): the `identity`, `gzip`
/// and `deflate` encodings a call names in `grpc-encoding`, the list a peer accepts in
/// `grpc-accept-encoding`, and messages compressed one by one (compressed flag 1 in their prefix).
/// `gzip` is RFC 1952, `deflate` is zlib's format (RFC 1950), as grpc-core and grpc-java send them.
/// For the server (ServerCall) and for a client alike:
///
///   // Sending: a framed message, compressed when the options say so and it is large enough.
///   ByteBuf framed = weft::grpc::frame_compressed(message, {weft::grpc::Compression::gzip});
///   // Receiving: the deframer of a call whose head said `grpc-encoding: gzip`.
///   weft::grpc::DecompressingDeframer deframer(max_message_bytes, "gzip");
///   deframer.feed(std::move(chunk));
///   while (auto message = deframer.next()) ...;   // decompressed, at most max_message_bytes each
///   if (deframer.error()) ...;                     // RESOURCE_EXHAUSTED, INTERNAL, UNIMPLEMENTED
///
/// A received message is bounded after decompression: inflating stops at the bound (a zip bomb
/// costs at most the bound and zlib's 7 KiB + 32 KiB window, never more) and fails RESOURCE_EXHAUSTED.
/// zlib's streams are kept per thread and reset between messages: compressing or decompressing a
/// message allocates only its output buffer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/grpc/message_framing.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

/// A message encoding (grpc-encoding's values weft implements).
enum class Compression : std::uint8_t {
  identity,  ///< none
  deflate,   ///< zlib format (RFC 1950)
  gzip,      ///< gzip format (RFC 1952)
};

/// What grpc-accept-encoding says weft accepts (grpc-core's order): sent on every response head.
inline constexpr std::string_view kAcceptEncoding = "identity,deflate,gzip";
/// CompressionOptions::min_bytes' default: smaller messages gain little and cost a zlib pass.
inline constexpr std::size_t kDefaultMinCompressBytes = 256;

/// Thread-safe (pure). The encoding's name as grpc-encoding spells it ("gzip").
std::string_view compression_name(Compression compression) noexcept;
/// Thread-safe (pure). The encoding `name` names (ASCII case-insensitive); nullopt for one weft does
/// not implement (snappy, zstd...).
std::optional<Compression> parse_compression(std::string_view name) noexcept;
/// Thread-safe (pure). Whether a grpc-accept-encoding value (a comma-separated list, spaces
/// allowed) lists `compression`; identity is always accepted.
bool accepts_compression(std::string_view accept_encoding, Compression compression) noexcept;

/// How messages are sent (a value type).
struct CompressionOptions {
  /// The encoding; identity sends every message uncompressed.
  Compression algorithm = Compression::identity;
  /// zlib's level: 1 (fastest) to 9 (smallest), 0 (stored), -1 zlib's default (6).
  int level = -1;
  /// A message smaller than this is sent uncompressed (compressed flag 0), as is one that does not
  /// shrink.
  std::size_t min_bytes = kDefaultMinCompressBytes;

  /// Identity (nothing compressed).
  CompressionOptions() = default;
  /// `compression` at `compression_level`, from `min_message_bytes` up.
  CompressionOptions(Compression compression, int compression_level = -1,  // NOLINT: implicit on purpose
                     std::size_t min_message_bytes = kDefaultMinCompressBytes)
      : algorithm(compression), level(compression_level), min_bytes(min_message_bytes) {}
};

/// Thread-safe (zlib's state is per thread). `message` framed for the wire: its 5-byte prefix with
/// compressed flag 1 and the compressed bytes when `options` name an encoding, the message has at
/// least options.min_bytes and compressing shrinks it; else flag 0 and the bytes as they are (as
/// frame_message). In one new buffer from `allocator`. Throws std::invalid_argument for a level
/// outside -1..9.
ByteBuf frame_compressed(const ByteBuf& message, const CompressionOptions& options,
                         ByteBufAllocator& allocator = default_allocator());

/// Thread-safe (zlib's state is per thread). The bytes `compressed` (one message, no prefix)
/// decompressed with `compression` into `out` (a new buffer from `allocator`, at most `max_bytes`):
/// OK; RESOURCE_EXHAUSTED when they inflate past `max_bytes` (inflating stops there); INTERNAL when
/// they are not valid for the encoding (corrupt, truncated, trailing bytes). Identity copies them
/// (RESOURCE_EXHAUSTED past the bound too).
Status decompress(const ByteBuf& compressed, Compression compression, std::size_t max_bytes, ByteBuf& out,
                  ByteBufAllocator& allocator = default_allocator());

/// A MessageDeframer that decompresses: splits a body into messages and gives them back as the
/// application sent them. For a call whose head said `grpc-encoding` (the server's request, the
/// client's response). Not thread-safe (one per call, on its loop).
///
/// A message with compressed flag 1: decompressed when the encoding is gzip or deflate (INTERNAL
/// when its bytes are not, RESOURCE_EXHAUSTED past the bound); INTERNAL under identity or no
/// grpc-encoding (the spec's "compressed flag without encoding"); UNIMPLEMENTED under an encoding
/// weft does not implement (the server then lists kAcceptEncoding in grpc-accept-encoding).
/// Messages with flag 0 pass as they are under any encoding.
class DecompressingDeframer {
 public:
  /// Thread-safe (constructs). `max_message_bytes` bounds each message, compressed and
  /// decompressed. `grpc_encoding`: the call's grpc-encoding value (empty: none).
  explicit DecompressingDeframer(std::size_t max_message_bytes = kDefaultMaxMessageBytes,
                                 std::string_view grpc_encoding = {});

  /// Owner only. Takes a chunk of the body (as MessageDeframer::feed).
  void feed(ByteBuf chunk) { deframer_.feed(std::move(chunk)); }
  /// Owner only. The next whole message, decompressed, if one is held. Once error() is set, nothing
  /// more.
  std::optional<ByteBuf> next();
  /// Owner only. The failure found (the deframer's, or a message that did not decompress), if any.
  const std::optional<Status>& error() const noexcept { return error_ ? error_ : deframer_.error(); }
  /// Owner only. Whether bytes of an unfinished message are held (at the body's end: a truncated message).
  bool has_partial() const noexcept { return deframer_.has_partial(); }
  /// Owner only. Whether the message next() gave last came compressed (flag 1 in its prefix).
  bool last_compressed() const noexcept { return deframer_.last_compressed(); }
  /// Owner only. The encoding compressed messages are in (identity also for an unknown one).
  Compression encoding() const noexcept { return encoding_; }
  /// Owner only. Whether grpc-encoding named an encoding weft does not implement.
  bool unknown_encoding() const noexcept { return unknown_encoding_; }

 private:
  MessageDeframer deframer_;
  std::size_t max_message_bytes_;
  Compression encoding_ = Compression::identity;
  bool unknown_encoding_ = false;
  std::string encoding_name_;  // as sent, for the UNIMPLEMENTED message (only when unknown)
  std::optional<Status> error_;
};

}  // namespace weft::grpc
