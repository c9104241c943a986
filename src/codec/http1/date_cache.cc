#include "date_cache.h"

#include <ctime>

namespace weft::http {

DateLine current_date_line() noexcept {
  struct Cache {
    std::time_t second = -1;
    char line[64];
    std::size_t size = 0;
  };
  thread_local Cache cache;
  std::time_t now = std::time(nullptr);  // vDSO: no system call
  if (now != cache.second) {
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    cache.size = std::strftime(cache.line, sizeof cache.line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    cache.second = now;
  }
  return {{cache.line, cache.size}, now};
}

}  // namespace weft::http
