#pragma once
// The header section parser shared by the request and response parsers.

#include <cstddef>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "weft/codec/http1/request_parser.h"
#include "char_scan.h"

namespace weft::http::detail {

struct FieldSection {
  static constexpr bool kIsHeaderSection = true;  // stores the fields and interprets those that frame the message

  // Member by member, not `FieldSection{}`: g++ clears an aggregate with a `rep stos`, slow to start,
  // and this is set up once per request.
  FieldSection(Header* storage, std::uint32_t storage_capacity) noexcept : headers(storage), capacity(storage_capacity) {}

  std::optional<std::uint64_t> declared_length() const noexcept {
    return has_content_length ? std::optional(content_length) : std::nullopt;
  }
  // RFC 9112 9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
  bool keeps_alive(Version version) const noexcept {
    return version == Version::http11 ? !connection_close : connection_keep_alive && !connection_close;
  }

  Header* headers = nullptr;
  std::uint32_t capacity = 0;
  std::uint32_t count = 0;
  std::uint64_t content_length = 0;  // when has_content_length
  std::string_view host;             // the first Host header's value
  // The flags side by side: set up with one store.
  bool has_content_length = false;
  bool chunked = false;
  bool transfer_encoding = false;
  std::uint8_t host_count = 0;  // saturates at 2: more than one is all that matters
  bool connection_close = false;
  bool connection_keep_alive = false;
  bool connection_upgrade = false;
  bool expect_continue = false;
};

// A trailer section (RFC 9112 7.1.2): its lines follow the header fields' grammar, and are counted
// against the same limits, but are dropped, and none of them frames the message.
struct TrailerSection {
  static constexpr bool kIsHeaderSection = false;
  static constexpr std::uint32_t capacity = UINT32_MAX;
  std::uint32_t count = 0;
};

// Parses header lines from `pos` up to and including the empty line. complete: `consumed` is the
// offset just past the section. Errors carry 400, 431 or 501 (request smuggling included).
ParseResult parse_field_section(std::string_view data, std::size_t pos, FieldSection& out, const Limits& limits) noexcept;

ParseResult error(int status, const char* reason) noexcept;
ParseResult incomplete() noexcept;
bool all_tchar(std::string_view s) noexcept;

// The letters, the digits and `punctuation`.
constexpr std::array<bool, 256> make_alnum_class(std::string_view punctuation) {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : punctuation) t[static_cast<unsigned char>(c)] = true;
  return t;
}
// RFC 9110 token characters.
inline constexpr std::array<bool, 256> kTchar = make_alnum_class("!#$%&'*+-.^_`|~");
inline bool is_tchar(char c) noexcept { return kTchar[static_cast<unsigned char>(c)]; }

// The value of a hex digit, or -1.
inline int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  const int lower = c | 0x20;
  return lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : -1;
}

inline std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

