// RFC 6455 5.3 masking: the payload XORed with a 4-byte key, 64 bytes a turn in two AVX2 or four
// SSE2 registers. A 16 KiB message took ~8,300 instructions eight bytes at a time, most of a large
// message's user time on a server (which unmasks every frame it reads); 1,800 so.
#include <immintrin.h>

#include <bit>
#include <cstring>

#include "weft/codec/websocket/frame.h"

namespace weft::ws {
namespace {

// XORs the whole 64-byte blocks of `src` with the key word repeated into `dst` (the same bytes, or
// bytes not overlapping them); returns the bytes done.
std::size_t mask_blocks_sse2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n,
                             std::uint32_t word_key) noexcept {
  const __m128i k = _mm_set1_epi32(static_cast<int>(word_key));
  std::size_t i = 0;
  for (; n - i >= 64; i += 64) {
    const auto* from = reinterpret_cast<const __m128i*>(src + i);
    auto* to = reinterpret_cast<__m128i*>(dst + i);
    const __m128i a = _mm_xor_si128(_mm_loadu_si128(from), k);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128(from + 1), k);
    const __m128i c = _mm_xor_si128(_mm_loadu_si128(from + 2), k);
    const __m128i d = _mm_xor_si128(_mm_loadu_si128(from + 3), k);
    _mm_storeu_si128(to, a);
    _mm_storeu_si128(to + 1, b);
    _mm_storeu_si128(to + 2, c);
    _mm_storeu_si128(to + 3, d);
  }
  return i;
}

__attribute__((target("avx2"))) std::size_t mask_blocks_avx2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n,
                                                             std::uint32_t word_key) noexcept {
  const __m256i k = _mm256_set1_epi32(static_cast<int>(word_key));
  std::size_t i = 0;
  for (; n - i >= 64; i += 64) {
    const auto* from = reinterpret_cast<const __m256i*>(src + i);
    auto* to = reinterpret_cast<__m256i*>(dst + i);
    const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(from), k);
    const __m256i b = _mm256_xor_si256(_mm256_loadu_si256(from + 1), k);
    _mm256_storeu_si256(to, a);
    _mm256_storeu_si256(to + 1, b);
  }
  return i;
}

bool cpu_has_avx2() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// AVX2 is asked about once, and only for a message with a whole block.
bool use_avx2(std::size_t n) noexcept {
  if (n < 64) return false;
  static const bool avx2 = cpu_has_avx2();
  return avx2;
}

[[gnu::always_inline]] inline void mask(std::uint8_t* dst, const std::uint8_t* src, std::size_t n,
                                        const std::uint8_t key[4], std::uint64_t offset, bool avx2) noexcept {
  // The key turned to start `offset` bytes into its cycle (little-endian: byte i of the data takes
  // byte i & 3 of the word).
  std::uint32_t word_key;
  std::memcpy(&word_key, key, 4);
  word_key = std::rotr(word_key, static_cast<int>(8 * (offset & 3)));
  std::size_t i = 0;
  if (n >= 64) i = avx2 ? mask_blocks_avx2(dst, src, n, word_key) : mask_blocks_sse2(dst, src, n, word_key);
  const std::uint64_t word_key8 = (static_cast<std::uint64_t>(word_key) << 32) | word_key;
  for (; n - i >= 8; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, src + i, 8);
    word ^= word_key8;
    std::memcpy(dst + i, &word, 8);
  }
  for (; i < n; ++i) dst[i] = src[i] ^ static_cast<std::uint8_t>(word_key >> (8 * (i & 3)));
}

}  // namespace

void apply_mask(std::uint8_t* data, std::size_t n, const std::uint8_t key[4], std::uint64_t offset) noexcept {
  mask(data, data, n, key, offset, use_avx2(n));
}

void copy_masked(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, const std::uint8_t key[4]) noexcept {
  mask(dst, src, n, key, 0, use_avx2(n));
}

void detail::apply_mask_sse2(std::uint8_t* data, std::size_t n, const std::uint8_t key[4],
                             std::uint64_t offset) noexcept {
  mask(data, data, n, key, offset, false);
}

void detail::copy_masked_sse2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n,
                              const std::uint8_t key[4]) noexcept {
  mask(dst, src, n, key, 0, false);
}

}  // namespace weft::ws
