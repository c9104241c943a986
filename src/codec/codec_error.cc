#include "weft/codec/codec_error.h"

#include <fmt/format.h>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"
#include "weft/core/log.h"

namespace weft {

TooLongFrameError::TooLongFrameError(std::string limit_name, std::size_t limit, std::size_t length, bool at_least)
    : DecoderError(fmt::format("frame length {}{} exceeds {} ({}); frame discarded", at_least ? "over " : "",
                               at_least ? length - 1 : length, limit_name, limit)),
      limit_name_(std::move(limit_name)),
      limit_(limit),
      length_(length) {}

TruncatedFrameError::TruncatedFrameError(std::size_t discarded_bytes)
    : DecoderError(fmt::format("input ended inside a frame; {} buffered bytes discarded", discarded_bytes)),
      discarded_(discarded_bytes) {}

void close_on_io_error(Context& ctx, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError& e) {
    log(LogLevel::debug, "channel {}: {}", ctx.channel().id(), e.what());
    ctx.close();
  } catch (...) {
    ctx.fire_exception(std::current_exception());
  }
}

}  // namespace weft