inline bool parse_decimal(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

// Calls fn(token) for each element of a comma-separated header value.
template <class F>
void for_each_token(std::string_view value, F fn) {
  while (!value.empty()) {
    auto comma = value.find(',');
    fn(trim_ows(value.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

inline std::uint64_t load8(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t load4(const char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// `name` (a token: validated tchar bytes) equals `lower` (a lowercase literal of letters, digits
// and '-') ignoring case. Word at a time: for tchar bytes, OR-ing 0x20 maps exactly the upper-case
// letters onto lower case (the only other bytes it could map onto a literal's are controls).
template <std::size_t N>
[[gnu::always_inline]] inline bool equals_lowercase_token(std::string_view name, const char (&lower)[N]) noexcept {
  constexpr std::size_t n = N - 1;
  static_assert(n >= 4, "for literals of at least four bytes");
  if (name.size() != n) return false;
  const char* p = name.data();
  if constexpr (n < 8) {
    return (load4(p) | 0x20202020u) == load4(lower) && (load4(p + n - 4) | 0x20202020u) == load4(lower + n - 4);
  } else {
    constexpr std::uint64_t kCase = 0x2020202020202020ull;
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
      if ((load8(p + i) | kCase) != load8(lower + i)) return false;
    }
    return (load8(p + n - 8) | kCase) == load8(lower + n - 8);
  }
}

// The body of parse_field_section, inlined into the request parser (a call and a returned
// ParseResult per head are a tenth of a short request's cost). `Section`: FieldSection or TrailerSection.
template <class Section>
[[gnu::always_inline]] inline ParseResult parse_field_section_inline(std::string_view data, std::size_t pos,
                                                                    Section& out, const Limits& limits) noexcept {
  constexpr bool kHeaders = Section::kIsHeaderSection;
  const char* const p = data.data();
  const std::size_t n = data.size();
  const std::size_t section_start = pos;
  const std::size_t max_headers = std::min<std::size_t>(limits.max_headers, out.capacity);
  // Bytes past `limit` would make the section too large.
  const std::size_t limit = std::min(n, section_start + limits.max_header_section + 2);
  // Out of bytes at `at`: the section is too large if the limit, not the data, stopped the scan.
  auto ran_out = [&](std::size_t at) {
    return at >= limit && limit < n ? error(431, kHeaders ? "header section too large" : "trailer section too large")
                                    : incomplete();
  };
  for (;;) {
    // One pass per line: the name through its table, the value with the SIMD scan, which stops at
    // the CR that ends the line (or at any other control byte, which is an error).
    if (pos >= limit) return ran_out(pos);
    if (p[pos] == '\r') {
      if (pos + 1 >= n) return incomplete();
      if (p[pos + 1] != '\n') return error(400, "bare CR in field section");
      return {ParseResult::Kind::complete, 0, static_cast<std::uint32_t>(pos + 2), ""};
    }
    if (p[pos] == ' ' || p[pos] == '\t') [[unlikely]]
      return error(400, "obsolete line folding");
    std::size_t i = pos;
    // "Host:", in every HTTP/1.1 request, needs no scan of its name (for letters, OR-ing 0x20 maps
    // exactly the upper-case one onto the lower-case one).
    const bool is_host = kHeaders && limit - pos > 4 && (load4(p + pos) | 0x20202020u) == load4("host") && p[pos + 4] == ':';
    if (is_host) {
      i = pos + 4;
    } else {
      i += skip_name_bytes(p + i, limit - i);
      if (i >= limit || p[i] != ':') {  // a rarer token byte, fewer than 16 bytes left, or no name
        while (i < limit && kTchar[static_cast<unsigned char>(p[i])]) ++i;
        if (i >= limit) return ran_out(i);
        if (p[i] != ':') return error(400, "malformed field name");  // also "Name :" (smuggling)
      }
      if (i == pos) return error(400, "malformed field name");
    }
    std::string_view name(p + pos, i - pos);
    std::size_t j = i + 1;
    if (j < limit && p[j] == ' ') ++j;  // the usual single space
    while (j < limit && (p[j] == ' ' || p[j] == '\t')) ++j;
    const std::size_t k = j + find_invalid_value_byte(p + j, limit - j);
    if (k >= limit) return ran_out(k);
    if (p[k] != '\r') return error(400, p[k] == '\n' ? "field line does not end with CRLF" : "invalid character in field value");
    if (k + 1 >= n) return ran_out(k + 1);
    if (p[k + 1] != '\n') return error(400, "bare CR in field value");
    pos = k + 2;
    if (out.count == max_headers) return error(431, kHeaders ? "too many header fields" : "too many trailer fields");
    if constexpr (!kHeaders) {
      ++out.count;  // dropped
    } else {
      std::size_t value_end = k;
      // The value's bytes are checked: of those, only SP and HTAB are at most ' '.
      while (value_end > j && static_cast<unsigned char>(p[value_end - 1]) <= ' ') --value_end;
      std::string_view value(p + j, value_end - j);
      out.headers[out.count++] = Header{name, value};

      // Semantics of the headers that frame the message.
      switch (name.size()) {
        case 4:
          if ((is_host || equals_lowercase_token(name, "host")) && out.host_count < 2) {
            if (out.host_count++ == 0) out.host = value;
          }
          break;
        case 6:
          if (equals_lowercase_token(name, "expect")) {
            if (!iequals(value, "100-continue")) return error(417, "unsupported expectation");
            out.expect_continue = true;
          }
          break;
        case 10:
          if (equals_lowercase_token(name, "connection")) {
            for_each_token(value, [&](std::string_view t) {
              if (iequals(t, "close")) out.connection_close = true;
              if (iequals(t, "keep-alive")) out.connection_keep_alive = true;
              if (iequals(t, "upgrade")) out.connection_upgrade = true;
            });
          }
          break;
        case 14:
          if (equals_lowercase_token(name, "content-length")) {
            // The usual value, plain digits and the first Content-Length: no list to walk.
            std::uint64_t v = 0;
            if (!out.has_content_length && parse_decimal(value, v)) {
              out.content_length = v;
              out.has_content_length = true;
              break;
            }
            bool ok = !value.empty();
            // "5, 5" repeats one value: allowed; differing values are a smuggling attempt.
            for_each_token(value, [&](std::string_view t) {
              std::uint64_t v = 0;
              if (!parse_decimal(t, v) || (out.has_content_length && out.content_length != v)) ok = false;
              out.content_length = v;
              out.has_content_length = true;
            });
            if (!ok) return error(400, "invalid or conflicting Content-Length");
          }
          break;
        case 17:
          if (equals_lowercase_token(name, "transfer-encoding")) {
            bool unsupported = false;
            int codings = 0;
            for_each_token(value, [&](std::string_view t) {
              ++codings;
              if (!iequals(t, "chunked")) unsupported = true;
            });
            if (codings == 0) return error(400, "empty Transfer-Encoding");
            if (unsupported) return error(501, "unsupported transfer coding");
            if (codings > 1 || out.chunked) return error(400, "chunked applied more than once");
            out.transfer_encoding = true;
            out.chunked = true;
          }
          break;
        default:
          break;
      }
    }
  }
}

}  // namespace weft::http::detail
