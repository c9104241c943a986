#pragma once
// Byte-class scans for the HTTP/1 parser and encoder, 16 bytes at a time with SSE2 (baseline on
// x86-64), byte by byte elsewhere.

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace weft::http::detail {

// Index of the first byte of [p, p + n) not allowed in a field value (a control other than HTAB,
// or DEL; CR, LF and NUL included), or n.
inline std::size_t find_invalid_value_byte(const char* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i below_space = _mm_set1_epi8(0x1f), tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, below_space), v);  // v <= 0x1f, unsigned
    __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), ctl), _mm_cmpeq_epi8(v, del));
    if (int mask = _mm_movemask_epi8(bad)) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return i;
  }
  return n;
}

// Where a request target ends -- the first byte of [p, p + n) not allowed in one (controls, space,
// DEL), or n -- and where its first '?' is (npos if none): one pass for both.
struct TargetScan {
  std::size_t end;
  std::size_t question;
};
inline TargetScan scan_target(const char* p, std::size_t n) noexcept {
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t i = 0, question = npos;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f), qmark = _mm_set1_epi8('?');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, space), v), _mm_cmpeq_epi8(v, del));
    const auto bad_mask = static_cast<unsigned>(_mm_movemask_epi8(bad));
    if (question == npos) {
      if (auto q = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, qmark)))) {
        question = i + static_cast<std::size_t>(__builtin_ctz(q));
      }
    }
    if (bad_mask != 0) {
      const std::size_t end = i + static_cast<std::size_t>(__builtin_ctz(bad_mask));
      return {end, question < end ? question : npos};
    }
  }
#endif
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if (c <= 0x20 || c == 0x7f) break;
    if (c == '?' && question == npos) question = i;
  }
  return {i, question};
}

}  // namespace weft::http::detail
