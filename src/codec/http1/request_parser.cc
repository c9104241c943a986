#include "weft/codec/http1/request_parser.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "char_scan.h"
#include "field_section.h"

namespace weft::http {
namespace detail {
namespace {

// RFC 9110 token characters.
constexpr std::array<bool, 256> make_tchar() {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}
constexpr std::array<bool, 256> kTchar = make_tchar();

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool parse_decimal(std::string_view s, std::uint64_t& out) {
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

}  // namespace

bool is_tchar(char c) noexcept { return kTchar[static_cast<unsigned char>(c)]; }

bool all_tchar(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!kTchar[c]) return false;
  }
  return true;
}

ParseResult error(int status, std::string_view reason) noexcept { return {ParseResult::Kind::error, 0, status, reason}; }
ParseResult incomplete() noexcept { return {ParseResult::Kind::incomplete, 0, 0, {}}; }

ParseResult parse_field_section(std::string_view data, std::size_t pos, FieldSection& out, const Limits& limits) noexcept {
  const char* const p = data.data();
  const std::size_t n = data.size();
  const std::size_t section_start = pos;
  const std::size_t max_headers = std::min(limits.max_headers, out.capacity);
  // Bytes past `limit` would make the section too large.
  const std::size_t limit = std::min(n, section_start + limits.max_header_section + 2);
  // Out of bytes at `at`: the section is too large if the limit, not the data, stopped the scan.
  auto ran_out = [&](std::size_t at) {
    return at >= limit && limit < n ? error(431, "header section too large") : incomplete();
  };
  for (;;) {
    // One pass per line: the name through its table, the value with the SIMD scan, which stops at
    // the CR that ends the line (or at any other control byte, which is an error).
    if (pos >= limit) return ran_out(pos);
    if (p[pos] == '\r') {
      if (pos + 1 >= n) return incomplete();
      if (p[pos + 1] != '\n') return error(400, "bare CR in header section");
      return {ParseResult::Kind::complete, pos + 2, 0, {}};
    }
    if (p[pos] == ' ' || p[pos] == '\t') return error(400, "obsolete line folding");
    std::size_t i = pos;
    while (i < limit && kTchar[static_cast<unsigned char>(p[i])]) ++i;
    if (i >= limit) return ran_out(i);
    if (p[i] != ':' || i == pos) return error(400, "malformed header name");  // also "Name :" (smuggling)
    std::string_view name(p + pos, i - pos);
    std::size_t j = i + 1;
    while (j < limit && (p[j] == ' ' || p[j] == '\t')) ++j;
    const std::size_t k = j + find_invalid_value_byte(p + j, limit - j);
    if (k >= limit) return ran_out(k);
    if (p[k] != '\r') return error(400, p[k] == '\n' ? "header line does not end with CRLF" : "invalid character in header value");
    if (k + 1 >= n) return k + 1 >= limit && limit < n ? error(431, "header section too large") : incomplete();
    if (p[k + 1] != '\n') return error(400, "bare CR in header value");
    std::size_t value_end = k;
    while (value_end > j && (p[value_end - 1] == ' ' || p[value_end - 1] == '\t')) --value_end;
    std::string_view value(p + j, value_end - j);
    pos = k + 2;
    if (out.count == max_headers) return error(431, "too many header fields");
    out.headers[out.count++] = Header{name, value};

    // Semantics of the headers that frame the message.
    switch (name.size()) {
      case 4:
        if (iequals(name, "host")) ++out.host_count;
        break;
      case 6:
        if (iequals(name, "expect")) {
          if (!iequals(value, "100-continue")) return error(417, "unsupported expectation");
          out.expect_continue = true;
        }
        break;
      case 10:
        if (iequals(name, "connection")) {
          for_each_token(value, [&](std::string_view t) {
            if (iequals(t, "close")) out.connection_close = true;
            if (iequals(t, "keep-alive")) out.connection_keep_alive = true;
          });
        }
        break;
      case 14:
        if (iequals(name, "content-length")) {
          bool ok = !value.empty();
          // "5, 5" repeats one value: allowed; differing values are a smuggling attempt.
          for_each_token(value, [&](std::string_view t) {
            std::uint64_t v = 0;
            if (!parse_decimal(t, v) || (out.content_length && *out.content_length != v)) ok = false;
            out.content_length = v;
          });
          if (!ok) return error(400, "invalid or conflicting Content-Length");
        }
        break;
      case 17:
        if (iequals(name, "transfer-encoding")) {
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

}  // namespace detail

std::optional<std::string_view> RequestHead::header(std::string_view name) const noexcept {
  for (const Header& h : *this) {
    if (iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

ParseResult parse_request_head(std::string_view data, RequestHead& out, const Limits& limits) noexcept {
  using detail::error;
  const char* const start = data.data();
  std::size_t pos = 0;
  // Tolerate empty lines before the request line (RFC 9112 2.2).
  while (data.size() - pos >= 2 && data[pos] == '\r' && data[pos + 1] == '\n') pos += 2;
  if (pos > 64) return error(400, "too many empty lines before the request");

  // ---- request line: method SP target SP HTTP/1.x CRLF, each part found and checked in one pass
  const std::size_t n = data.size();
  const std::size_t limit = std::min(n, pos + limits.max_request_line + 2);
  auto ran_out = [&](std::size_t at) {
    return at >= limit && limit < n ? error(414, "request line too long") : detail::incomplete();
  };
  std::size_t i = pos;
  while (i < limit && detail::is_tchar(start[i])) ++i;
  if (i >= limit) return ran_out(i);
  if (start[i] != ' ' || i == pos) return error(400, "malformed request line");
  out.method = std::string_view(start + pos, i - pos);
  const std::size_t target_start = i + 1;
  const std::size_t target_end = target_start + detail::find_invalid_target_byte(start + target_start, limit - target_start);
  if (target_end >= limit) return ran_out(target_end);
  if (start[target_end] != ' ') return error(400, "invalid character in request target");
  if (target_end == target_start) return error(400, "empty request target");
  out.target = std::string_view(start + target_start, target_end - target_start);
  const std::size_t v = target_end + 1;
  if (v + 10 > n) {
    if (v + 10 > limit && limit < n) return error(414, "request line too long");
    return detail::incomplete();
  }
  const char* ver = start + v;
  if (std::memcmp(ver, "HTTP/1.", 7) == 0 && (ver[7] == '1' || ver[7] == '0') && ver[8] == '\r' && ver[9] == '\n') {
    out.version = ver[7] == '1' ? Version::http11 : Version::http10;
  } else if (std::memcmp(ver, "HTTP/", 5) == 0 && ver[5] >= '0' && ver[5] <= '9' && ver[6] == '.' && ver[7] >= '0' &&
             ver[7] <= '9' && ver[8] == '\r' && ver[9] == '\n') {
    return error(505, "unsupported HTTP version");
  } else {
    return error(400, "malformed HTTP version or request line");
  }
  if (v + 8 - pos > limits.max_request_line) return error(414, "request line too long");
  const std::size_t line_end = v + 9;  // the LF
  auto q = out.target.find('?');
  out.path = out.target.substr(0, q);
  out.query = q == std::string_view::npos ? std::string_view() : out.target.substr(q + 1);

  // ---- header section
  detail::FieldSection fields{};
  fields.headers = out.inline_headers.data();
  fields.capacity = out.inline_headers.size();
  ParseResult r = detail::parse_field_section(data, line_end + 1, fields, limits);
  out.header_count = fields.count;
  if (r.kind != ParseResult::Kind::complete) return r;
  if (fields.transfer_encoding && fields.content_length) {
    return error(400, "both Content-Length and Transfer-Encoding");  // request smuggling
  }
  if (fields.transfer_encoding && out.version == Version::http10) return error(400, "Transfer-Encoding in HTTP/1.0");
  if (fields.host_count > 1) return error(400, "more than one Host header");
  if (out.version == Version::http11 && fields.host_count == 0) return error(400, "missing Host header");
  out.content_length = fields.content_length;
  out.chunked = fields.chunked;
  out.expect_continue = fields.expect_continue;
  out.keep_alive = out.version == Version::http11 ? !fields.connection_close
                                                  : (fields.connection_keep_alive && !fields.connection_close);
  return r;
}

}  // namespace weft::http
