#pragma once
/// @file
/// RFC 6455 framing: an incremental frame decoder and the frame encoder.
///
/// FrameDecoder takes bytes as they arrive (one at a time if so) and yields each frame's header as
/// soon as it is whole, then the bytes of its payload as they arrive (unmasked in place, for a
/// streaming check such as UTF-8's), then the whole payload as one slice of the received buffer:
/// never copied. A frame's declared length is checked against the limit from its header alone, so
/// what is buffered for one frame is bounded. It checks what RFC 6455 section 5 requires of every
/// frame on its own (reserved bits, opcodes, control frames short and unfragmented, masking by the
/// client's side only, the 64-bit length's top bit, lengths in their shortest form); what spans
/// frames (continuations, messages) is the
/// connection's (codec.h). encode_frame() writes a frame's header, masked with a random key when the
/// encoder is a client's.
///
/// Loop thread only: a decoder and an encoder belong to one connection.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"

namespace weft::ws {

/// A frame's opcode (RFC 6455 section 5.2).
enum class Opcode : std::uint8_t {
  continuation = 0x0,  ///< the next fragment of a text or binary message
  text = 0x1,          ///< the first (or only) frame of a UTF-8 text message
  binary = 0x2,        ///< the first (or only) frame of a binary message
  close = 0x8,         ///< the close handshake: an optional code and UTF-8 reason
  ping = 0x9,          ///< answered with a pong carrying the same payload
  pong = 0xA,          ///< the answer to a ping, or a unilateral heartbeat
};

/// Whether `opcode` is a control frame's (close, ping, pong). Thread-safe.
constexpr bool is_control(Opcode opcode) noexcept { return (static_cast<std::uint8_t>(opcode) & 0x8) != 0; }

/// Close codes weft sends (RFC 6455 section 7.4.1).
namespace close_code {
inline constexpr std::uint16_t normal = 1000;           ///< the purpose was fulfilled
inline constexpr std::uint16_t going_away = 1001;       ///< the server is shutting down
inline constexpr std::uint16_t protocol_error = 1002;   ///< a frame RFC 6455 forbids
inline constexpr std::uint16_t unsupported = 1003;      ///< a kind of data the endpoint does not take
inline constexpr std::uint16_t no_status = 1005;        ///< (received only) a close frame without a code
inline constexpr std::uint16_t abnormal = 1006;         ///< (received only) the connection ended without a close
inline constexpr std::uint16_t invalid_payload = 1007;  ///< a text message (or close reason) not UTF-8
inline constexpr std::uint16_t policy = 1008;           ///< a policy was violated
inline constexpr std::uint16_t too_big = 1009;          ///< a message (or frame) over the limits
inline constexpr std::uint16_t internal_error = 1011;   ///< the server failed
}  // namespace close_code

/// Whether `code` may be sent in a close frame (RFC 6455 section 7.4: 1000-1003, 1007-1011,
/// 3000-4999; 1004-1006, 1015 and the rest are not). Thread-safe.
bool is_valid_close_code(std::uint16_t code) noexcept;

/// A frame's header, as decoded.
struct FrameHeader {
  Opcode opcode = Opcode::continuation;  ///< what the frame carries
  bool fin = false;                      ///< the last frame of its message
  bool masked = false;                   ///< the payload is masked with mask_key
  bool rsv1 = false;                     ///< RSV1: a compressed message's first frame (permessage-deflate)
  std::uint8_t mask_key[4] = {};         ///< the masking key, when masked
  std::uint64_t length = 0;              ///< the payload's length
};

/// Incremental RFC 6455 frame decoder (see the file's description). Loop thread only.
class FrameDecoder {
 public:
  /// Which side decodes: a server requires masked frames, a client unmasked ones.
  enum class Role : std::uint8_t { server, client };
  /// What next() found.
  enum class Status : std::uint8_t {
    need_more,  ///< nothing more until more bytes arrive
    header,     ///< header() is a new frame's; `payload` follows (after `partial`s), also when empty
    partial,    ///< fresh() holds payload bytes that arrived and were unmasked; the frame is not whole
    payload,    ///< `out` holds the frame's whole payload, unmasked (empty for an empty frame);
                ///< fresh() holds its bytes not reported by a `partial` before
    error,      ///< a frame RFC 6455 forbids: close with error_code() (the decoder stops)
  };

  /// A decoder for `role`. `max_frame_length` bounds a frame's declared length: a longer one is an
  /// error with close_code::too_big, found from its header alone (nothing is buffered for it).
  explicit FrameDecoder(Role role, std::uint64_t max_frame_length) noexcept
      : role_(role), max_frame_length_(max_frame_length) {}

