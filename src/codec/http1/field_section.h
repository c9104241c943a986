#pragma once
// The header section parser shared by the request and response parsers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "weft/codec/http1/request_parser.h"

namespace weft::http::detail {

struct FieldSection {
  Header* headers = nullptr;
  std::size_t capacity = 0;
  std::size_t count = 0;
  std::optional<std::uint64_t> content_length;
  bool chunked = false;
  bool transfer_encoding = false;
  int host_count = 0;
  bool connection_close = false;
  bool connection_keep_alive = false;
  bool expect_continue = false;
};

// Parses header lines from `pos` up to and including the empty line. complete: `consumed` is the
// offset just past the section. Errors carry 400, 431 or 501 (request smuggling included).
ParseResult parse_field_section(std::string_view data, std::size_t pos, FieldSection& out, const Limits& limits) noexcept;

ParseResult error(int status, std::string_view reason) noexcept;
ParseResult incomplete() noexcept;
bool all_tchar(std::string_view s) noexcept;
bool is_tchar(char c) noexcept;

}  // namespace weft::http::detail
