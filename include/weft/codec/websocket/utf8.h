#pragma once
/// @file
/// A streaming UTF-8 validator (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF),
/// for text messages that arrive in fragments and reads: it fails at the first byte that cannot
/// begin or continue a valid sequence, however the text was cut.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::ws {

/// Validates UTF-8 fed in pieces (see the file's description). Not thread-safe (one per message).
class Utf8Validator {
 public:
  /// Feeds the next piece; false as soon as the text so far cannot be the start of valid UTF-8
  /// (and on every later call).
  bool feed(std::string_view bytes) noexcept;
  /// Whether everything fed ends on a character boundary: the whole text was valid.
  bool complete() const noexcept { return need_ == 0 && !failed_; }
  /// Starts over, for the next message.
  void reset() noexcept { *this = Utf8Validator(); }

 private:
  std::uint8_t need_ = 0;    // continuation bytes the current character still needs
  std::uint8_t low_ = 0x80;  // the range of the next continuation byte (narrower after E0, ED, F0, F4)
  std::uint8_t high_ = 0xBF;
  bool failed_ = false;
};

/// Whether `text` is whole, valid UTF-8. Thread-safe.
inline bool is_valid_utf8(std::string_view text) noexcept {
  Utf8Validator v;
  return v.feed(text) && v.complete();
}

}  // namespace weft::ws
