#pragma once
// The "Date: ...\r\n" header line, formatted at most once per second per thread (each event loop
// is one thread), not per response.

#include <string_view>

namespace weft::http {

// Thread-safe (per-thread cache).
std::string_view date_header_line() noexcept;

}  // namespace weft::http