  /// Allows RSV1 on the first frame of a data message (permessage-deflate was agreed, RFC 7692
  /// section 6): RSV1 then still fails a control frame and a continuation. Off: RSV1 is an error.
  void allow_compressed(bool allowed) noexcept { compressed_allowed_ = allowed; }

  /// Decodes from `in` (the received bytes: a frame's header and payload are consumed once whole;
  /// bytes of a payload still arriving stay in `in`, unmasked). On `payload`, `out` is a slice of
  /// `in`. `in` must be writable (unmasking happens in place) and only grow between calls.
  Status next(ByteBuf& in, ByteBuf& out);
  /// The payload bytes `partial` or `payload` reported, each byte once (valid until `in` changes).
  std::string_view fresh() const noexcept { return fresh_; }
  /// The current frame's header (valid from `header` until the next `header`).
  const FrameHeader& header() const noexcept { return header_; }
  /// The close code for the `error` status.
  std::uint16_t error_code() const noexcept { return error_code_; }
  /// What was wrong, for logs.
  std::string_view error_reason() const noexcept { return error_reason_; }

 private:
  Status fail(std::uint16_t code, std::string_view reason) noexcept;

  Role role_;
  bool in_payload_ = false;
  bool compressed_allowed_ = false;
  std::uint16_t error_code_ = 0;
  std::uint64_t max_frame_length_;
  std::uint64_t remaining_ = 0;  // the current frame's payload length
  std::size_t unmasked_ = 0;     // payload bytes unmasked (and reported) so far, in `in`
  FrameHeader header_;
  std::string_view fresh_;
  std::string_view error_reason_;
};

/// The longest unmasked header (a server's).
inline constexpr std::size_t kMaxServerHeaderSize = 10;
/// The room prepend_header needs before a payload: the longest header, masking key included.
inline constexpr std::size_t kMaxHeaderSize = 14;

/// Frame encoder: writes headers, masking payloads with a fresh key from OpenSSL's random generator
/// when `masked` (a client's frames, RFC 6455 section 10.3). Loop thread only.
class FrameEncoder {
 public:
  /// A server's encoder (`masked` false) or a client's.
  explicit FrameEncoder(bool masked) noexcept;
  /// One frame: `payload` follows the header in `out` (copied; masked in the copy if masked).
  /// For control frames and short data frames.
  void encode(ByteBuf& out, Opcode opcode, bool fin, std::string_view payload);
  /// One frame's header only, for a payload the caller writes after it unchanged (unmasked
  /// encoders only: a server sends a large payload by reference, without copying it).
  void encode_header(ByteBuf& out, Opcode opcode, bool fin, std::uint64_t length);
  /// Puts a frame's header in front of `payload`'s readable bytes, in the room before its reader
  /// index (at least kMaxHeaderSize bytes), and moves the reader index back over it: the frame in
  /// one buffer, without a copy. `compressed` sets RSV1 (permessage-deflate). A masking encoder
  /// masks the payload in place (it must be the caller's own, writable buffer).
  void prepend_header(ByteBuf& payload, Opcode opcode, bool fin, bool compressed);
  /// Whether this encoder masks (a client's).
  bool masked() const noexcept { return masked_; }

 private:
  void next_key(std::uint8_t key[4]);
  // Writes a header without its mask key into `out` (14 bytes of room); returns its size.
  std::size_t write_header(std::uint8_t* out, std::uint8_t first_byte, std::uint64_t length) const noexcept;
  bool masked_;
  std::uint8_t used_ = sizeof(keys_);  // keys_ bytes taken; refilled from OpenSSL's RAND_bytes
  std::uint8_t keys_[64] = {};
};

/// Unmasks (or masks) `n` bytes at `data` in place with `key`, starting `offset` bytes into the
/// key's cycle. Thread-safe.
void apply_mask(std::uint8_t* data, std::size_t n, const std::uint8_t key[4], std::uint64_t offset) noexcept;

/// Writes `n` bytes from `src` to `dst` masked with `key` from the start of its cycle: a copy and
/// apply_mask in one pass over the bytes. `dst` and `src` do not overlap. Thread-safe.
void copy_masked(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, const std::uint8_t key[4]) noexcept;

namespace detail {
/// apply_mask without AVX2, as a CPU without it runs it (apply_mask takes AVX2 where the CPU has
/// it), so that tests check both on any machine. Thread-safe.
void apply_mask_sse2(std::uint8_t* data, std::size_t n, const std::uint8_t key[4], std::uint64_t offset) noexcept;
/// copy_masked without AVX2 (see apply_mask_sse2). Thread-safe.
void copy_masked_sse2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, const std::uint8_t key[4]) noexcept;
}  // namespace detail

}  // namespace weft::ws
