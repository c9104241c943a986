#include "weft/client/url.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>

namespace weft::client {
namespace {

std::string quoted(std::string_view url) {
  constexpr std::size_t kShown = 200;
  std::string out = "'";
  for (char c : url.substr(0, kShown)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;  // the message must not carry what the URL smuggled
  }
  if (url.size() > kShown) out += "...";
  return out + "'";
}

const char* part_name(UrlError::Part part) {
  switch (part) {
    case UrlError::Part::syntax: return "syntax";
    case UrlError::Part::scheme: return "scheme";
    case UrlError::Part::userinfo: return "userinfo";
    case UrlError::Part::host: return "host";
    case UrlError::Part::port: return "port";
    case UrlError::Part::path: return "path";
    case UrlError::Part::query: return "query";
    case UrlError::Part::fragment: return "fragment";
  }
  return "?";
}

constexpr bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The bytes a path, query or fragment may hold as they are (RFC 3986 3.3-3.5): pchar, that is
// unreserved, sub-delims, ':' and '@', then '/' and '?' (kPath: '/' only). '%' starts an escape.
enum : std::uint8_t { kPath = 1, kQuery = 2 };
constexpr std::array<std::uint8_t, 256> make_component_bytes() {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool pchar =
        is_alpha(ch) || is_digit(ch) || std::string_view("-._~!$&'()*+,;=:@").find(ch) != std::string_view::npos;
    if (pchar || ch == '/') t[c] |= kPath | kQuery;
    if (ch == '?') t[c] |= kQuery;
  }
  return t;
}
constexpr std::array<std::uint8_t, 256> kComponentBytes = make_component_bytes();

// Whether `text` holds only the bytes `kind` allows (kPath, or kQuery for queries and fragments)
// and well-formed %HH escapes.
bool valid_component(std::string_view text, std::uint8_t kind) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (kComponentBytes[static_cast<unsigned char>(c)] & kind) continue;
    if (c != '%' || i + 2 >= text.size() || !is_hex(text[i + 1]) || !is_hex(text[i + 2])) return false;
    i += 2;
  }
  return true;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; });
  return out;
}

}  // namespace

UrlError::UrlError(Part part, std::string_view url, std::string_view why)
    : Error("invalid URL " + quoted(url) + ": " + part_name(part) + ": " + std::string(why)), part_(part) {}

Url Url::parse(std::string_view text) {
  if (text.size() > kMaxLength) throw UrlError(UrlError::Part::syntax, text, "longer than 8192 bytes");
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) throw UrlError(UrlError::Part::syntax, text, "no scheme");
  Url url;
  const std::string scheme = lowercase(text.substr(0, colon));
  if (scheme == "http") {
    url.scheme_ = Scheme::http;
  } else if (scheme == "https") {
    url.scheme_ = Scheme::https;
  } else {
    throw UrlError(UrlError::Part::scheme, text, "only http and https are fetched");
  }
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") throw UrlError(UrlError::Part::syntax, text, "no '//' after the scheme");
  rest.remove_prefix(2);

  std::string_view fragment;
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    fragment = rest.substr(hash + 1);
    rest = rest.substr(0, hash);
  }
  if (!valid_component(fragment, kQuery)) throw UrlError(UrlError::Part::fragment, text, "a character not allowed");
  std::string_view query;
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    url.has_query_ = true;
  }
  if (!valid_component(query, kQuery)) throw UrlError(UrlError::Part::query, text, "a character not allowed");
  url.query_ = std::string(query);
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    const std::string_view path = rest.substr(slash);
    if (!valid_component(path, kPath)) throw UrlError(UrlError::Part::path, text, "a character not allowed");
    url.path_ = std::string(path);
  }

  if (authority.find('@') != std::string_view::npos) {
    throw UrlError(UrlError::Part::userinfo, text, "credentials in a URL are refused");
  }
  std::string_view host = authority;
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw UrlError(UrlError::Part::host, text, "'[' without ']'");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw UrlError(UrlError::Part::host, text, "characters after ']'");
      port = after.substr(1);
      has_port = true;
    }
    in6_addr address{};
    const std::string literal(host);
    if (host.empty() || host.find('%') != std::string_view::npos ||
        inet_pton(AF_INET6, literal.c_str(), &address) != 1) {
      throw UrlError(UrlError::Part::host, text, "not an IPv6 address (zone ids and IPvFuture are not taken)");
    }
    url.ipv6_ = true;
  } else if (const std::size_t c = authority.rfind(':'); c != std::string_view::npos) {
    host = authority.substr(0, c);
    port = authority.substr(c + 1);
    has_port = true;
  }
  if (host.empty()) throw UrlError(UrlError::Part::host, text, "empty");
  if (!url.ipv6_) {
    // A name or an IPv4 address: letters, digits, '-', '.', '_' (no escapes: a name a resolver takes).
    for (char c : host) {
      if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.' && c != '_') {
        throw UrlError(UrlError::Part::host, text, "a character a host name cannot hold");
      }
    }
  }
  url.host_ = lowercase(host);

  url.port_ = default_port(url.scheme_);
  if (has_port && !port.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || !is_digit(port.front()) || value == 0 ||
        value > 65535) {
      throw UrlError(UrlError::Part::port, text, "not a number in 1..65535");
    }
    url.port_ = static_cast<std::uint16_t>(value);
  }
  return url;
}

Url Url::resolve(std::string_view reference) const {
  if (reference.size() > kMaxLength) throw UrlError(UrlError::Part::syntax, reference, "longer than 8192 bytes");
  const std::size_t colon = reference.find(':');
  const std::size_t first_delimiter = reference.find_first_of("/?#");
  if (colon != std::string_view::npos && colon > 0 &&
      (first_delimiter == std::string_view::npos || colon < first_delimiter)) {
    return parse(reference);  // absolute: it has a scheme
  }
  if (reference.substr(0, 2) == "//") return parse(std::string(scheme_name()) + ":" + std::string(reference));
  std::string base = std::string(scheme_name()) + "://" + authority();
  if (reference.empty()) return parse(base + target());
  if (reference.front() == '/') return parse(base + std::string(reference));
  if (reference.front() == '?') return parse(base + path_ + std::string(reference));
  if (reference.front() == '#') return parse(base + target());
  // A relative path: merged with the base path's directory.
  return parse(base + path_.substr(0, path_.rfind('/') + 1) + std::string(reference));
}

Url Url::with_target(std::string_view target) const {
  if (target.size() > kMaxLength) throw UrlError(UrlError::Part::syntax, target, "longer than 8192 bytes");
  if (target.empty() || target.front() != '/')
    throw UrlError(UrlError::Part::syntax, target, "not an origin-form target");
  std::string_view path = target.substr(0, target.find('#'));
  std::string_view query;
  const std::size_t q = path.find('?');
  if (q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (!valid_component(path, kPath)) throw UrlError(UrlError::Part::path, target, "a character not allowed");
  if (!valid_component(query, kQuery)) throw UrlError(UrlError::Part::query, target, "a character not allowed");
  Url out = *this;
  out.path_.assign(path);
  out.query_.assign(query);
  out.has_query_ = q != std::string_view::npos;
  return out;
}

std::string Url::target() const { return has_query_ ? path_ + "?" + query_ : path_; }

std::string Url::authority() const {
  std::string out = ipv6_ ? "[" + host_ + "]" : host_;
  if (port_ != default_port(scheme_)) out += ":" + std::to_string(port_);
  return out;
}

std::string Url::to_string() const { return std::string(scheme_name()) + "://" + authority() + target(); }

}  // namespace weft::client
