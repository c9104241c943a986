#include "weft/handler/logging_handler.h"

#include <fmt/format.h>

#include "weft/channel/channel.h"
#include "weft/channel/context.h"

namespace weft {
namespace {

std::string describe_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return type_name(typeid(e)) + ": " + e.what();
  } catch (...) {
    return "non-standard exception";
  }
}

}  // namespace

std::string pretty_hex_dump(const ByteBuf& buf, std::size_t max_bytes) {
  const std::size_t n = std::min(buf.readable_bytes(), max_bytes);
  const std::uint8_t* p = buf.read_ptr();
  std::string out;
  out.reserve((n / 16 + 2) * 80);
  for (std::size_t row = 0; row < n; row += 16) {
    fmt::format_to(std::back_inserter(out), "{:08x}  ", row);
    for (std::size_t i = 0; i < 16; ++i) {
      if (row + i < n) {
        fmt::format_to(std::back_inserter(out), "{:02x} ", p[row + i]);
      } else {
        out += "   ";
      }
      if (i == 7) out += ' ';
    }
    out += " |";
    for (std::size_t i = 0; i < 16 && row + i < n; ++i) {
      const std::uint8_t c = p[row + i];
      out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
    }
    out += "|\n";
  }
  if (n < buf.readable_bytes()) fmt::format_to(std::back_inserter(out), "... {} more bytes\n", buf.readable_bytes() - n);
  return out;
}

LoggingHandler::LoggingHandler(std::string name, LogLevel level, std::size_t max_dump_bytes)
    : name_(std::move(name)), level_(level), max_dump_bytes_(max_dump_bytes) {}

void LoggingHandler::emit(Context& ctx, std::string_view event, std::string_view detail) const {
  if (detail.empty()) {
    log(level_, "[{}] channel {} {}", name_, ctx.channel().id(), event);
  } else {
    log(level_, "[{}] channel {} {}: {}", name_, ctx.channel().id(), event, detail);
  }
}

std::string LoggingHandler::describe(MessageRef message) const {
  if (message.is<ByteBuf>()) {
    const ByteBuf& buf = message.as<ByteBuf>();
    return fmt::format("ByteBuf {} bytes\n{}", buf.readable_bytes(), pretty_hex_dump(buf, max_dump_bytes_));
  }
  if (message.is<std::string>()) {
    const std::string& s = message.as<std::string>();
    return fmt::format("std::string {} bytes: \"{}\"", s.size(), s.substr(0, max_dump_bytes_));
  }
  return type_name(message.type());
}

void LoggingHandler::handler_added(Context& ctx) {
  if (enabled()) emit(ctx, "HANDLER_ADDED");
}
void LoggingHandler::handler_removed(Context& ctx) {
  if (enabled()) emit(ctx, "HANDLER_REMOVED");
}
void LoggingHandler::channel_active(Context& ctx) {
  if (enabled()) {
    emit(ctx, "ACTIVE", ctx.channel().local_address().to_string() + " <-> " + ctx.channel().remote_address().to_string());
  }
  ctx.fire_channel_active();
}
void LoggingHandler::channel_inactive(Context& ctx) {
  if (enabled()) emit(ctx, "INACTIVE");
  ctx.fire_channel_inactive();
}
void LoggingHandler::channel_read_complete(Context& ctx) {
  if (enabled()) emit(ctx, "READ_COMPLETE");
  ctx.fire_read_complete();
}
void LoggingHandler::user_event(Context& ctx, const std::any& event) {
  if (enabled()) emit(ctx, "USER_EVENT", type_name(event.type()));
  ctx.fire_user_event(event);
}
void LoggingHandler::writability_changed(Context& ctx) {
  if (enabled()) emit(ctx, "WRITABILITY_CHANGED", ctx.channel().is_writable() ? "writable" : "not writable");
  ctx.fire_writability_changed();
}
void LoggingHandler::exception_caught(Context& ctx, std::exception_ptr error) {
  if (enabled()) emit(ctx, "EXCEPTION", describe_error(error));
  ctx.fire_exception(std::move(error));
}
void LoggingHandler::bind(Context& ctx, const SocketAddress& local, Promise<void> promise) {
  if (enabled()) emit(ctx, "BIND", local.to_string());
  ctx.bind(local, std::move(promise));
}
void LoggingHandler::connect(Context& ctx, const SocketAddress& remote, Promise<void> promise) {
  if (enabled()) emit(ctx, "CONNECT", remote.to_string());
  ctx.connect(remote, std::move(promise));
}
void LoggingHandler::flush(Context& ctx) {
  if (enabled()) emit(ctx, "FLUSH");
  ctx.flush();
}
void LoggingHandler::read(Context& ctx) {
  if (enabled()) emit(ctx, "READ_REQUEST");
  ctx.read();
}
void LoggingHandler::close(Context& ctx, Promise<void> promise) {
  if (enabled()) emit(ctx, "CLOSE");
  ctx.close(std::move(promise));
}
void LoggingHandler::read_message(Context& ctx, MessageRef message) {
  if (enabled()) emit(ctx, "READ", describe(message));
  ctx.fire_read_erased(message);
}
void LoggingHandler::write_message(Context& ctx, MessageRef message) {
  if (enabled()) emit(ctx, "WRITE", describe(message));
  ctx.write_erased(message);
}

}  // namespace weft
