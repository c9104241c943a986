#include "weft/codec/http1/request_parser.h"

#include <arpa/inet.h>

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
  if (only_name_bytes(s.data(), s.size())) return true;  // the usual name, without the table walk
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

namespace {

constexpr std::size_t npos = std::string_view::npos;

// RFC 3986 reg-name bytes, less the '%' of pct-encoded ones: unreserved and sub-delims.
constexpr std::array<bool, 256> kRegNameChar = make_alnum_class("-._~!$&'()*+,;=");

inline bool is_hex_digit(char c) noexcept { return hex_value(c) >= 0; }
inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) noexcept { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
// port = *DIGIT (RFC 3986 3.2.3)
inline bool is_port(std::string_view s) noexcept {
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// The inside of an RFC 3986 IP-literal: IPv6address / IPvFuture.
bool is_ip_literal(std::string_view s) noexcept {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) {
    // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
    std::size_t i = 1;
    while (i < s.size() && is_hex_digit(s[i])) ++i;
    if (i == 1 || i + 1 >= s.size() || s[i] != '.') return false;
    return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i) + 1, s.end(),
                       [](char c) { return kRegNameChar[static_cast<unsigned char>(c)] || c == ':'; });
  }
  char address[INET6_ADDRSTRLEN];
  if (s.size() >= sizeof address) return false;
  std::memcpy(address, s.data(), s.size());
  address[s.size()] = '\0';
  in6_addr parsed;
  return inet_pton(AF_INET6, address, &parsed) == 1;
}

// uri-host [ ":" port ] (RFC 3986 3.2.2 and 3.2.3): a Host header's value (RFC 9110 7.2), and an http
// URI's authority, whose userinfo RFC 9110 4.2.4 forbids. IPv4address needs no case of its own: its
// bytes are reg-name bytes.
bool is_valid_host_and_port(std::string_view s, bool host_required) noexcept {
  const char* p = s.data();
  const char* const end = p + s.size();
  if (p != end && *p == '[') {
    const auto* close = static_cast<const char*>(std::memchr(p, ']', s.size()));
    if (close == nullptr) return false;
    if (!is_ip_literal(std::string_view(p + 1, static_cast<std::size_t>(close - p - 1)))) return false;
    p = close + 1;
  } else {
    while (p != end) {
      if (kRegNameChar[static_cast<unsigned char>(*p)]) {
        ++p;
      } else if (*p == '%' && end - p >= 3 && is_hex_digit(p[1]) && is_hex_digit(p[2])) {
        p += 3;
      } else {
        break;
      }
    }
    if (host_required && p == s.data()) return false;
  }
  return p == end || (*p == ':' && is_port(std::string_view(p + 1, static_cast<std::size_t>(end - p - 1))));
}

// is_valid_host_and_port(host, false) for a Host header, without a call for the common values.
// `data` holds the value.
[[gnu::always_inline]] inline bool is_valid_host_header(std::string_view host, std::string_view data) noexcept {
  return is_plain_host_and_port(host.data(), host.size(), data.data()) ||
         is_valid_host_and_port(host, /*host_required=*/false);  // the rest of the grammar, and errors
}

// An origin-form target's path and query, split at its first '?' (`question`, npos if none).
[[gnu::always_inline]] inline void split_path_and_query(std::string_view target, std::size_t question,
                                                        RequestHead& out) noexcept {
  if (question == npos) {
    out.path = target;
    out.query = {};
  } else {
    out.path = std::string_view(target.data(), question);
    out.query = std::string_view(target.data() + question + 1, target.size() - question - 1);
  }
}

struct OtherTargetForm {
  const char* error = nullptr;  // why the target is in none of the forms (400), or nullptr
  std::string_view authority = {};  // absolute-form's, which replaces the Host header's
};

// A target that does not start with '/' (RFC 9112 3.2): asterisk-form and CONNECT's authority-form
// are split like origin-form, as they always were; absolute-form gives its URI's path ("/" if empty)
// and query, and its authority, for the schemes a server answers: http and https.
[[gnu::noinline]] OtherTargetForm parse_other_target_form(std::string_view method, std::string_view target,
                                                          std::size_t question, RequestHead& out) noexcept {
  if (target == "*" || method == "CONNECT") {
    split_path_and_query(target, question, out);
    return {};
  }
  // absolute-URI = scheme ":" hier-part [ "?" query ], scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
  const std::size_t colon = target.find(':');
  const std::string_view scheme = target.substr(0, colon);
  const bool is_scheme = colon != npos && !scheme.empty() && is_alpha(scheme[0]) &&
                         std::all_of(scheme.begin(), scheme.end(), [](char c) {
                           return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
                         });
  if (!is_scheme) return {"malformed request target"};
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return {"unsupported URI scheme in the request target"};
  // http-URI = "http" "://" authority path-abempty [ "?" query ] (RFC 9110 4.2.1)
  if (target.substr(colon + 1, 2) != "//") return {"http URI without an authority"};
  const std::size_t authority_start = colon + 3;
  const std::size_t path_start = std::min(target.find_first_of("/?", authority_start), target.size());
  const std::string_view authority = target.substr(authority_start, path_start - authority_start);
  if (!is_valid_host_and_port(authority, /*host_required=*/true)) return {"invalid authority in the request target"};
  split_path_and_query(target.substr(path_start), question == npos ? npos : question - path_start, out);
  if (out.path.empty()) out.path = "/";
  return {nullptr, authority};
}

}  // namespace
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
  } else if (std::memcmp(ver, "HTTP/", 5) == 0 && detail::is_digit(ver[5]) && ver[6] == '.' &&
             detail::is_digit(ver[7]) && ver[8] == '\r' && ver[9] == '\n') {
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
  std::string_view target_authority;  // an absolute-form target's
  if (target[0] == '/') [[likely]] {
    detail::split_path_and_query(target, scan.question, out);
  } else {
    const detail::OtherTargetForm form = detail::parse_other_target_form(out.method, target, scan.question, out);
    if (form.error != nullptr) return error(400, form.error);
    target_authority = form.authority;
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
  if (fields.host_count != 1) [[unlikely]] {
    if (fields.host_count > 1) return error(400, "more than one Host header");
    if (out.version == Version::http11) return error(400, "missing Host header");
  }
  // Checked even where the target's authority replaces it: RFC 9112 3.2 asks a 400 of any request with
  // an invalid Host.
  if (!detail::is_valid_host_header(fields.host, data)) return error(400, "invalid Host header");
  out.authority = target_authority.data() != nullptr ? target_authority : fields.host;
  out.content_length = fields.declared_length();
  out.chunked = fields.chunked;
  out.expect_continue = fields.expect_continue;
  out.keep_alive = fields.keeps_alive(out.version);
  out.upgrade = fields.connection_upgrade && out.version == Version::http11;
  return r;
}

}  // namespace weft::http
