#include "weft/grpc/timeout.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace weft::grpc {

std::optional<Duration> parse_timeout(std::string_view value) noexcept {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  std::int64_t amount = 0;
  for (const char ch : value.substr(0, value.size() - 1)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    amount = amount * 10 + (ch - '0');
  }
  using namespace std::chrono;
  switch (value.back()) {
    // (8 digits of hours overflow nanoseconds: clamped to about 228 years.)
    case 'H': return duration_cast<Duration>(hours(std::min<std::int64_t>(amount, 2'000'000)));
    case 'M': return duration_cast<Duration>(minutes(amount));
    case 'S': return duration_cast<Duration>(seconds(amount));
    case 'm': return duration_cast<Duration>(milliseconds(amount));
    case 'u': return duration_cast<Duration>(microseconds(amount));
    case 'n': return duration_cast<Duration>(nanoseconds(amount));
    default: return std::nullopt;
  }
}

}  // namespace weft::grpc
