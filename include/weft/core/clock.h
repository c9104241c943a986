#pragma once

#include <chrono>

namespace weft {

/// Every deadline in weft is on the monotonic clock.
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;

}  // namespace weft
