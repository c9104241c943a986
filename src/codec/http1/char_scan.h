#pragma once
// Byte-class scans for the HTTP/1 parser and encoder, 16 bytes at a time with SSE2 (baseline on
// x86-64), byte by byte elsewhere.

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace weft::http::detail {

#if defined(__SSE2__)
// The bytes of `v` not allowed in a field value, as a 16-bit mask (bit i: byte i).
inline unsigned invalid_value_bytes(__m128i v) noexcept {
  const __m128i below_space = _mm_set1_epi8(0x1f), tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
  const __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, below_space), v);  // v <= 0x1f, unsigned
  const __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), ctl), _mm_cmpeq_epi8(v, del));
  return static_cast<unsigned>(_mm_movemask_epi8(bad));
}
#endif

// find_invalid_byte_in_value for n < 16 (most values a program adds): two loads that overlap in the
// middle, in one register; the first load's bits come first, so the lowest bit set is the first
// bad byte.
inline std::size_t find_invalid_value_byte_short(const char* p, std::size_t n) noexcept {
#if defined(__SSE2__)
  if (n >= 8) {
    const __m128i head = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i tail = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + n - 8));
    const unsigned mask = invalid_value_bytes(_mm_unpacklo_epi64(head, tail));
    if (mask == 0) return n;
    const auto bit = static_cast<std::size_t>(__builtin_ctz(mask));
    return bit < 8 ? bit : n - 16 + bit;
  }
  if (n >= 4) {
    std::uint32_t head = 0, tail = 0;
    __builtin_memcpy(&head, p, 4);
    __builtin_memcpy(&tail, p + n - 4, 4);
    // Bytes 8..15 are zero (NUL, a bad byte): only the low 8 bits count.
    const unsigned mask =
        invalid_value_bytes(_mm_set_epi32(0, 0, static_cast<int>(tail), static_cast<int>(head))) & 0xffu;
    if (mask == 0) return n;
    const auto bit = static_cast<std::size_t>(__builtin_ctz(mask));
    return bit < 4 ? bit : n - 8 + bit;
  }
#endif
  for (std::size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return i;
  }
  return n;
}

// Index of the first byte of [p, p + n) not allowed in a field value (a control other than HTAB,
// or DEL; CR, LF and NUL included), or n. The parser's form: it scans the rest of its input for the
// CR that ends a line, which it finds in the first 16 bytes or so.
inline std::size_t find_invalid_value_byte(const char* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    if (unsigned mask = invalid_value_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)))) {
      return i + static_cast<std::size_t>(__builtin_ctz(mask));
    }
  }
#endif
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return i;
  }
  return n;
}

// As find_invalid_value_byte, for a whole value a program adds (HttpResponse::header,
// HttpClientRequest::header): no byte-by-byte tail, and a short value in one register.
inline std::size_t find_invalid_byte_in_value(const char* p, std::size_t n) noexcept {
#if defined(__SSE2__)
  if (n < 16) return find_invalid_value_byte_short(p, n);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (unsigned mask = invalid_value_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)))) {
      return i + static_cast<std::size_t>(__builtin_ctz(mask));
    }
  }
  if (i == n) return n;
  // The last 16 bytes in one load, overlapping what was scanned.
  const std::size_t last = n - 16;
  const unsigned mask = invalid_value_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + last)));
  return mask != 0 ? last + static_cast<std::size_t>(__builtin_ctz(mask)) : n;
#else
  return find_invalid_value_byte(p, n);
#endif
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

#if defined(__SSE2__)
// Bit i set: byte i of v is in [lo, hi]. Signed compares: bytes from 0x80 up are negative, outside.
[[gnu::always_inline]] inline __m128i in_range(__m128i v, char lo, char hi) noexcept {
  return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                       _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
}
// Bit i set: byte i of v is a letter, a digit, '.' or '-'.
[[gnu::always_inline]] inline unsigned plain_host_byte_mask(__m128i v) noexcept {
  const __m128i letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z');
  // '-', '.', '/' and the digits are consecutive: all but '/'
  const __m128i dash_to_nine = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')), in_range(v, '-', '9'));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(letter, dash_to_nine)));
}
#endif

