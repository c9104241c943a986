#pragma once
/// @file
/// HTTP/1.x vocabulary shared by the server and client codecs.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "weft/core/clock.h"

namespace weft::http {

/// The HTTP version of a message: HTTP/1.0, HTTP/1.1, or HTTP/2 (a request from http2::ServerCodec).
enum class Version : std::uint8_t { http10, http11, http2 };

/// One header field as parsed: views into the message's bytes.
struct Header {
  /// The field name, as received (case preserved).
  std::string_view name;
  /// The field value.
  std::string_view value;
};

/// The fixed-capacity header array of a parsed head. Left uninitialised on construction and copied
/// only up to `count` (InlineHeaders::copy_prefix), so that making, moving and copying a head costs
/// what its headers use, not the whole capacity (64 headers are 2 KiB).
template <std::size_t N>
class InlineHeaders {
 public:
  InlineHeaders() noexcept {}  // NOLINT: storage is deliberately left uninitialised
  InlineHeaders(const InlineHeaders&) = delete;
  InlineHeaders& operator=(const InlineHeaders&) = delete;

  /// The first of the N slots (only those a head counts are initialised).
  Header* data() noexcept { return reinterpret_cast<Header*>(storage_); }
  /// The first of the N slots (only those a head counts are initialised).
  const Header* data() const noexcept { return reinterpret_cast<const Header*>(storage_); }
  /// The capacity, N.
  static constexpr std::size_t size() noexcept { return N; }
  /// The i-th slot; requires i < N.
  Header& operator[](std::size_t i) noexcept { return data()[i]; }
  /// The i-th slot; requires i < N.
  const Header& operator[](std::size_t i) const noexcept { return data()[i]; }
  /// Copies the first `count` headers of `other`.
  void copy_prefix(const InlineHeaders& other, std::size_t count) noexcept {
    if (count > 0) std::memcpy(storage_, other.storage_, count * sizeof(Header));
  }

 private:
  static_assert(std::is_trivially_copyable_v<Header>);
  alignas(Header) unsigned char storage_[N * sizeof(Header)];
};

/// The body of one of the codecs' own error answers (400, 408, 413, 431, ...): see ErrorBodyFn.
struct ErrorBody {
  /// The Content-Type to send; empty: none. A value with CR, LF or NUL is not sent.
  std::string content_type;
  /// The body.
  std::string body;
};

/// Makes the body of a codec's own error answer for `status` (Limits::error_body for HTTP/1.1,
/// http2::Settings::error_body for HTTP/2). Called on the connection's loop, so it must be
/// thread-safe when the limits are shared by loops; a throw is logged and the answer goes without a body.
using ErrorBodyFn = std::function<ErrorBody(int status)>;

/// Limits of the request decoder (Netty's defaults for the line and the header section).
struct Limits {
  std::size_t max_request_line = 4096;     ///< longer: 414
  std::size_t max_header_section = 8192;   ///< longer: 431
  std::size_t max_headers = 64;            ///< more: 431 (at most RequestHead::kInlineHeaders)
  std::size_t max_body = 1024 * 1024;      ///< larger: 413
  std::size_t max_chunk_line = 256;        ///< chunk-size line (with extensions)
  /// A request must arrive whole (head and body) within this time of its first byte: else 408.
  Duration request_timeout = std::chrono::seconds(30);
  /// A keep-alive connection with nothing to do (no request started, no answer owed) is closed
  /// after this long (nginx's keepalive_timeout).
  Duration idle_timeout = std::chrono::seconds(75);
  /// A connection whose peer does not take the answers owed (writes stay blocked) is closed after
  /// this long without progress (nginx's send_timeout).
  Duration send_timeout = std::chrono::seconds(60);
  /// After the last answer (an error, Connection: close), the server sends FIN and reads what the
  /// client still sends for at most this long before it closes, so that unread input does not make
  /// the kernel reset the connection under the answer (nginx's lingering close).
  Duration linger_timeout = std::chrono::seconds(2);
  /// Reading pauses while more requests than this wait for their answers...
  std::size_t max_pipelined = 1024;
  /// ...or while more than this many bytes of answers wait to be sent (encoded or queued on the
  /// channel); it resumes below half of both, once the channel is writable again.
  std::size_t max_unsent_bytes = 1024 * 1024;
  /// The bodies of the codec's error answers (400, 408, 413, 414, 431, 501, 505, 417); empty (the
  /// default): they have none. The Router's own answers (404, 405, 500) are Router::error_page's.
  ErrorBodyFn error_body;
};

/// Reason phrase of a status code ("OK", "Not Found"...); "Unknown" for codes weft does not name.
std::string_view reason_phrase(int status) noexcept;

/// ASCII case-insensitive comparison, for header names and tokens. Inline: the parser compares
/// names with short literals on every request.
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;
    const auto lower = static_cast<unsigned char>(x | 0x20);
    if (lower != (y | 0x20) || lower < 'a' || lower > 'z') return false;
  }
  return true;
}

}  // namespace weft::http
