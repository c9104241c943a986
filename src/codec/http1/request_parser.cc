#include "weft/codec/http1/request_parser.h"

#include <algorithm>
#include <array>
#include <cstring>

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

// Field values: VCHAR, SP, HTAB and obs-text; never CR, LF, NUL or other controls.
constexpr std::array<bool, 256> make_value_char() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c <= 0x7e; ++c) t[c] = true;
  for (int c = 0x80; c <= 0xff; ++c) t[c] = true;
  t['\t'] = true;
  return t;
}
constexpr std::array<bool, 256> kValueChar = make_value_char();

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
  const char* const start = data.data();
  const std::size_t section_start = pos;
  const std::size_t max_headers = std::min(limits.max_headers, out.capacity);
  for (;;) {
    const std::size_t used = pos - section_start;
    if (used > limits.max_header_section + 2) return error(431, "header section too large");
    const std::size_t window = std::min(data.size() - pos, limits.max_header_section + 2 - used);
    const char* lf = static_cast<const char*>(std::memchr(start + pos, '\n', window));
    if (lf == nullptr) {
      // No line end within the limit: either more bytes will come, or the section is too large.
      if (data.size() - section_start > limits.max_header_section + 2) return error(431, "header section too large");
      return incomplete();
    }
    const std::size_t line_end = static_cast<std::size_t>(lf - start);
    if (line_end == pos || start[line_end - 1] != '\r') return error(400, "header line does not end with CRLF");
    std::string_view line(start + pos, line_end - 1 - pos);
    pos = line_end + 1;
    if (line.empty()) return {ParseResult::Kind::complete, pos, 0, {}};
    if (line.front() == ' ' || line.front() == '\t') return error(400, "obsolete line folding");
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return error(400, "header line without ':'");
    std::string_view name = line.substr(0, colon);
    if (!all_tchar(name)) return error(400, "malformed header name");  // also rejects "Name :" (smuggling)
    std::string_view value = trim_ows(line.substr(colon + 1));
    for (unsigned char c : value) {
      if (!kValueChar[c]) return error(400, "invalid character in header value");
    }
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
            std::uint64_t v;
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

  // ---- request line
  const std::size_t line_window = std::min(data.size() - pos, limits.max_request_line + 2);
  const char* lf = static_cast<const char*>(std::memchr(start + pos, '\n', line_window));
  if (lf == nullptr) {
    if (data.size() - pos > limits.max_request_line + 1) return error(414, "request line too long");
    return detail::incomplete();
  }
  const std::size_t line_end = static_cast<std::size_t>(lf - start);
  if (line_end == pos || start[line_end - 1] != '\r') return error(400, "request line does not end with CRLF");
  std::string_view line(start + pos, line_end - 1 - pos);
  if (line.size() > limits.max_request_line) return error(414, "request line too long");

  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return error(400, "malformed request line");
  }
  out.method = line.substr(0, sp1);
  out.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!detail::all_tchar(out.method)) return error(400, "malformed method");
  if (out.target.empty()) return error(400, "empty request target");
  for (unsigned char c : out.target) {
    if (c <= 0x20 || c == 0x7f) return error(400, "invalid character in request target");
  }
  if (version == "HTTP/1.1") {
    out.version = Version::http11;
  } else if (version == "HTTP/1.0") {
    out.version = Version::http10;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[5] >= '0' && version[5] <= '9' &&
             version[6] == '.' && version[7] >= '0' && version[7] <= '9') {
    return error(505, "unsupported HTTP version");
  } else {
    return error(400, "malformed HTTP version");
  }
  auto q = out.target.find('?');
  out.path = out.target.substr(0, q);
  out.query = q == std::string_view::npos ? std::string_view() : out.target.substr(q + 1);

  // ---- header section
  detail::FieldSection fields{out.inline_headers.data(), out.inline_headers.size()};
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
