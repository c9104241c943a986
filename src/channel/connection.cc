#include "weft/channel/connection.h"

#include "weft/core/log.h"

namespace weft::detail {

void log_connection_failure(const Channel& channel, std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(LogLevel::warn, "channel {}: the connection coroutine failed: {}", channel.id(), e.what());
  } catch (...) {
    log(LogLevel::warn, "channel {}: the connection coroutine failed with a non-standard exception", channel.id());
  }
}

}  // namespace weft::detail
