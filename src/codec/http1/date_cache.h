#pragma once
// The "Date: ...\r\n" header line, formatted at most once per second per thread (each event loop
// is one thread), not per response.

#include <ctime>
#include <string_view>

namespace weft::http {

struct DateLine {
  std::string_view line;  // "Date: ...\r\n", valid on this thread until the second changes
  std::time_t second;     // the second it shows
};

// Thread-safe (per-thread cache).
DateLine current_date_line() noexcept;
inline std::string_view date_header_line() noexcept { return current_date_line().line; }

}  // namespace weft::http
