#include "weft/codec/http1/request_parser.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "char_scan.h"
#include "field_section.h"

namespace weft::http {
namespace detail {

bool all_tchar(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!kTchar[c]) return false;
  }
  return true;
}

ParseResult error(int status, const char* reason) noexcept {
  return {ParseResult::Kind::error, static_cast<std::uint16_t>(status), 0, reason};
}
ParseResult incomplete() noexcept { return {}; }

ParseResult parse_field_section(std::string_view data, std::size_t pos, FieldSection& out, const Limits& limits) noexcept {
  return parse_field_section_inline(data, pos, out, limits);
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
  data = data.substr(0, std::numeric_limits<std::uint32_t>::max());  // so that `consumed` fits
  const char* const start = data.data();
  const std::size_t n = data.size();
  std::size_t pos = 0;
  if (n >= 2 && start[0] == '\r') {
    // Tolerate empty lines before the request line (RFC 9112 2.2).
    while (n - pos >= 2 && start[pos] == '\r' && start[pos + 1] == '\n') pos += 2;
    if (pos > 64) return error(400, "too many empty lines before the request");
  }

  // ---- request line: method SP target SP HTTP/1.x CRLF, each part found and checked in one pass
  const std::size_t limit = std::min(n, pos + limits.max_request_line + 2);
  auto ran_out = [&](std::size_t at) {
    return at >= limit && limit < n ? error(414, "request line too long") : detail::incomplete();
  };
  std::size_t i = pos;
  if (limit - pos >= 4 && std::memcmp(start + pos, "GET ", 4) == 0) {
    i = pos + 3;  // the common method, without the token scan
  } else {
    while (i < limit && detail::is_tchar(start[i])) ++i;
    if (i >= limit) return ran_out(i);
    if (start[i] != ' ' || i == pos) return error(400, "malformed request line");
  }
  out.method = std::string_view(start + pos, i - pos);
  const std::size_t target_start = i + 1;
  const detail::TargetScan scan = detail::scan_target(start + target_start, limit - target_start);
  const std::size_t target_end = target_start + scan.end;
  if (target_end >= limit) return ran_out(target_end);
  if (start[target_end] != ' ') return error(400, "invalid character in request target");
  if (target_end == target_start) return error(400, "empty request target");
  const std::string_view target(start + target_start, scan.end);
  out.target = target;
  const std::size_t v = target_end + 1;
  if (v + 10 > n) {
    if (v + 10 > limit && limit < n) return error(414, "request line too long");
    return detail::incomplete();
  }
  const char* ver = start + v;
  if (detail::load8(ver) == detail::load8("HTTP/1.1") && ver[8] == '\r' && ver[9] == '\n') {
    out.version = Version::http11;
  } else if (std::memcmp(ver, "HTTP/", 5) == 0 && ver[5] >= '0' && ver[5] <= '9' && ver[6] == '.' && ver[7] >= '0' &&
             ver[7] <= '9' && ver[8] == '\r' && ver[9] == '\n') {
    if (ver[5] != '1') return error(505, "unsupported HTTP version");
    // A higher minor version of HTTP/1 is served as HTTP/1.1 (RFC 9110 6.2, RFC 9112 2.3).
    out.version = ver[7] == '0' ? Version::http10 : Version::http11;
  } else {
    return error(400, "malformed HTTP version or request line");
  }
  if (v + 8 - pos > limits.max_request_line) return error(414, "request line too long");
  const std::size_t line_end = v + 9;  // the LF
  // From the local `target`, not out.target: reading back the two halves just stored is a
  // store-forwarding stall (a tenth of a short request's parse under perf).
  if (scan.question == static_cast<std::size_t>(-1)) {
    out.path = target;
    out.query = {};
  } else {
    out.path = std::string_view(target.data(), scan.question);
    out.query = std::string_view(target.data() + scan.question + 1, scan.end - scan.question - 1);
  }

  // ---- header section
  detail::FieldSection fields(out.inline_headers.data(), static_cast<std::uint32_t>(out.inline_headers.size()));
  ParseResult r = detail::parse_field_section_inline(data, line_end + 1, fields, limits);
  out.header_count = fields.count;
  if (r.kind != ParseResult::Kind::complete) return r;
  if (fields.transfer_encoding && fields.has_content_length) {
    return error(400, "both Content-Length and Transfer-Encoding");  // request smuggling
  }
  if (fields.transfer_encoding && out.version == Version::http10) return error(400, "Transfer-Encoding in HTTP/1.0");
  if (fields.host_count > 1) return error(400, "more than one Host header");
  if (out.version == Version::http11 && fields.host_count == 0) return error(400, "missing Host header");
  out.content_length = fields.declared_length();
  out.chunked = fields.chunked;
  out.expect_continue = fields.expect_continue;
  out.keep_alive = fields.keeps_alive(out.version);
  return r;
}

}  // namespace weft::http