#if defined(__SSE2__)
// Bit i set: byte i of v is a letter, a digit or '-'.
[[gnu::always_inline]] inline unsigned name_byte_mask(__m128i v) noexcept {
  const __m128i letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z');
  const __m128i digit_or_dash = _mm_or_si128(in_range(v, '0', '9'), _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(letter, digit_or_dash)));
}
#endif

// How many bytes at the start of [p, p + n) are letters, digits or '-' -- nearly all of a field
// name -- counted 16 at a time while 16 remain (the caller goes on byte by byte, by the full
// token table). Fewer than the run's length only where fewer than 16 bytes were left.
[[gnu::always_inline]] inline std::size_t skip_name_bytes(const char* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    const unsigned other = ~name_byte_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))) & 0xffffu;
    if (other != 0) return i + static_cast<std::size_t>(__builtin_ctz(other));
  }
#else
  (void)p;
  (void)n;
#endif
  return i;
}

// Whether every byte of [p, p + n) is a letter, a digit or '-' (nearly every field name a program
// gives): 16 bytes a load, the last 16 overlapping; under 16, two overlapping loads in one register,
// as find_invalid_value_byte_short. False: some byte is another one (perhaps still a token byte).
inline bool only_name_bytes(const char* p, std::size_t n) noexcept {
#if defined(__SSE2__)
  auto all = [](__m128i v, unsigned lanes) { return (name_byte_mask(v) & lanes) == lanes; };
  if (n >= 16) {
    for (std::size_t i = 0; i + 16 <= n; i += 16) {
      if (!all(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), 0xffffu)) return false;
    }
    return all(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16)), 0xffffu);
  }
  if (n >= 8) {
    const __m128i head = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i tail = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + n - 8));
    return all(_mm_unpacklo_epi64(head, tail), 0xffffu);
  }
  if (n >= 4) {
    std::uint32_t head = 0, tail = 0;
    __builtin_memcpy(&head, p, 4);
    __builtin_memcpy(&tail, p + n - 4, 4);
    return all(_mm_set_epi32(0, 0, static_cast<int>(tail), static_cast<int>(head)), 0xffu);
  }
#endif
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    const auto lower = static_cast<unsigned char>(c | 0x20);
    if (!((lower >= 'a' && lower <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Whether [p, p + n) is letters, digits, '.' and '-' (a host name or an IPv4 address), perhaps then
// ':' and digits (a port): the Host value of nearly every request. False: it may still be valid, by
// the rest of the grammar. With SSE2, a value of up to 16 bytes is one load, without a loop: the 16
// bytes that end at p + n, which must not start before `readable` (else the bytes are read one by one).
[[gnu::always_inline]] inline bool is_plain_host_and_port(const char* p, std::size_t n, const char* readable) noexcept {
  std::size_t i = 0;  // the first byte not known to be a plain host byte
#if defined(__SSE2__)
  if (n == 0) return true;
  if (n <= 16) {
    if (static_cast<std::size_t>(p - readable) + n >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16));
      const unsigned lanes = (0xffffu << (16 - n)) & 0xffffu;  // those of [p, p + n)
      const unsigned not_plain = ~plain_host_byte_mask(v) & lanes;
      if (not_plain == 0) return true;
      const unsigned first = not_plain & (0u - not_plain);
      const unsigned after = lanes & ~(first | (first - 1));
      const auto colon = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(':'))));
      const auto digit = static_cast<unsigned>(_mm_movemask_epi8(in_range(v, '0', '9')));
      return (colon & first) != 0 && (after & ~digit) == 0;
    }
  } else {
    for (;; i += 16) {
      const std::size_t at = i + 16 <= n ? i : n - 16;  // the last load overlaps the one before
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
      const unsigned not_plain = ~plain_host_byte_mask(v) & 0xffffu;
      if (not_plain != 0) {
        i = at + static_cast<std::size_t>(__builtin_ctz(not_plain));
        break;
      }
      if (at + 16 == n) return true;
    }
  }
#else
  (void)readable;
#endif
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  for (; i < n; ++i) {
    const int lower = p[i] | 0x20;
    if (!((lower >= 'a' && lower <= 'z') || is_digit(p[i]) || p[i] == '.' || p[i] == '-')) break;
  }
  if (i == n) return true;
  if (p[i] != ':') return false;
  while (++i < n) {
    if (!is_digit(p[i])) return false;
  }
  return true;
}

}  // namespace weft::http::detail
