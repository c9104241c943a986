#pragma once
// HTTP/1.x vocabulary shared by the server and client codecs.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/core/clock.h"

namespace weft::http {

enum class Version : std::uint8_t { http10, http11 };

struct Header {
  std::string_view name;
  std::string_view value;
};

// Limits of the request decoder (Netty's defaults for the line and the header section).
struct Limits {
  std::size_t max_request_line = 4096;     // longer: 414
  std::size_t max_header_section = 8192;   // longer: 431
  std::size_t max_headers = 64;            // more: 431 (at most RequestHead::kInlineHeaders)
  std::size_t max_body = 1024 * 1024;      // larger: 413
  std::size_t max_chunk_line = 256;        // chunk-size line (with extensions)
  Duration request_timeout = std::chrono::seconds(30);  // a started request must complete in time: 408
  std::size_t max_pipelined = 1024;        // requests read ahead of their responses before reading pauses
};

// Reason phrase of a status code ("OK", "Not Found"...); "Unknown" for codes weft does not name.
std::string_view reason_phrase(int status) noexcept;

// ASCII case-insensitive comparison, for header names and tokens.
bool iequals(std::string_view a, std::string_view b) noexcept;

}  // namespace weft::http
