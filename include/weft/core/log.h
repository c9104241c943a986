#pragma once
/// @file
/// Minimal leveled logging to stderr. The level comes from the WEFT_LOG environment variable
/// (trace, debug, info, warn, error, off; default warn) and can be set with set_log_level().

#include <fmt/format.h>

#include <string_view>

namespace weft {

/// Severity of a log line, lowest first; `off` as a threshold silences everything.
enum class LogLevel { trace = 0, debug, info, warn, error, off };

/// Thread-safe.
LogLevel log_level() noexcept;
/// Thread-safe.
void set_log_level(LogLevel level) noexcept;
/// Thread-safe. Writes one line atomically.
void log_write(LogLevel level, std::string_view message) noexcept;

/// Thread-safe.
template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level < log_level()) return;
  log_write(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace weft
