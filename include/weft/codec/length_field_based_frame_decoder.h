#pragma once
/// @file
/// Length-prefixed framing: LengthFieldBasedFrameDecoder splits a stream by a length field inside
/// each frame's header; LengthFieldPrepender writes such a field in front of each outbound buffer.
///
///   // [len:4][payload]  ->  payload
///   LengthFieldBasedFrameDecoder({.max_frame_length = 1 << 20, .length_field_length = 4,
///                                 .initial_bytes_to_strip = 4});
///   LengthFieldPrepender({.length_field_length = 4});
///
/// The decoder reads the length field at length_field_offset (length_field_length bytes: 1, 2, 3, 4
/// or 8, big- or little-endian); the frame is then
///     length_field_offset + length_field_length + value + length_adjustment
/// bytes long, and is emitted (as a ByteBuf slice: no copy) without its first initial_bytes_to_strip
/// bytes. A frame longer than max_frame_length is discarded and TooLongFrameError naming
/// "max_frame_length" is fired: with fail_fast as soon as the length field is read, else once the
/// whole frame has been skipped. The decoder never buffers more than max_frame_length bytes (plus one
/// read). A length that is negative (8-byte fields), or a frame shorter than its header or than
/// initial_bytes_to_strip, is a CorruptedFrameError (the header bytes are skipped). A partial frame at
/// end of input fires TruncatedFrameError. Loop thread only.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "weft/channel/handler.h"
#include "weft/codec/byte_to_message_decoder.h"
#include "weft/codec/message_to_message_codec.h"

namespace weft {

/// The byte order of a length field.
enum class ByteOrder { big_endian, little_endian };

/// Splits a byte stream by a length field in each frame's header (see the file's description).
/// Loop thread only.
class LengthFieldBasedFrameDecoder : public ByteToMessageDecoder<ByteBuf> {
 public:
  /// How frames are laid out (see the file's description for the frame length formula).
  struct Options {
    std::size_t max_frame_length = 1 << 20;  ///< longer frames are discarded (TooLongFrameError)
    std::size_t length_field_offset = 0;    ///< where the length field starts in the frame
    std::size_t length_field_length = 4;  ///< 1, 2, 3, 4 or 8
    std::int64_t length_adjustment = 0;     ///< added to the field's value to get the rest of the frame
    std::size_t initial_bytes_to_strip = 0;  ///< bytes cut from the front of each emitted frame
    ByteOrder byte_order = ByteOrder::big_endian;  ///< of the length field
    bool fail_fast = true;  ///< fire TooLongFrameError as soon as the length is read, not after skipping
  };
  /// Throws std::invalid_argument on an unsupported length_field_length or max_frame_length 0.
  explicit LengthFieldBasedFrameDecoder(Options options);

  /// The options it was made with.
  const Options& options() const noexcept { return options_; }

 protected:
  std::optional<ByteBuf> decode(Context& ctx, ByteBuf& in) override;

 private:
  std::uint64_t read_length_field(const ByteBuf& in, std::size_t index) const;
  void discard(ByteBuf& in);
  [[noreturn]] void fail_too_long(std::size_t frame_length) const;

  Options options_;
  std::size_t length_field_end_;
  bool discarding_ = false;
  std::size_t too_long_frame_length_ = 0;
  std::size_t bytes_to_discard_ = 0;
};

/// Writes a length field in front of every outbound ByteBuf: emits the header as its own small
/// buffer followed by the message buffer itself (no copy of the payload). The field holds the
/// payload length + length_adjustment (+ length_field_length when length_includes_length_field);
/// EncoderError when that value is negative or does not fit the field.
class LengthFieldPrepender : public MessageToMessageEncoder<ByteBuf, ByteBuf> {
 public:
  /// The length field written.
  struct Options {
    std::size_t length_field_length = 4;  ///< 1, 2, 3, 4 or 8
    std::int64_t length_adjustment = 0;         ///< added to the payload length
    bool length_includes_length_field = false;  ///< count the field itself in the value
    ByteOrder byte_order = ByteOrder::big_endian;  ///< of the length field
  };
  /// Throws std::invalid_argument on an unsupported length_field_length.
  explicit LengthFieldPrepender(Options options);
  bool is_sharable() const noexcept override { return true; }  ///< no per-channel state

 protected:
  void encode(Context& ctx, ByteBuf&& message, Output<ByteBuf>& out) override;

 private:
  Options options_;
};

}  // namespace weft
