#pragma once
// The header list of an HTTP/2 response, made from an http::HttpResponse: ":status", the lines of
// its HeaderBlock and its own headers with lowercase names (HTTP/2 requires them) and without the
// connection-specific fields HTTP/2 forbids, then date and content-length.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frame.h"
#include "weft/codec/http1/http_message.h"
#include "weft/codec/http2/stream_channel.h"

namespace weft::http2::detail {

// A header list (HeaderField entries) for Session::submit_response / submit_headers. The entries point
// into the list's own storage and into the response's header text: valid until the next build() or
// until the response changes. The session encodes them when it is given them. Reused: after the first
// responses, building one allocates nothing. The fields of the last shared HeaderBlock are kept
// parsed (a copy of its text, its names lowercased): a response with the same block reuses them.
class ResponseHeaders {
 public:
  // `content_length`: the content-length field to add (none for 1xx, 204, 304).
  void build(const http::HttpResponse& response, std::optional<std::size_t> content_length);
  // Trailer fields: names lowercased, without the connection-specific ones (no date).
  void build_fields(const Fields& fields);
  const HeaderField* data() const noexcept { return nv_.data(); }
  std::size_t size() const noexcept { return nv_.size(); }

 private:
  void add(std::string_view name, std::string_view value);
  void cache_shared(std::string_view block);

  std::vector<HeaderField> nv_;
  std::string text_;   // lowercased names and formatted values; sized before use, never moved
  std::size_t used_ = 0;
  std::string shared_text_;             // the last shared HeaderBlock's text (a copy)
  std::string shared_names_;            // its names lowercased
  std::vector<HeaderField> shared_nv_;  // its fields, pointing into the two above
};

// Whether `name` (any case) is a connection-specific field that HTTP/2 forbids (RFC 9113 8.2.2).
bool is_connection_specific(std::string_view name) noexcept;

}  // namespace weft::http2::detail
