#pragma once
/// @file
/// client::Url: an http or https URL parsed by RFC 3986's rules, into what a request needs -- the
/// origin (scheme, host, port), the target (path and query) and the authority for Host/:authority.
///
///   weft::client::Url url = weft::client::Url::parse("https://[::1]:8443/a%20b?q=1");
///   url.host();        // "::1" (an IPv6 literal without its brackets)
///   url.authority();   // "[::1]:8443" (the port left out when it is the scheme's default)
///   url.target();      // "/a%20b?q=1"
///
/// What a client must not send is refused with UrlError naming the part: another scheme, userinfo
/// ("user:pass@host": credentials do not belong in URLs), a bad port, a malformed percent-encoding,
/// a control, space or non-ASCII byte anywhere. A fragment is dropped (it is never sent).

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/core/error.h"

namespace weft::client {

/// A URL that could not be parsed or is not one a client may fetch.
class UrlError : public Error {
 public:
  /// The part that was wrong.
  enum class Part : std::uint8_t {
    syntax,    ///< not "scheme://authority[path][?query][#fragment]", or longer than Url::kMaxLength
    scheme,    ///< a scheme other than http and https
    userinfo,  ///< "user@host": refused
    host,      ///< empty, a character a host name cannot hold, or a malformed IPv6 literal
    port,      ///< not digits, or outside 1..65535
    path,      ///< a character a path cannot hold, or a malformed percent-encoding
    query,     ///< a character a query cannot hold, or a malformed percent-encoding
    fragment,  ///< a character a fragment cannot hold
  };
  /// `part` names what was wrong in `url` (quoted, shortened, in the message).
  UrlError(Part part, std::string_view url, std::string_view why);
  /// The part that was wrong.
  Part part() const noexcept { return part_; }

 private:
  Part part_;
};

/// The two schemes a client fetches.
enum class Scheme : std::uint8_t {
  http,   ///< port 80 by default
  https,  ///< port 443 by default; TLS
};

/// A parsed http or https URL (see the file's description). A value type; thread-safe to read.
class Url {
 public:
  /// Longer URLs are refused (UrlError, Part::syntax).
  static constexpr std::size_t kMaxLength = 8192;

  /// Parses an absolute URL; throws UrlError.
  static Url parse(std::string_view text);
  /// The URL that `reference` (a redirect's Location: absolute, "//host/path", "/path" or a relative
  /// path) names from this one (RFC 3986 5.2, without dot-segment removal); throws UrlError.
  Url resolve(std::string_view reference) const;

  /// This URL's origin (scheme, host, port) with `target` -- origin-form, "/path[?query]" -- in
  /// place of its path and query: one parse for an origin that many requests go to (a proxy's
  /// backend). A fragment is dropped; throws UrlError (Part::syntax when `target` does not start
  /// with '/', Part::path or Part::query for a character those cannot hold).
  Url with_target(std::string_view target) const;

  /// http or https.
  Scheme scheme() const noexcept { return scheme_; }
  /// "http" or "https".
  std::string_view scheme_name() const noexcept { return scheme_ == Scheme::https ? "https" : "http"; }
  /// The host, lowercase; an IPv6 literal without its brackets.
  const std::string& host() const noexcept { return host_; }
  /// Whether host() is an IPv6 literal.
  bool host_is_ipv6() const noexcept { return ipv6_; }
  /// The port: the one given, else 80 (http) or 443 (https).
  std::uint16_t port() const noexcept { return port_; }
  /// The path, percent-encoded as given; "/" when the URL has none.
  const std::string& path() const noexcept { return path_; }
  /// The query without its '?', percent-encoded as given; empty when none.
  const std::string& query() const noexcept { return query_; }
  /// Whether the URL had a '?' (an empty query is still one).
  bool has_query() const noexcept { return has_query_; }
  /// The request target: path, and "?query" when there is one.
  std::string target() const;
  /// Host and port as Host and :authority carry them: "[::1]:8443", "example.com" (no default port).
  std::string authority() const;
  /// The URL written back: scheme://authority target.
  std::string to_string() const;

  /// Same scheme, host, port, path and query.
  friend bool operator==(const Url&, const Url&) = default;

 private:
  Url() = default;
  Scheme scheme_ = Scheme::http;
  bool ipv6_ = false;
  bool has_query_ = false;
  std::uint16_t port_ = 80;
  std::string host_;
  std::string path_ = "/";
  std::string query_;
};

/// The port a scheme uses when the URL names none.
constexpr std::uint16_t default_port(Scheme scheme) noexcept { return scheme == Scheme::https ? 443 : 80; }

}  // namespace weft::client
