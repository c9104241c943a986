#include "weft/codec/websocket/utf8.h"

#include <cstring>

namespace weft::ws {

bool Utf8Validator::feed(std::string_view bytes) noexcept {
  if (failed_) return false;
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    if (need_ == 0) {
      // ASCII eight bytes at a time: most text is.
      while (n - i >= 8) {
        std::uint64_t word;
        std::memcpy(&word, p + i, 8);
        if (word & 0x8080808080808080ull) break;
        i += 8;
      }
      if (i == n) break;
      const std::uint8_t b = p[i++];
      if (b < 0x80) continue;
      low_ = 0x80;
      high_ = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) {
        need_ = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        need_ = 2;
        if (b == 0xE0) low_ = 0xA0;   // no overlong three-byte forms
        if (b == 0xED) high_ = 0x9F;  // no surrogates
      } else if (b >= 0xF0 && b <= 0xF4) {
        need_ = 3;
        if (b == 0xF0) low_ = 0x90;   // no overlong four-byte forms
        if (b == 0xF4) high_ = 0x8F;  // nothing above U+10FFFF
      } else {
        failed_ = true;
        return false;
      }
      continue;
    }
    const std::uint8_t b = p[i++];
    if (b < low_ || b > high_) {
      failed_ = true;
      return false;
    }
    low_ = 0x80;
    high_ = 0xBF;
    --need_;
  }
  return true;
}

}  // namespace weft::ws
