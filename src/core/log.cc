#include "weft/core/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace weft {
namespace {

LogLevel level_from_env() noexcept {
  const char* v = std::getenv("WEFT_LOG");
  if (v == nullptr) return LogLevel::warn;
  std::string_view s(v);
  if (s == "trace") return LogLevel::trace;
  if (s == "debug") return LogLevel::debug;
  if (s == "info") return LogLevel::info;
  if (s == "error") return LogLevel::error;
  if (s == "off") return LogLevel::off;
  return LogLevel::warn;
}

std::atomic<LogLevel>& current_level() noexcept {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

const char* level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace: return "TRACE";
    case LogLevel::debug: return "DEBUG";
    case LogLevel::info: return "INFO";
    case LogLevel::warn: return "WARN";
    case LogLevel::error: return "ERROR";
    case LogLevel::off: break;
  }
  return "";
}

}  // namespace

LogLevel log_level() noexcept { return current_level().load(std::memory_order_relaxed); }

void set_log_level(LogLevel level) noexcept { current_level().store(level, std::memory_order_relaxed); }

void log_write(LogLevel level, std::string_view message) noexcept {
  try {
    std::string line = fmt::format("weft {}: {}\n", level_name(level), message);
    // One write(2) per line keeps lines from different threads whole.
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
  } catch (...) {
  }
}

}  // namespace weft
