#pragma once
/// @file
/// Parses an HTTP/1.x request head (request line and header section) in place: every field is a view
/// into the bytes given, nothing is copied. The parser is stateless: when the head is incomplete it
/// reports so, and the caller parses again from the start once more bytes arrived (the head is bounded
/// by Limits, so this costs at most a few KiB of rescanning, and `scan_from` skips what was already
/// seen not to hold the end of the head).

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "weft/codec/http1/http_types.h"

namespace weft::http {

/// A parsed request head. Views point into the parsed bytes.
struct RequestHead {
  static constexpr std::size_t kInlineHeaders = 64;  ///< Limits::max_headers is capped at this

  std::string_view method;  ///< as sent ("GET")
  std::string_view target;  ///< as sent: origin-form (path and query), absolute-form, '*' or CONNECT's authority
  std::string_view path;    ///< of an absolute-form target too ("/" when it has none)
  std::string_view query;   ///< after '?', without it
  /// Host and port the request is for: an absolute-form target's authority, which takes the place of
  /// the Host header (RFC 9112 3.2.2), else the Host header's value (empty without one, in HTTP/1.0).
  std::string_view authority;
  Version version = Version::http11;  ///< HTTP/1.0 or HTTP/1.1
  std::size_t header_count = 0;       ///< header lines in inline_headers

  // Semantics derived from the headers.
  std::optional<std::uint64_t> content_length;  ///< Content-Length, when sent
  bool chunked = false;          ///< Transfer-Encoding: chunked
  bool keep_alive = true;        ///< the connection stays open after the answer (version and Connection)
  bool expect_continue = false;  ///< Expect: 100-continue
  /// `Connection: upgrade` in HTTP/1.1: the client asks to switch protocols (the Upgrade header
  /// says to which) and may send the new protocol's bytes right behind the request.
  bool upgrade = false;

  InlineHeaders<kInlineHeaders> inline_headers;  ///< last: only its first lines are used

  RequestHead() noexcept = default;
  /// Copies the head (the views still point into `other`'s bytes).
  RequestHead(const RequestHead& other) noexcept { *this = other; }
  /// Copies the head (the views still point into `other`'s bytes).
  RequestHead& operator=(const RequestHead& other) noexcept {
    if (this == &other) return *this;
    method = other.method;
    target = other.target;
    path = other.path;
    query = other.query;
    authority = other.authority;
    version = other.version;
    inline_headers.copy_prefix(other.inline_headers, other.header_count);
    header_count = other.header_count;
    content_length = other.content_length;
    chunked = other.chunked;
    keep_alive = other.keep_alive;
    expect_continue = other.expect_continue;
    upgrade = other.upgrade;
    return *this;
  }

  /// The first header with this name (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const noexcept;
  /// The first header line, for range-for over the headers.
  const Header* begin() const noexcept { return inline_headers.data(); }
  /// Past the last header line.
  const Header* end() const noexcept { return inline_headers.data() + header_count; }
};

/// Sixteen bytes, so that it comes back in two registers: a larger result is copied through memory
/// (with a `rep movs` that cost a fifth of a short request's parse).
struct ParseResult {
  /// A whole head was parsed, more bytes are needed, or the head is malformed or too large.
  enum class Kind : std::uint8_t { complete, incomplete, error };
  /// The outcome.
  Kind kind = Kind::incomplete;
  std::uint16_t status = 0;    ///< error: the HTTP status to answer with
  std::uint32_t consumed = 0;  ///< complete: bytes of the head, including the final CRLF CRLF
  const char* reason = "";     ///< error: what was wrong (static text), for logs
};
static_assert(sizeof(ParseResult) == 16);

/// Parses the head at the start of `data` (of which it reads at most 4 GiB, a ByteBuf's most). On an
/// error the caller answers `status` and closes.
ParseResult parse_request_head(std::string_view data, RequestHead& out, const Limits& limits) noexcept;

}  // namespace weft::http
