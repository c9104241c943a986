#pragma once
/// @file
/// ws::Message: a whole WebSocket message (text or binary), a fragment of one, or the close of the
/// connection.
///
/// Inbound, the codec (codec.h) hands the application whole messages -- a message of one frame as a
/// slice of the received bytes, without a copy -- or, with Options::stream_fragments, each frame of
/// a message as it arrives (is_first() on the first, is_last() on the last); and, last, one close
/// message with the close code and reason the connection ended with (the peer's, the one weft sent
/// for a protocol error, or 1006 when the connection ended without a close). Outbound, the
/// application writes whole messages, or a message as fragments (Message::fragment: the first, any
/// number in between, the last; control frames may go between them), and a close message starts
/// the close handshake.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/buffer/byte_buf.h"

namespace weft::ws {

/// A whole message, or a close (see the file's description). A value type; not thread-safe (one
/// owner at a time).
class Message {
 public:
  /// What the message is.
  enum class Kind : std::uint8_t {
    text,    ///< UTF-8 text (validated inbound; the sender's promise outbound)
    binary,  ///< bytes
    close,   ///< the close handshake: close_code() and reason()
  };

  /// An empty binary message.
  Message() noexcept = default;
  /// A text message holding `bytes` (UTF-8).
  static Message text(ByteBuf bytes) noexcept { return Message(Kind::text, std::move(bytes), 0); }
  /// A text message holding a copy of `text` (UTF-8).
  static Message text(std::string_view text) { return Message(Kind::text, ByteBuf::copy_of(text), 0); }
  /// A binary message holding `bytes`.
  static Message binary(ByteBuf bytes) noexcept { return Message(Kind::binary, std::move(bytes), 0); }
  /// A binary message holding a copy of `bytes`.
  static Message binary(std::string_view bytes) { return Message(Kind::binary, ByteBuf::copy_of(bytes), 0); }
  /// A fragment of a text (`kind` text) or binary message: `first` and `last` say where it stands
  /// (a fragment that is both is a whole message). Outbound, a message's fragments must be written
  /// in order, with nothing but control frames between them, and are sent uncompressed.
  static Message fragment(Kind kind, ByteBuf bytes, bool first, bool last) noexcept {
    Message m(kind, std::move(bytes), 0);
    m.first_ = first;
    m.last_ = last;
    return m;
  }
  /// A close with `code` (a valid close code, see is_valid_close_code) and a UTF-8 `reason` of at
  /// most 123 bytes.
  static Message close(std::uint16_t code = 1000, std::string_view reason = {}) {
    return Message(Kind::close, reason.empty() ? ByteBuf() : ByteBuf::copy_of(reason), code);
  }

  /// What the message is.
  Kind kind() const noexcept { return kind_; }
  /// Whether it is a text message.
  bool is_text() const noexcept { return kind_ == Kind::text; }
  /// Whether it is a binary message.
  bool is_binary() const noexcept { return kind_ == Kind::binary; }
  /// Whether it is a close.
  bool is_close() const noexcept { return kind_ == Kind::close; }
  /// Whether it begins its message (true for a whole message).
  bool is_first() const noexcept { return first_; }
  /// Whether it ends its message (true for a whole message).
  bool is_last() const noexcept { return last_; }
  /// Whether it is a fragment, not a whole message.
  bool is_fragment() const noexcept { return !(first_ && last_); }
  /// The payload (a close's reason), to read or to take (std::move(message.data())).
  ByteBuf& data() noexcept { return data_; }
  /// The payload (a close's reason), read-only.
  const ByteBuf& data() const noexcept { return data_; }
  /// The payload's bytes (a close's reason): valid while the message lives.
  std::string_view view() const noexcept { return data_.view(); }
  /// A close's code (1005 when the peer's close had none, 1006 when there was no close); 0 otherwise.
  std::uint16_t close_code() const noexcept { return code_; }
  /// A close's reason (UTF-8).
  std::string_view reason() const noexcept { return data_.view(); }
  /// The bytes the message holds, for the channel's accounting.
  std::size_t message_size() const noexcept { return sizeof(Message) + data_.readable_bytes(); }

 private:
  Message(Kind kind, ByteBuf data, std::uint16_t code) noexcept : data_(std::move(data)), code_(code), kind_(kind) {}
  ByteBuf data_;
  std::uint16_t code_ = 0;
  Kind kind_ = Kind::binary;
  bool first_ = true;
  bool last_ = true;
};

}  // namespace weft::ws
